/**
 * Resolves the caller from its API key: the token, its user, the group it
 * routes in, the models it may use and its limits. Keys are looked up by
 * SHA-256 digest through an in-memory cache with a short time to live, so the
 * hot path does no database read per request.
 *
 * @since 0.1.0
 */
import { Cache, Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidApiKey, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"
import type { Limits } from "../storage/Catalog.ts"
import { hashKey } from "../domain/KeyHash.ts"
import { isAllowed } from "../http/ClientAddress.ts"
import { type AppliedBudget, storedBudgets } from "../domain/BudgetPeriod.ts"

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
  /** The addresses and CIDR ranges the key may be used from; `undefined` = anywhere. */
  readonly allowIps?: ReadonlyArray<string> | undefined
  /** The key's and its user's spend budgets (each hold must fit all of them); absent or empty = none. */
  readonly budgets?: ReadonlyArray<AppliedBudget> | undefined
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
  readonly allowIps?: Array<string> | null
  readonly tokenBudgets?: unknown
  readonly userBudgets?: unknown
}

/**
 * A key's row made into its principal once per cache entry, not once per
 * request.
 *
 * @category models
 */
export interface ResolvedKey {
  readonly principal: Principal
  /** Both the token and its user are enabled. */
  readonly enabled: boolean
}

const appliedBudgets = (row: Row): ReadonlyArray<AppliedBudget> | undefined => {
  const budgets = [
    ...storedBudgets(row.tokenBudgets).map((budget) => ({ ...budget, owner: "token" as const })),
    ...storedBudgets(row.userBudgets).map((budget) => ({ ...budget, owner: "user" as const }))
  ]
  return budgets.length === 0 ? undefined : budgets
}

const resolve = (row: Row): ResolvedKey => {
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
      userLimits: row.userLimits ?? undefined,
      allowIps: row.allowIps === null || row.allowIps === undefined || row.allowIps.length === 0
        ? undefined
        : row.allowIps,
      budgets: appliedBudgets(row)
    }
  }
}

/** How many recently seen keys keep their digest in memory (each key at most `MAX_KEY_LENGTH` characters). */
const DIGEST_MEMO_CAPACITY = 10_000

/** How many known keys (digest → principal) the cache keeps. */
const KNOWN_KEYS_CAPACITY = 100_000

/** How many unknown keys (digests only) are remembered, apart from the known ones so they cannot evict them. */
const UNKNOWN_KEYS_CAPACITY = 10_000

/**
 * The longest key the gateway will hash or look up, in UTF-16 code units. The
 * gateway's own keys and the vendors' are far shorter (`sk-` plus 48 to 164
 * characters); a longer one is `InvalidApiKey` `unknown` without a cache entry
 * or a query, so the digest memo holds at most this many characters per key
 * (about 5 MB for its 10,000 entries).
 *
 * @category auth
 */
export const MAX_KEY_LENGTH = 256

/**
 * Looks a key up by its digest (hex SHA-256): the resolved key, or
 * `Option.none()` when no token has that digest.
 *
 * @category models
 */
export type KeyLookup = (keyHash: string) => Effect.Effect<Option.Option<ResolvedKey>, StorageUnavailable>

/** @category services */
export class Auth extends Context.Service<Auth, {
  /**
   * Resolves a key (as sent by the caller; `undefined` when none was sent)
   * used from `clientAddress` (the peer address, see `http/ClientAddress.ts`).
   * Fails with `InvalidApiKey` (`missing`, `unknown`, `disabled`, `expired`,
   * or `address` when the key has an IP allow-list without that address),
   * or `StorageUnavailable` when an uncached key could not be looked up.
   */
  readonly authenticate: (
    key: string | undefined,
    clientAddress: string | undefined
  ) => Effect.Effect<Principal, InvalidApiKey | StorageUnavailable>
  /**
   * Resolves a token by its stored digest rather than a presented key, with
   * the same checks and cache as `authenticate`: the gateway's own internal
   * tokens (the console playground's, see `Tokens.playground`), which have no
   * key. Fails with `InvalidApiKey` or `StorageUnavailable` as `authenticate` does.
   */
  readonly authenticateDigest: (
    keyHash: string,
    clientAddress: string | undefined
  ) => Effect.Effect<Principal, InvalidApiKey | StorageUnavailable>
  /** Forgets cached keys (after a token or user changed). */
  readonly invalidate: Effect.Effect<void>
}>()("sluice/services/Auth") {
  /** SQL-backed, cached for `ttlMillis` (default 5 s). */
  static readonly layer = (ttlMillis = 5000) =>
    Layer.effect(
      Auth,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* makeAuth(
          (keyHash) =>
            sql<Row>`
              SELECT t.id AS "tokenId", t.name AS "tokenName", u.id AS "userId", u.group_name AS "userGroup",
                     t.group_name AS "tokenGroup", t.models, t.remain_quota AS "remainQuota",
                     t.expires_at AS "expiresAt", t.enabled AS "tokenEnabled", u.enabled AS "userEnabled",
                     t.limits AS "tokenLimits", u.limits AS "userLimits", t.allow_ips AS "allowIps",
                     t.budgets AS "tokenBudgets", u.budgets AS "userBudgets"
              FROM tokens t JOIN users u ON u.id = t.user_id
              WHERE t.key_hash = ${keyHash}`.pipe(
              Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), resolve)),
              storageFailure("auth.lookup")
            ),
          ttlMillis
        )
      })
    )

  /** Over any `lookup` (tests count its calls), cached for `ttlMillis` like `layer`. */
  static readonly layerLookup = (lookup: KeyLookup, ttlMillis = 5000) => Layer.effect(Auth, makeAuth(lookup, ttlMillis))
}

