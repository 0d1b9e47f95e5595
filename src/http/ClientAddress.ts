/**
 * The caller's network address and the IP allow-lists of keys. The server
 * (`Deno.serve`) knows the peer address of each connection but the web
 * handler sees only the `Request`, so the server records the address against
 * the request object (`rememberClientAddress`) and the routes read it back
 * (`clientAddressOf`). It is the peer address: behind a reverse proxy it is
 * the proxy's, and an allow-list must name that.
 *
 * An allow-list entry is an IPv4 or IPv6 address or CIDR range
 * (`203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`); an IPv4-mapped IPv6 peer
 * (`::ffff:10.1.2.3`) is matched as its IPv4 address.
 *
 * @since 0.1.0
 */
import ipaddr from "ipaddr.js"
import type { HttpServerRequest } from "effect/http"

const addresses = new WeakMap<Request, string>()

/**
 * Records the peer address of `request` (`Deno.serve`'s `info.remoteAddr`)
 * and returns the request.
 *
 * @category http
 */
export const rememberClientAddress = (request: Request, info: { readonly remoteAddr: Deno.Addr }): Request => {
  if (info.remoteAddr.transport === "tcp" || info.remoteAddr.transport === "udp") {
    addresses.set(request, info.remoteAddr.hostname)
  }
  return request
}

/**
 * The peer address recorded for `request`, or `undefined` (a request that did
 * not come through the server, such as an in-process test call).
 *
 * @category http
 */
export const clientAddressOf = (request: HttpServerRequest.HttpServerRequest): string | undefined =>
  request.source instanceof Request ? addresses.get(request.source) : undefined

const parse = (entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined => {
  try {
    if (entry.includes("/")) return ipaddr.parseCIDR(entry)
    const address = ipaddr.parse(entry)
    return [address, address.kind() === "ipv4" ? 32 : 128]
  } catch {
    return undefined
  }
}

/**
 * Whether `entry` is an address or CIDR range an allow-list may hold.
 *
 * @category allow-lists
 */
export const isAllowListEntry = (entry: string): boolean => entry.length <= 64 && parse(entry) !== undefined

/**
 * Whether `address` is inside one of the `entries`; an address that cannot be
 * read (or none) is not.
 *
 * @category allow-lists
 */
export const isAllowed = (entries: ReadonlyArray<string>, address: string | undefined): boolean => {
  if (address === undefined || !ipaddr.isValid(address)) return false
  const peer = ipaddr.process(address)
  return entries.some((entry) => {
    const range = parse(entry)
    if (range === undefined) return false
    const [base, bits] = range
    const normalized = base.kind() === "ipv6" && (base as ipaddr.IPv6).isIPv4MappedAddress()
      ? [(base as ipaddr.IPv6).toIPv4Address(), Math.max(0, bits - 96)] as const
      : [base, bits] as const
    return peer.kind() === normalized[0].kind() && peer.match(normalized[0], normalized[1])
  })
}

/**
 * Whether `address` is a loopback address (`127.0.0.0/8`, `::1`, or an
 * IPv4-mapped `::ffff:127.…`); `undefined` (no peer known) is not.
 *
 * @category addresses
 */
export const isLoopback = (address: string | undefined): boolean =>
  address !== undefined &&
  (address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.") || address === "localhost")
