/**
 * A user's own API keys: list (masked: the stored display prefix only),
 * create (the full key returned once; only its SHA-256 digest and prefix are
 * stored), change (name, status, quota, expiry, model allow-list, IP
 * allow-list, rate limits) and delete; and the console playground's internal
 * token (`playground`).
 * Every query is scoped to the owner, so another user's key id finds nothing.
 * Each change clears the key cache (`Auth.invalidate`), so a revoked or
 * disabled key fails on the public routes at once on this instance (other
 * instances within the cache's time to live, 5 s by default).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { LimitsSpec } from "../config/BootstrapFile.ts"
import { InvalidRequest, NotFound } from "../errors/GatewayError.ts"
import { generateKey, hashKey, keyPrefix } from "../domain/KeyHash.ts"
import { epochSeconds, offsetOf, type Page, type PageRequest } from "../domain/Page.ts"
import { type BudgetList, budgetsJson, fromSpec, storedBudgets, usd } from "../domain/BudgetPeriod.ts"
import { Auth } from "../services/Auth.ts"
import { type BudgetView, budgetViews } from "./BudgetViews.ts"

/**
 * The stored digest of a user's playground token: not a SHA-256 hex digest,
 * so no key a caller presents can ever match it (the token has no key), and
 * unique per user (`tokens.key_hash` is unique).
 *
 * @category constants
 */
export const playgroundDigest = (userId: bigint): string => `playground:${userId}`

/** The masked text the playground token lists instead of a key prefix. @category constants */
export const PLAYGROUND_PREFIX = "no key: console only"

/** A token's rate limits: requests and tokens per minute, requests at once (absent = no limit). @category models */
export type TokenLimits = typeof LimitsSpec.Type

/** A key as listed: `key` is the masked prefix; `remain_quota` `null` = unlimited; times in epoch seconds. @category models */
export interface TokenView {
  readonly id: number
  readonly name: string
  readonly key: string
  readonly status: "enabled" | "disabled"
  readonly remain_quota: number | null
  readonly used_quota: number
  readonly models: ReadonlyArray<string> | null
  /** Addresses and CIDR ranges the key may be used from; `null` = anywhere. */
  readonly allow_ips: ReadonlyArray<string> | null
  readonly group: string | null
  readonly expires_at: number | null
  readonly created_at: number
  /** Rate limits of this key; `null` = the user's and group's only. */
  readonly limits: TokenLimits | null
  /** `api` for a key a caller presents; `playground` for the console's internal token, used by the session only. */
  readonly kind: "api" | "playground"
  /** The key's spend budgets with this period's spend and reset; `null` = none. */
  readonly budgets: ReadonlyArray<BudgetView> | null
}

/** A new key's settings. `expires_at` in epoch seconds. @category models */
export interface NewToken {
  readonly name: string
  readonly remain_quota?: number | null | undefined
  readonly expires_at?: number | null | undefined
  readonly models?: ReadonlyArray<string> | null | undefined
  readonly allow_ips?: ReadonlyArray<string> | null | undefined
  readonly limits?: TokenLimits | null | undefined
  /** The key's budgets, each within the user's budget of the same period (`null` or `[]` = none). */
  readonly budgets?: typeof BudgetList.Type | null | undefined
}

/** A change to a key: `id` and any of the rest (`null` clears a limit). @category models */
export interface TokenPatch extends Partial<NewToken> {
  readonly id: number
  readonly status?: "enabled" | "disabled" | undefined
}

interface Row {
  readonly id: bigint
  readonly name: string
  readonly prefix: string
  readonly enabled: boolean
  readonly remain: bigint | null
  readonly used: bigint
  readonly models: Array<string> | null
  readonly allowIps: Array<string> | null
  readonly group: string | null
  readonly expiresAt: Date | null
  readonly createdAt: Date
  readonly limits: TokenLimits | null
  readonly keyHash: string
  readonly budgets: unknown
}

const viewOf = (row: Row, budgets: ReadonlyArray<BudgetView> | null): TokenView => ({
  id: Number(row.id),
  name: row.name,
  key: row.prefix,
  status: row.enabled ? "enabled" : "disabled",
  remain_quota: row.remain === null ? null : Number(row.remain),
  used_quota: Number(row.used),
  models: row.models,
  allow_ips: row.allowIps === null || row.allowIps.length === 0 ? null : row.allowIps,
  group: row.group,
  expires_at: epochSeconds(row.expiresAt),
  created_at: epochSeconds(row.createdAt) ?? 0,
  limits: row.limits === null || Object.keys(row.limits).length === 0 ? null : row.limits,
  kind: row.keyHash.startsWith("playground:") ? "playground" : "api",
  budgets
})

