/**
 * Signed, expiring URLs (`src/domain/SignedUrl.ts`): a signature opens its own
 * resource until its expiry and nothing else; expiries are rounded up to the
 * hour.
 */
import { strictEqual } from "node:assert/strict"
import { checkSignedQuery, expiryOf, signedQuery } from "../../src/domain/SignedUrl.ts"

const KEY = new TextEncoder().encode("sk-test-signing-key-0000000000001")
const OTHER_KEY = new TextEncoder().encode("sk-test-signing-key-0000000000002")
const NOW = 1_764_000_000_000

Deno.test("expiryOf: at least the time to live from now, rounded up to the next whole hour", () => {
  // NOW + 1 day falls on a whole hour: kept; a second later, the next hour.
  strictEqual(expiryOf(NOW, 86_400), 1_764_086_400)
  strictEqual(expiryOf(NOW + 999, 86_400), 1_764_086_400)
  strictEqual(expiryOf(NOW + 1000, 86_400), 1_764_090_000)
  strictEqual(expiryOf(NOW + 3_599_000, 86_400), 1_764_090_000)
})

Deno.test("checkSignedQuery: valid for its resource until it expires; tampering of any part is invalid", () => {
  const expires = expiryOf(NOW, 86_400)
  const params = (query: string) => new URLSearchParams(query)
  const query = signedQuery(KEY, "mj-image/mj_1", expires)
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_1", params(query), NOW), "valid")
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_1", params(query), expires * 1000), "expired")
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_2", params(query), NOW), "invalid")
  strictEqual(checkSignedQuery(OTHER_KEY, "mj-image/mj_1", params(query), NOW), "invalid")
  const signature = params(query).get("signature")!
  strictEqual(
    checkSignedQuery(KEY, "mj-image/mj_1", params(`expires=${expires + 1}&signature=${signature}`), NOW),
    "invalid"
  )
  strictEqual(
    checkSignedQuery(KEY, "mj-image/mj_1", params(`expires=${expires}&signature=${signature}x`), NOW),
    "invalid"
  )
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_1", params(`signature=${signature}`), NOW), "invalid")
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_1", params(`expires=${expires}`), NOW), "invalid")
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_1", params(`expires=-1&signature=${signature}`), NOW), "invalid")
  strictEqual(checkSignedQuery(KEY, "mj-image/mj_1", params("token=abc"), NOW), "absent")
})
