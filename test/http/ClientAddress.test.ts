/**
 * IP allow-lists: addresses and CIDR ranges of both families, IPv4-mapped
 * IPv6 peers matched as IPv4, and entries that are not addresses refused.
 * The address per-address limits count: none for a request a proxy nobody
 * listed forwarded, the forwarded client behind a trusted proxy, the peer
 * otherwise.
 */
import { strictEqual } from "node:assert/strict"
import {
  FORWARDING_HEADERS,
  isAllowed,
  isAllowListEntry,
  limitAddressOf,
  openRequestAddressOf,
  rememberClientAddress,
  trustProxies
} from "../../src/http/ClientAddress.ts"

Deno.test("allow-list: addresses and ranges of both families", () => {
  const list = ["203.0.113.7", "10.0.0.0/8", "2001:db8::/32"]
  strictEqual(isAllowed(list, "203.0.113.7"), true)
  strictEqual(isAllowed(list, "203.0.113.8"), false)
  strictEqual(isAllowed(list, "10.255.1.2"), true)
  strictEqual(isAllowed(list, "::ffff:10.1.2.3"), true, "an IPv4-mapped peer is its IPv4 address")
  strictEqual(isAllowed(list, "2001:db8:1::5"), true)
  strictEqual(isAllowed(list, "2001:db9::1"), false)
  strictEqual(isAllowed(list, undefined), false, "no known address is not allowed")
  strictEqual(isAllowed(list, "not-an-ip"), false)
  strictEqual(isAllowed(["::ffff:192.0.2.0/120"], "192.0.2.9"), true)
})

Deno.test("allow-list: what an entry may be", () => {
  for (const entry of ["127.0.0.1", "0.0.0.0/0", "::1", "fe80::/10"]) strictEqual(isAllowListEntry(entry), true, entry)
  for (const entry of ["300.1.1.1", "10.0.0.0/33", "example.com", "", "1.2.3.4/", "a".repeat(100)]) {
    strictEqual(isAllowListEntry(entry), false, entry)
  }
})

const fromPeer = (peer: string, headers: Record<string, string> = {}, trusted: ReadonlyArray<string> = []) =>
  trustProxies(
    rememberClientAddress(new Request("http://gateway.test/", { headers }), {
      remoteAddr: { transport: "tcp", hostname: peer, port: 40000 }
    }),
    trusted
  )

Deno.test("limit address: a proxy nobody listed is nobody's address; a trusted proxy names the caller", () => {
  strictEqual(limitAddressOf(fromPeer("127.0.0.1")), "127.0.0.1")
  for (const header of FORWARDING_HEADERS) {
    strictEqual(limitAddressOf(fromPeer("127.0.0.1", { [header]: "198.51.100.1" })), undefined, header)
  }
  strictEqual(limitAddressOf(fromPeer("127.0.0.1", { "x-forwarded-for": "" })), undefined, "present, though empty")
  strictEqual(
    limitAddressOf(fromPeer("127.0.0.1", { "x-forwarded-for": "198.51.100.1" }, ["127.0.0.1"])),
    "198.51.100.1"
  )
  // With trusted proxies listed, a forwarded request from another peer is that peer's own.
  strictEqual(
    limitAddressOf(fromPeer("203.0.113.9", { "x-forwarded-for": "198.51.100.1" }, ["127.0.0.1"])),
    "203.0.113.9"
  )
  strictEqual(limitAddressOf(new Request("http://gateway.test/")), undefined, "not through the server")
})

Deno.test("open-request address: a forwarding header lets no public peer escape the bound", () => {
  const forwarded = { "x-forwarded-for": "198.51.100.1" }
  strictEqual(openRequestAddressOf(fromPeer("8.8.8.8")), "8.8.8.8")
  strictEqual(openRequestAddressOf(fromPeer("8.8.8.8", forwarded)), "8.8.8.8", "a public peer is counted")
  strictEqual(openRequestAddressOf(fromPeer("2a00:1450::1", forwarded)), "2a00:1450::1")
  for (const proxy of ["127.0.0.1", "10.1.2.3", "192.168.0.5", "::1", "fd00::7"]) {
    strictEqual(openRequestAddressOf(fromPeer(proxy, forwarded)), undefined, `a proxy on ${proxy} is nobody's address`)
  }
  strictEqual(openRequestAddressOf(fromPeer("127.0.0.1", forwarded, ["127.0.0.1"])), "198.51.100.1")
  strictEqual(openRequestAddressOf(new Request("http://gateway.test/")), undefined, "not through the server")
})
