/**
 * A new webhook endpoint decided over plain values: the URL, the events (the
 * operator's for admins only), `balance_below` with `balance.low`, and what
 * is stored of it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import {
  endpointOf,
  type EndpointRefusal,
  isEndpointRefusal,
  type NewEndpoint,
  newSecret
} from "../../../src/accounts/webhooks/EndpointRules.ts"

const USER = { id: 1n, admin: false }
const ADMIN = { id: 2n, admin: true }

const refusal = (input: NewEndpoint, caller = USER): EndpointRefusal | undefined => {
  const outcome = endpointOf(caller, input)
  return isEndpointRefusal(outcome) ? outcome : undefined
}

Deno.test("EndpointRules: the URL must be an absolute http or https URL", () => {
  deepStrictEqual(refusal({ url: "/relative", events: [] }), {
    _tag: "invalid",
    message: "url: must be an absolute http or https URL.",
    param: "url"
  })
  strictEqual(refusal({ url: "ftp://example.com/hook", events: [] })?.message, "url: must be an http or https URL.")
  strictEqual(refusal({ url: "https://example.com/hook", events: [] }), undefined)
})

Deno.test("EndpointRules: an unknown event is refused by its index", () => {
  const found = refusal({ url: "https://example.com", events: ["key.expiring", "nope"] })
  strictEqual(found?._tag, "invalid")
  ok(found?._tag === "invalid" && found.param === "events[1]")
})

Deno.test("EndpointRules: the operator's events need an admin, who gets an operator endpoint", () => {
  const input = { url: "https://example.com", events: ["channel.unhealthy"] }
  strictEqual(refusal(input)?._tag, "forbidden")
  const fields = endpointOf(ADMIN, input)
  ok(!isEndpointRefusal(fields) && fields.operator)
  const own = endpointOf(ADMIN, { url: "https://example.com", events: ["key.expiring"] })
  ok(!isEndpointRefusal(own) && !own.operator)
})

Deno.test("EndpointRules: balance.low needs balance_below", () => {
  const found = refusal({ url: "https://example.com", events: ["balance.low"] })
  ok(found?._tag === "invalid" && found.param === "balance_below")
})

Deno.test("EndpointRules: the stored endpoint is normalized: URL, events once, thresholds sorted, balance in units", () => {
  const fields = endpointOf(USER, {
    url: "HTTPS://Example.com",
    events: ["balance.low", "balance.low", "key.expiring"],
    thresholds: [1, 0.25, 0.25],
    balance_below: 1.5
  })
  deepStrictEqual(fields, {
    url: "https://example.com/",
    operator: false,
    events: ["balance.low", "key.expiring"],
    thresholds: ["0.2500", "1.0000"],
    balanceBelow: "1500000"
  })
  const defaults = endpointOf(USER, { url: "https://example.com", events: [] })
  ok(!isEndpointRefusal(defaults))
  deepStrictEqual(defaults.thresholds, ["0.5000", "0.8000", "1.0000"])
  strictEqual(defaults.balanceBelow, null)
})

Deno.test("EndpointRules: a secret is whsec_ and 24 bytes of base64, a new one each time", () => {
  const secret = newSecret()
  ok(/^whsec_[A-Za-z0-9+/]{32}$/.test(secret), secret)
  ok(secret !== newSecret())
})