/** Limits as stored: `null` for none (an empty object is none too). */
const limitsJson = (limits: TokenLimits | null | undefined) =>
  limits === null || limits === undefined || Object.keys(limits).length === 0 ? null : JSON.stringify(limits)

const toDate = (seconds: number | null | undefined) =>
  seconds === null || seconds === undefined ? null : new Date(seconds * 1000)

/** @category services */
export class Tokens extends Context.Service<Tokens, {
  readonly list: (userId: bigint, page: PageRequest) => Effect.Effect<Page<TokenView>>
  /** The new key's view and the full key (shown once). Names are unique per user. */
  readonly create: (
    userId: bigint,
    input: NewToken
  ) => Effect.Effect<{ readonly token: TokenView; readonly key: string }, InvalidRequest>
  readonly update: (userId: bigint, patch: TokenPatch) => Effect.Effect<TokenView, InvalidRequest | NotFound>
  readonly remove: (userId: bigint, id: bigint) => Effect.Effect<void, NotFound>
  /**
   * The user's playground token, made on first use (named `Playground`, or
   * `Playground 2`… when the user has a key of that name; a random suffix
   * after nine taken names): the digest
   * (`playgroundDigest`) that `Auth.authenticateDigest` resolves. It has no
   * key, so it is billed only for requests made with the user's browser
   * session; it lists with `kind: "playground"` and can be limited, disabled or
   * deleted like any key (deleted, it is made again on the next use).
   */
  readonly playground: (userId: bigint) => Effect.Effect<string>
}>()("sluice/services/Tokens") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    Tokens,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const auth = yield* Auth
      const columns = sql`t.id, t.name, t.key_prefix AS prefix, t.enabled, t.remain_quota AS remain,
        t.used_quota AS used, t.models, t.allow_ips AS "allowIps", t.group_name AS "group", t.expires_at AS "expiresAt",
        t.created_at AS "createdAt", t.limits, t.key_hash AS "keyHash", t.budgets`

      /** The views of `rows`, with their budgets' spend this period. */
      const viewsOf = (rows: ReadonlyArray<Row>) =>
        Effect.map(
          budgetViews(sql, "token", rows),
          (budgets) => rows.map((row) => viewOf(row, budgets.get(BigInt(row.id)) ?? null))
        )

      /**
       * Fails unless each budget is within the user's budget of the same period (an admin sets those); `param`
       * names the first one that is not.
       */
      const withinUser = (userId: bigint, budgets: typeof BudgetList.Type | null | undefined) =>
        budgets === undefined || budgets === null || budgets.length === 0 ? Effect.void : sql<{ budgets: unknown }>`
          SELECT budgets FROM users WHERE id = ${userId}`.pipe(
          Effect.orDie,
          Effect.flatMap(([row]) => {
            const caps = storedBudgets(row?.budgets)
            const wanted = fromSpec(budgets)
            const index = wanted.findIndex((budget) =>
              caps.some((cap) => cap.period === budget.period && budget.amount > cap.amount)
            )
            if (index < 0) return Effect.void
            const cap = caps.find((entry) => entry.period === wanted[index].period)!
            return Effect.fail(
              new InvalidRequest({
                message: `budgets[${index}].amount: a key's ${wanted[index].period} budget cannot exceed the user's (${
                  usd(cap.amount)
                }).`,
                param: `budgets[${index}].amount`
              })
            )
          })
        )

      const one = (userId: bigint, id: bigint) =>
        sql<Row>`SELECT ${columns} FROM tokens t WHERE t.id = ${id} AND t.user_id = ${userId}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            Option.match(Option.fromNullishOr(rows[0]), {
              onNone: () => Effect.fail(new NotFound({ what: "token", id: String(id), param: "id" })),
              onSome: (row) => Effect.map(viewsOf([row]), ([view]) => view)
            })
          )
        )

      const nameTaken = (userId: bigint, name: string, except: bigint) =>
        sql<{ n: bigint }>`SELECT count(*) AS n FROM tokens WHERE user_id = ${userId} AND name = ${name}
          AND id <> ${except}`.pipe(
          Effect.map(([row]) => Number(row.n) > 0),
          Effect.orDie,
          Effect.flatMap((taken) =>
            taken
              ? Effect.fail(new InvalidRequest({ message: "You already have a key with this name.", param: "name" }))
              : Effect.void
          )
        )

      const list = Effect.fn("Tokens.list")(function* (userId: bigint, page: PageRequest) {
        const [{ total }] = yield* sql<
          { total: bigint }
        >`SELECT count(*) AS total FROM tokens WHERE user_id = ${userId}`
          .pipe(Effect.orDie)
        const rows = yield* sql<Row>`SELECT ${columns} FROM tokens t WHERE t.user_id = ${userId}
          ORDER BY t.id DESC LIMIT ${page.size} OFFSET ${offsetOf(page)}`.pipe(Effect.orDie)
        return { items: yield* viewsOf(rows), total: Number(total), page: page.page, page_size: page.size }
      })

      const create = Effect.fn("Tokens.create")(function* (userId: bigint, input: NewToken) {
        yield* nameTaken(userId, input.name, -1n)
        yield* withinUser(userId, input.budgets)
        const key = generateKey()
        const [row] = yield* sql<{ id: bigint }>`
          INSERT INTO tokens
            (user_id, name, key_hash, key_prefix, remain_quota, models, expires_at, allow_ips, limits, budgets)
          VALUES (${userId}, ${input.name}, ${hashKey(key)}, ${keyPrefix(key)}, ${input.remain_quota ?? null},
                  ${input.models === undefined || input.models === null ? null : [...input.models]}::text[],
                  ${toDate(input.expires_at)},
                  ${input.allow_ips === undefined || input.allow_ips === null ? null : [...input.allow_ips]}::text[],
                  ${limitsJson(input.limits)}::jsonb, ${budgetsJson(fromSpec(input.budgets ?? []))}::jsonb)
          RETURNING id`.pipe(Effect.orDie)
        yield* auth.invalidate
        return { token: yield* one(userId, row.id).pipe(Effect.orDie), key }
      })

      const update = Effect.fn("Tokens.update")(function* (userId: bigint, patch: TokenPatch) {
        const id = BigInt(patch.id)
        yield* one(userId, id)
        if (patch.name !== undefined) yield* nameTaken(userId, patch.name, id)
        yield* withinUser(userId, patch.budgets)
        yield* sql.withTransaction(Effect.gen(function* () {
          if (patch.name !== undefined) yield* sql`UPDATE tokens SET name = ${patch.name} WHERE id = ${id}`
          if (patch.status !== undefined) {
            yield* sql`UPDATE tokens SET enabled = ${patch.status === "enabled"} WHERE id = ${id}`
          }
          if (patch.remain_quota !== undefined) {
            yield* sql`UPDATE tokens SET remain_quota = ${patch.remain_quota} WHERE id = ${id}`
          }
          if (patch.expires_at !== undefined) {
            yield* sql`UPDATE tokens SET expires_at = ${toDate(patch.expires_at)} WHERE id = ${id}`
          }
          if (patch.models !== undefined) {
            const models = patch.models === null ? null : [...patch.models]
            yield* sql`UPDATE tokens SET models = ${models}::text[] WHERE id = ${id}`
          }
          if (patch.allow_ips !== undefined) {
            const allowed = patch.allow_ips === null ? null : [...patch.allow_ips]
            yield* sql`UPDATE tokens SET allow_ips = ${allowed}::text[] WHERE id = ${id}`
          }
          if (patch.limits !== undefined) {
            yield* sql`UPDATE tokens SET limits = ${limitsJson(patch.limits)}::jsonb WHERE id = ${id}`
          }
          if (patch.budgets !== undefined) {
            yield* sql`UPDATE tokens SET budgets = ${
              budgetsJson(fromSpec(patch.budgets ?? []))
            }::jsonb WHERE id = ${id}`
          }
        })).pipe(Effect.orDie)
        yield* auth.invalidate
        return yield* one(userId, id).pipe(Effect.orDie)
      })

      const remove = Effect.fn("Tokens.remove")(function* (userId: bigint, id: bigint) {
        yield* one(userId, id)
        yield* sql`DELETE FROM tokens WHERE id = ${id} AND user_id = ${userId}`.pipe(Effect.orDie)
        yield* auth.invalidate
      })

      const playground = Effect.fn("Tokens.playground")(function* (userId: bigint) {
        const digest = playgroundDigest(userId)
        const found = () =>
          sql<{ n: bigint }>`SELECT count(*) AS n FROM tokens WHERE key_hash = ${digest}`.pipe(
            Effect.map(([row]) => Number(row.n) > 0),
            Effect.orDie
          )
        for (let attempt = 1; attempt <= 10 && !(yield* found()); attempt++) {
          const name = attempt === 1
            ? "Playground"
            : attempt < 10
            ? `Playground ${attempt}`
            : `Playground ${crypto.randomUUID().slice(0, 8)}`
          // A concurrent first use, or a key already named so, makes this insert nothing; the loop looks again.
          // No cache to clear: `Auth` keeps no answer for a digest it did not find.
          yield* sql`INSERT INTO tokens (user_id, name, key_hash, key_prefix)
            VALUES (${userId}, ${name}, ${digest}, ${PLAYGROUND_PREFIX}) ON CONFLICT DO NOTHING`.pipe(Effect.orDie)
        }
        return digest
      })

      return Tokens.of({ list, create, update, remove, playground })
    })
  )
}
