/**
 * The ephemeral keys of `POST /v1/realtime/client_secrets` (OpenAI's "Realtime client secrets",
 * `openai` 7.57.0 `resources/realtime/client-secrets.ts`): a browser gets a short-lived `ek_…` value from the
 * caller's backend and opens `GET /v1/realtime` with it (as Bearer, or the subprotocol
 * `openai-insecure-api-key.<value>`) instead of a real key. A value stands for the key of ours that made it, is
 * bound to one model and to the session settings given with it (sent upstream as the session's first
 * `session.update`), and opens any number of sessions until `expires_at` (a session already open goes on).
 *
 * Kept in the database (`realtime_client_secrets`, migration 0017) so every instance accepts a value any instance
 * made; only the value's SHA-256 digest is stored. At most `MAX_LIVE_PER_TOKEN` live values per key; expired rows
 * are swept as new ones are made.
 *
 * @since 0.3.0
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { hashKey } from "../domain/KeyHash.ts"
import { RateLimited, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** Live client secrets one key may have at once. */
export const MAX_LIVE_PER_TOKEN = 100

/** Expired rows one sweep deletes at most. */
const SWEEP_ROWS = 1_000

/** What a client secret stands for. @category models */
export interface ClientSecret {
  /** The stored digest of the key of ours that made it (`Auth.authenticateDigest` resolves it). */
  readonly keyHash: string
  readonly model: string
  /** The session settings given with it (a JSON object), sent upstream first. */
  readonly session: Record<string, unknown>
  /** Epoch seconds. */
  readonly expiresAt: number
}

/** A new client secret. @category models */
export interface CreatedSecret {
  /** `ek_` then 32 random bytes as hex: handed to the caller once, never stored. */
  readonly value: string
  /** Epoch seconds. */
  readonly createdAt: number
  readonly expiresAt: number
}

/** @category services */
export class RealtimeSecrets extends Context.Service<RealtimeSecrets, {
  /**
   * Makes a value for `tokenId`, bound to `model` and `session`, valid for `seconds`. Fails with `RateLimited` when
   * the key already has `MAX_LIVE_PER_TOKEN` live values.
   */
  readonly create: (
    tokenId: bigint,
    model: string,
    session: Record<string, unknown>,
    seconds: number
  ) => Effect.Effect<CreatedSecret, RateLimited | StorageUnavailable>
  /**
   * What `value` stands for, while it is live; `None` for an unknown or expired value; `StorageUnavailable` when
   * it cannot be read.
   */
  readonly resolve: (value: string) => Effect.Effect<Option.Option<ClientSecret>, StorageUnavailable>
}>()("sluice/services/RealtimeSecrets") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    RealtimeSecrets,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const create = Effect.fn("RealtimeSecrets.create")(
        function* (tokenId: bigint, model: string, session: Record<string, unknown>, seconds: number) {
          const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
          yield* sql`DELETE FROM realtime_client_secrets WHERE secret_hash IN (
            SELECT secret_hash FROM realtime_client_secrets WHERE expires_at <= ${now} LIMIT ${SWEEP_ROWS})`
          const [{ live }] = yield* sql<{ live: bigint | number }>`
            SELECT count(*) AS live FROM realtime_client_secrets WHERE token_id = ${tokenId} AND expires_at > ${now}`
          if (Number(live) >= MAX_LIVE_PER_TOKEN) {
            return yield* new RateLimited({
              message: `This key has ${MAX_LIVE_PER_TOKEN} live Realtime client secrets; let some expire first.`,
              retryAfterSeconds: 60
            })
          }
          const bytes = crypto.getRandomValues(new Uint8Array(32))
          const value = `ek_${Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")}`
          const expiresAt = now + seconds
          yield* sql`INSERT INTO realtime_client_secrets (secret_hash, token_id, model, session, created_at, expires_at)
            VALUES (${hashKey(value)}, ${tokenId}, ${model}, ${JSON.stringify(session)}, ${now}, ${expiresAt})`
          return { value, createdAt: now, expiresAt }
        },
        storageFailure("realtime_secrets.create")
      )

      const resolve = Effect.fn("RealtimeSecrets.resolve")(
        function* (value: string) {
          const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
          const rows = yield* sql<{ keyHash: string; model: string; session: string; expiresAt: bigint | number }>`
            SELECT t.key_hash AS "keyHash", s.model, s.session, s.expires_at AS "expiresAt"
            FROM realtime_client_secrets s JOIN tokens t ON t.id = s.token_id
            WHERE s.secret_hash = ${hashKey(value)} AND s.expires_at > ${now}`
          const row = rows[0]
          if (row === undefined) return Option.none<ClientSecret>()
          const session: unknown = JSON.parse(row.session)
          return Option.some<ClientSecret>({
            keyHash: row.keyHash,
            model: row.model,
            session: typeof session === "object" && session !== null && !Array.isArray(session)
              ? session as Record<string, unknown>
              : {},
            expiresAt: Number(row.expiresAt)
          })
        },
        storageFailure("realtime_secrets.resolve")
      )

      return RealtimeSecrets.of({ create, resolve })
    })
  )
}