const makeAuth = Effect.fnUntraced(function* (lookup: KeyLookup, ttlMillis: number) {
  // Known keys only: a lookup that finds nothing is not kept here (time to live zero), so a flood of
  // made-up keys cannot push the known ones out; it is remembered in the smaller `unknown` cache instead.
  const known = yield* Cache.makeWith(lookup, {
    capacity: KNOWN_KEYS_CAPACITY,
    timeToLive: (exit) =>
      exit._tag === "Success" && Option.isSome(exit.value) ? Duration.millis(ttlMillis) : Duration.zero
  })
  const unknown = yield* Cache.make({
    capacity: UNKNOWN_KEYS_CAPACITY,
    timeToLive: Duration.millis(ttlMillis),
    lookup: (_keyHash: string) => Effect.succeed(true)
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

  const admit = (principal: Principal, clientAddress: string | undefined): Effect.Effect<Principal, InvalidApiKey> =>
    principal.allowIps !== undefined && !isAllowed(principal.allowIps, clientAddress)
      ? Effect.fail(new InvalidApiKey({ reason: "address" }))
      : Effect.succeed(principal)

  // A key with an expiry is compared with Effect's `Clock` (so `TestClock` drives it); one without reads no clock.
  const check = (found: ResolvedKey, clientAddress: string | undefined): Effect.Effect<Principal, InvalidApiKey> => {
    const { principal, enabled } = found
    if (!enabled) return Effect.fail(new InvalidApiKey({ reason: "disabled" }))
    const expiresAt = principal.expiresAt
    if (expiresAt === undefined) return admit(principal, clientAddress)
    return Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        expiresAt * 1000 <= now
          ? Effect.fail(new InvalidApiKey({ reason: "expired" }))
          : admit(principal, clientAddress)
    )
  }

  const authenticate = (
    key: string | undefined,
    clientAddress?: string
  ): Effect.Effect<Principal, InvalidApiKey | StorageUnavailable> => {
    if (key === undefined || key === "") return Effect.fail(new InvalidApiKey({ reason: "missing" }))
    if (key.length > MAX_KEY_LENGTH) return Effect.fail(new InvalidApiKey({ reason: "unknown" }))
    const digest = digestOf(key)
    // A known key cached (the usual request) takes one cache read; only a miss consults the unknown keys.
    return Effect.flatMap(
      Cache.getOption(known, digest),
      (cached) =>
        Option.isSome(cached) && Option.isSome(cached.value)
          ? check(cached.value.value, clientAddress)
          : Effect.flatMap(
            Cache.has(unknown, digest),
            (isUnknown) =>
              isUnknown
                ? Effect.fail(new InvalidApiKey({ reason: "unknown" }))
                : Effect.flatMap(Cache.get(known, digest), (found) =>
                  Option.isSome(found) ? check(found.value, clientAddress) : Effect.andThen(
                    Cache.set(unknown, digest, true),
                    Effect.fail(new InvalidApiKey({ reason: "unknown" }))
                  ))
          )
    )
  }

  const authenticateDigest = (
    keyHash: string,
    clientAddress?: string
  ): Effect.Effect<Principal, InvalidApiKey | StorageUnavailable> =>
    Effect.flatMap(
      Cache.get(known, keyHash),
      (found) =>
        Option.isSome(found) ? check(found.value, clientAddress) : Effect.fail(new InvalidApiKey({ reason: "unknown" }))
    )

  return Auth.of({
    authenticate,
    authenticateDigest,
    invalidate: Effect.andThen(Cache.invalidateAll(known), Cache.invalidateAll(unknown))
  })
})
