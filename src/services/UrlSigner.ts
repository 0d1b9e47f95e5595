/**
 * The gateway's signing key for the signed, expiring URLs it hands out
 * (`domain/SignedUrl.ts`: a Midjourney task's image URL). The key is 32
 * random bytes kept in the database (`gateway_secrets`, name `url_signing`),
 * made by the first instance that starts on an empty database and read by
 * every other, so a URL signed by one instance opens on all of them and
 * survives a restart. Nothing else signs with it, and it never leaves the
 * gateway (no route, no log line shows it).
 *
 * @since 0.1.0
 */
import { Buffer } from "node:buffer"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { checkSignedQuery, expiryOf, signedQuery, type SignedQueryVerdict } from "../domain/SignedUrl.ts"

/** The `gateway_secrets` row of the URL signing key. @category constants */
export const URL_SIGNING_SECRET = "url_signing"

/** @category services */
export class UrlSigner extends Context.Service<UrlSigner, {
  /**
   * The query string (`expires=…&signature=…`) of a URL that opens
   * `resource` (`mj-image/<task id>`) for at least `ttlSeconds` from now
   * (the expiry rounded up to the hour: `expiryOf`).
   */
  readonly sign: (resource: string, ttlSeconds: number) => Effect.Effect<string>
  /** How `params` (a request's query) judge for `resource` now: `checkSignedQuery`. */
  readonly check: (resource: string, params: URLSearchParams) => Effect.Effect<SignedQueryVerdict>
}>()("sluice/services/UrlSigner") {
  /** Signing with `key` (bytes): the layer the database one is built on, and the tests'. */
  static readonly layerKey = (key: Uint8Array) =>
    Layer.succeed(
      UrlSigner,
      UrlSigner.of({
        sign: (resource, ttlSeconds) =>
          Effect.map(Clock.currentTimeMillis, (now) => signedQuery(key, resource, expiryOf(now, ttlSeconds))),
        check: (resource, params) =>
          Effect.map(Clock.currentTimeMillis, (now) => checkSignedQuery(key, resource, params, now))
      })
    )

  /** The key of the database (made there on first use); storage failures are defects. */
  static readonly layer = Layer.unwrap(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const fresh = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")
      // Two instances starting at once both insert; the first row wins and both read it.
      yield* sql`INSERT INTO gateway_secrets (name, secret) VALUES (${URL_SIGNING_SECRET}, ${fresh})
                 ON CONFLICT (name) DO NOTHING`
      const rows = yield* sql<{ readonly secret: string }>`
        SELECT secret FROM gateway_secrets WHERE name = ${URL_SIGNING_SECRET}`
      const secret = rows[0]?.secret
      if (secret === undefined || !/^[0-9a-f]{64}$/.test(secret)) {
        return yield* Effect.die(new Error("The URL signing key in gateway_secrets is missing or malformed."))
      }
      return UrlSigner.layerKey(Uint8Array.from(Buffer.from(secret, "hex")))
      // Built at start, before serving: a gateway that cannot read its key cannot start, a defect.
    }).pipe(Effect.orDie)
  )
}
