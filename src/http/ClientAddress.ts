/**
 * The caller's network address and the IP allow-lists of keys. The server
 * (`Deno.serve`) knows the peer address of each connection but the web
 * handler sees only the `Request`, so the server records the address against
 * the request object (`rememberClientAddress`) and the routes read it back
 * (`clientAddressOf`). The web handler also records the trusted proxies
 * (`settings.trusted_proxies`, addresses or CIDRs) against the request
 * (`trustProxies`): when the peer is one of them, its `X-Forwarded-For`
 * (read from the right, skipping trusted hops), `X-Forwarded-Proto` and
 * `X-Forwarded-Host` are believed; otherwise they are ignored and the peer
 * address, the request's own scheme and its `Host` are used.
 *
 * A request that carries a forwarding header (`FORWARDING_HEADERS`, present at
 * all, even empty) no trusted proxy vouches for came through a proxy the
 * gateway was not told of: it is never a loopback caller (`isUntrustedForward`),
 * and while no trusted proxies are configured its peer address (the proxy's,
 * shared by every caller behind it) is not what per-address limits count
 * (`limitAddressOf`), so one caller cannot use up everyone's.
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
const proxies = new WeakMap<Request, ReadonlyArray<string>>()

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
 * Records the trusted proxies (addresses or CIDR ranges) for `request` and
 * returns the request; none (the default) trusts no forwarded header.
 *
 * @category http
 */
export const trustProxies = (request: Request, trusted: ReadonlyArray<string>): Request => {
  if (trusted.length > 0) proxies.set(request, trusted)
  return request
}

const sourceOf = (request: HttpServerRequest.HttpServerRequest): Request | undefined =>
  request.source instanceof Request ? request.source : undefined

/** Whether `request` came from a trusted proxy (its forwarded headers are believed). */
const viaTrustedProxy = (source: Request | undefined): boolean => {
  if (source === undefined) return false
  const trusted = proxies.get(source)
  return trusted !== undefined && isAllowed(trusted, addresses.get(source))
}

/**
 * The headers by which a proxy names the client whose request it forwards:
 * the standard `Forwarded`, the de-facto `X-Forwarded-For` and `X-Real-IP`,
 * and the client-address headers of CDNs and load balancers
 * (`True-Client-IP`, `CF-Connecting-IP`, `X-Client-IP`). Lower-case, as
 * `Headers` and Effect's header records hold them. Every request is checked
 * for them (about 1 µs for the six), so the list holds what proxies send, not
 * every header one might.
 *
 * @category http
 */
export const FORWARDING_HEADERS: ReadonlyArray<string> = [
  "forwarded",
  "x-forwarded-for",
  "x-real-ip",
  "true-client-ip",
  "cf-connecting-ip",
  "x-client-ip"
]

/** Whether `headers` (a `Headers`, or Effect's header record) hold one of `FORWARDING_HEADERS`, even empty. */
const hasForwardingHeader = (headers: Headers | Readonly<Record<string, string | undefined>>): boolean => {
  if (headers instanceof Headers) return FORWARDING_HEADERS.some((name) => headers.has(name))
  return FORWARDING_HEADERS.some((name) => headers[name] !== undefined)
}

const firstValue = (value: string | null): string | undefined => {
  const first = value?.split(",")[0]?.trim()
  return first === undefined || first === "" ? undefined : first
}

/**
 * The caller's address: the peer address recorded for `request`, or, when
 * the peer is a trusted proxy, the rightmost `X-Forwarded-For` hop that is
 * not itself a trusted proxy; `undefined` for a request that did not come
 * through the server (an in-process test call).
 *
 * @category http
 */
export const clientAddressOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const source = sourceOf(request)
  return source === undefined ? undefined : addressOfSource(source)
}

/** `clientAddressOf` for the web request itself. */
const addressOfSource = (source: Request): string | undefined => {
  const peer = addresses.get(source)
  if (!viaTrustedProxy(source)) return peer
  const trusted = proxies.get(source)!
  const hops = (source.headers.get("x-forwarded-for") ?? "").split(",").map((hop) => hop.trim()).filter((hop) =>
    hop !== ""
  )
  let address = peer
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = hops[index]!
    if (hop.length > 64 || !ipaddr.isValid(hop)) return address
    address = hop
    if (!isAllowed(trusted, hop)) return hop
  }
  return address
}

/**
 * The scheme the caller used: `https` when the request URL is, or when a
 * trusted proxy's `X-Forwarded-Proto` says so; else `http`.
 *
 * @category http
 */
