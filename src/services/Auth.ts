/**
 * Resolves the caller from its API key: the token, its user, the group it
 * routes in, the models it may use and its limits. Keys are looked up by
 * SHA-256 digest through an in-memory cache with a short time to live, so the
 * hot path does no database read per request.
 *
 * @since 0.1.0
 */
import { Cache, Context, Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidApiKey } from "../errors/GatewayError.ts"
import type { Limits } from "../storage/Catalog.ts"
import { hashKey } from "../domain/KeyHash.ts"

/**
 * The authenticated caller. Ids are database ids; `unlimitedQuota` means the
 * token has no quota of its own (the user's quota still applies).
 *
 * @category models
 */
export interface Principal {
  readonly tokenId: bigint
  readonly tokenName: string
  readonly userId: bigint
  readonly group: string
  /** The token's model allow-list; `undefined` = every model of the group. */
  readonly models: ReadonlyArray<string> | undefined
  readonly unlimitedQuota: boolean
  /** Epoch seconds, or `undefined` when the token never expires. */
  readonly expiresAt: number | undefined
  readonly tokenLimits: Limits | undefined
  readonly userLimits: Limits | undefined
}

interface Row {
  readonly tokenId: bigint
  readonly tokenName: string
  readonly userId: bigint
  readonly userGroup: string
  readonly tokenGroup: string | null
  readonly models: Array<string> | null
  readonly remainQuota: bigint | null
  readonly expiresAt: Date | null
  readonly tokenEnabled: boolean
  readonly userEnabled: boolean
  readonly tokenLimits: Limits | null
  readonly userLimits: Limits | null
}

/** A key's row made into its principal once per cache entry, not once per request. */
interface Resolved {
  readonly principal: Principal
  /** Both the token and its user are enabled. */
  readonly enabled: boolean
}

const resolve = (row: Row): Resolved => {
  const expiresAt = row.expiresAt === null ? undefined : Math.floor(new Date(row.expiresAt).getTime() / 1000)
  return {
    enabled: row.tokenEnabled && row.userEnabled,
    principal: {
      tokenId: BigInt(row.tokenId),
      tokenName: row.tokenName,
      userId: BigInt(row.userId),
      group: row.tokenGroup ?? row.userGroup,
      models: row.models ?? undefined,
      unlimitedQuota: row.remainQuota === null,
      expiresAt,
      tokenLimits: row.tokenLimits ?? undefined,
      userLimits: row.userLimits ?? undefined
    }
  }
}

/** How many recently seen keys keep their digest in memory. */
const DIGEST_MEMO_CAPACITY = 10_000

/** @category services */
export class Auth extends Context.Service<Auth, {
  /**
   * Resolves a key (as sent by the caller; `undefined` when none was sent).
   * Fails with `InvalidApiKey` (`missing`, `unknown`, `disabled`, `expired`).
   */
  readonly authenticate: (key: string | undefined) => Effect.Effect<Principal, InvalidApiKey>
  /** Forgets cached keys (after a token or user changed). */
  readonly invalidate: Effect.Effect<void>
}>()("sluice/services/Auth") {
  /** SQL-backed, cached for `ttlMillis` (default 5 s). */
  static readonly layer = (ttlMillis = 5000) =>
    Layer.effect(
      Auth,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const cache = yield* Cache.make({
          capacity: 100_000,
          timeToLive: Duration.millis(ttlMillis),
          lookup: (keyHash: string) =>
            sql<Row>`
              SELECT t.id AS "tokenId", t.name AS "tokenName", u.id AS "userId", u.group_name AS "userGroup",
                     t.group_name AS "tokenGroup", t.models, t.remain_quota AS "remainQuota",
                     t.expires_at AS "expiresAt", t.enabled AS "tokenEnabled", u.enabled AS "userEnabled",
                     t.limits AS "tokenLimits", u.limits AS "userLimits"
              FROM tokens t JOIN users u ON u.id = t.user_id
              WHERE t.key_hash = ${keyHash}`.pipe(
              Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), resolve)),
              Effect.orDie
            )
        })

        // Digests of recently seen keys, so a busy key is hashed once rather than on every request.
        // Process memory only (the request carries the key anyway); cleared whole when it fills.
        const digests = new Map<string, string>()
        const digestOf = (key: string): string => {
          let digest = digests.get(key)
          if (digest === undefined) {
            if (digests.size >= DIGEST_MEMO_CAPACITY) digests.clear()
            digest = hashKey(key)
            digests.set(key, digest)
          }
          return digest
        }

        const authenticate = (key: string | undefined): Effect.Effect<Principal, InvalidApiKey> => {
          if (key === undefined || key === "") return Effect.fail(new InvalidApiKey({ reason: "missing" }))
          return Effect.flatMap(Cache.get(cache, digestOf(key)), (found) => {
            if (Option.isNone(found)) return Effect.fail(new InvalidApiKey({ reason: "unknown" }))
            const { principal, enabled } = found.value
            if (!enabled) return Effect.fail(new InvalidApiKey({ reason: "disabled" }))
            if (principal.expiresAt !== undefined && principal.expiresAt * 1000 <= Date.now()) {
              return Effect.fail(new InvalidApiKey({ reason: "expired" }))
            }
            return Effect.succeed(principal)
          })
        }

        return Auth.of({ authenticate, invalidate: Cache.invalidateAll(cache) })
      })
    )
}
