/**
 * Signed, expiring URLs: a URL the gateway hands out so that whoever holds it
 * may read one resource without a key until a time (a Midjourney task's
 * image in an `<img>` tag), and that nobody can make for another resource or
 * stretch past its time. The URL carries two query parameters:
 *
 * - `expires`: the end of its validity, epoch seconds;
 * - `signature`: HMAC-SHA256 (RFC 2104) under the gateway's signing key of
 *   `"<resource>\n<expires>"`, base64url without padding (43 characters);
 *   `resource` names what the URL opens (`mj-image/<task id>`), so a
 *   signature for one resource opens no other.
 *
 * The expiry is rounded up to the next whole hour (`EXPIRY_STEP_SECONDS`), so
 * every URL made for a resource within one hour is the same URL (a browser's
 * cache keeps one copy) and stays valid between `ttl` and `ttl` + 1 h.
 * Signatures are compared in constant time.
 *
 * @since 0.1.0
 */
import { Buffer } from "node:buffer"
import { createHmac, timingSafeEqual } from "node:crypto"

/** The step expiries are rounded up to, in seconds (one hour). @category constants */
export const EXPIRY_STEP_SECONDS = 3600

/** How a signed URL's query judges: what `checkSignedQuery` answers. @category models */
export type SignedQueryVerdict = "valid" | "expired" | "invalid" | "absent"

/** The base64url HMAC-SHA256 of `resource` and `expires` under `key`. */
const signatureOf = (key: Uint8Array, resource: string, expires: number): string =>
  createHmac("sha256", key).update(`${resource}\n${expires}`, "utf8").digest("base64url")

/**
 * The expiry of a URL made at `nowMillis` (epoch milliseconds) to last at
 * least `ttlSeconds`: epoch seconds, rounded up to the next whole hour.
 *
 * @category signing
 */
export const expiryOf = (nowMillis: number, ttlSeconds: number): number =>
  Math.ceil((Math.floor(nowMillis / 1000) + ttlSeconds) / EXPIRY_STEP_SECONDS) * EXPIRY_STEP_SECONDS

/**
 * The query string (`expires=…&signature=…`, no leading `?`) that lets a URL
 * open `resource` until `expires` (epoch seconds), signed with `key`.
 *
 * @category signing
 */
export const signedQuery = (key: Uint8Array, resource: string, expires: number): string =>
  `expires=${expires}&signature=${signatureOf(key, resource, expires)}`

/**
 * Judges the `expires` and `signature` of `params` for `resource` at
 * `nowMillis` (epoch milliseconds) under `key`: `absent` when neither is
 * there, `invalid` when one is missing or malformed or the signature is not
 * the key's for this resource and expiry, `expired` for a true signature whose
 * time has passed, else `valid`.
 *
 * @category signing
 */
export const checkSignedQuery = (
  key: Uint8Array,
  resource: string,
  params: URLSearchParams,
  nowMillis: number
): SignedQueryVerdict => {
  const expiresText = params.get("expires")
  const signature = params.get("signature")
  if (expiresText === null && signature === null) return "absent"
  if (expiresText === null || signature === null || !/^\d{1,12}$/.test(expiresText)) return "invalid"
  if (!/^[A-Za-z0-9_-]{43}$/.test(signature)) return "invalid"
  const expires = Number(expiresText)
  const expected = Buffer.from(signatureOf(key, resource, expires), "utf8")
  const given = Buffer.from(signature, "utf8")
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return "invalid"
  return expires * 1000 > nowMillis ? "valid" : "expired"
}