export const schemeOf = (request: HttpServerRequest.HttpServerRequest): "http" | "https" => {
  const source = sourceOf(request)
  if (viaTrustedProxy(source)) {
    const forwarded = firstValue(source!.headers.get("x-forwarded-proto"))
    if (forwarded !== undefined) return forwarded === "https" ? "https" : "http"
  }
  return (source?.url ?? request.url).startsWith("https:") ? "https" : "http"
}

/**
 * The host the caller addressed: a trusted proxy's `X-Forwarded-Host`, else
 * the `Host` header; `undefined` when neither is there.
 *
 * @category http
 */
export const hostOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const source = sourceOf(request)
  if (viaTrustedProxy(source)) {
    const forwarded = firstValue(source!.headers.get("x-forwarded-host"))
    if (forwarded !== undefined) return forwarded
  }
  return firstValue(request.headers["host"] ?? null)
}

/**
 * Whether `request` carries a forwarding header (`FORWARDING_HEADERS`, even an
 * empty one) that no trusted proxy vouches for: it came through a proxy the
 * gateway was not told of, so its peer address (the proxy's, often loopback)
 * says nothing about the caller.
 *
 * @category http
 */
export const isUntrustedForward = (request: HttpServerRequest.HttpServerRequest): boolean =>
  hasForwardingHeader(request.headers) && !viaTrustedProxy(sourceOf(request))

/**
 * The address per-address limits (the login limit, open requests per address)
 * count `request` against: the caller's (`clientAddressOf`), or `undefined`
 * (not counted per address) when it carries a forwarding header while no
 * trusted proxies are configured: its peer is then a proxy the gateway was not
 * told of, whose address every caller behind it shares, so counting it would
 * let one caller's failures lock everyone out. Also `undefined` for a request
 * that did not come through the server. With trusted proxies configured, a
 * forwarded request from another peer is counted against that peer.
 *
 * @category http
 */
export const limitAddressOf = (request: HttpServerRequest.HttpServerRequest | Request): string | undefined => {
  const source = request instanceof Request ? request : sourceOf(request)
  if (source === undefined) return undefined
  if (!proxies.has(source) && hasForwardingHeader(request.headers)) return undefined
  return addressOfSource(source)
}

/**
 * The address the open-request bound counts `request` under: the caller's as
 * per-address limits see it (`limitAddressOf`); and, for a request forwarded
 * by a proxy nobody listed, its peer when that peer is a public unicast
 * address. A reverse proxy nobody listed stands on loopback or a private
 * network almost always, so its forwarded requests are not counted (its
 * address is everyone's); a peer on a public address that adds a forwarding
 * header to its requests is a caller reaching the gateway directly, and the
 * header must not let it escape the bound. `undefined`: nothing to count.
 *
 * @category limits
 */
export const openRequestAddressOf = (request: Request): string | undefined => {
  const limited = limitAddressOf(request)
  if (limited !== undefined) return limited
  const peer = addresses.get(request)
  if (peer === undefined || !ipaddr.isValid(peer)) return undefined
  return ipaddr.process(peer).range() === "unicast" ? peer : undefined
}

/**
 * The key a per-address counter keeps `address` under: IPv4 as is, IPv6 by its
 * /64 (one host holds a whole /64), an IPv4-mapped IPv6 address as its IPv4
 * address, anything else (no address known) as `unknown`.
 *
 * @category addresses
 */
export const addressKey = (address: string | undefined): string => {
  if (address === undefined || !ipaddr.isValid(address)) return "unknown"
  const parsed = ipaddr.process(address)
  if (parsed.kind() === "ipv4") return parsed.toString()
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4)
  return `${parts.map((part) => part.toString(16)).join(":")}::/64`
}

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

/**
 * The gateway's base address as the caller reaches it, for the URLs the
 * gateway answers with (video and image content): the configured public URL
 * (`settings.public_url`, for a gateway behind a proxy), else the scheme and
 * host a trusted proxy forwarded (`hostOf`, `schemeOf`), else the request's
 * own origin; `""` when none is known. No trailing `/`.
 *
 * @category addresses
 */
export const gatewayOriginOf = (
  request: HttpServerRequest.HttpServerRequest,
  publicUrl: string | undefined
): string => {
  if (publicUrl !== undefined) return publicUrl
  const host = hostOf(request)
  if (host !== undefined && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host)) return `${schemeOf(request)}://${host}`
  try {
    return request.source instanceof Request ? new URL(request.source.url).origin : ""
  } catch {
    return ""
  }
}
