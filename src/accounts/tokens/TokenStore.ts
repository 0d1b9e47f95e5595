/**
 * The `tokens` table as the key service uses it, every query scoped to the
 * owner: counting and paging a user's keys (searched, filtered and sorted as
 * `TokenListing.ts` says, with their budgets' spend this period), one key, the per-user name check, a new key (its digest and
 * prefix only), a change written in one transaction, a delete, and the
 * playground token's row. A statement that cannot run fails with `StorageUnavailable`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { budgetsJson, fromSpec } from "../../domain/BudgetPeriod.ts"
import { offsetOf, type PageRequest } from "../../domain/Page.ts"
import { budgetViews } from "../BudgetViews.ts"
import { tokenConditions, tokenOrder, type TokenQuery } from "./TokenListing.ts"
import { expiryDate, limitsJson, PLAYGROUND_PREFIX, storedKey } from "./TokenRules.ts"
import { type NewToken, type TokenPatch, type TokenRow, type TokenView, tokenViewOf } from "./TokenViews.ts"
import type { StorageUnavailable } from "../../errors/GatewayError.ts"
import { storageFailure } from "../../storage/StorageFailure.ts"

/**
 * The key service's SQL.
 *
 * @category models
 */
export interface TokenStore {
  /** How many keys user `userId` has that match `query`. */
  readonly count: (userId: bigint, query: TokenQuery) => Effect.Effect<number, StorageUnavailable>
  /** One page of the user's keys matching `query`, in its order (newest first by default), as views. */
  readonly page: (
    userId: bigint,
    page: PageRequest,
    query: TokenQuery
  ) => Effect.Effect<ReadonlyArray<TokenView>, StorageUnavailable>
  /** The user's key `id` as a view; `undefined` when the user has no such key. */
  readonly one: (userId: bigint, id: bigint) => Effect.Effect<TokenView | undefined, StorageUnavailable>
  /** Whether the user has a key other than `except` named `name`. */
  readonly nameTaken: (userId: bigint, name: string, except: bigint) => Effect.Effect<boolean, StorageUnavailable>
  /** The user's stored budgets (JSON; `undefined` when there is no such user). */
  readonly userBudgets: (userId: bigint) => Effect.Effect<unknown, StorageUnavailable>
  /** Stores a new key of the user with `input`'s settings (only the key's digest and prefix); its id. */
  readonly insert: (userId: bigint, input: NewToken, key: string) => Effect.Effect<bigint, StorageUnavailable>
  /** Writes the fields `patch` names onto key `id` (already known to be the user's), in one transaction. */
  readonly update: (id: bigint, patch: TokenPatch) => Effect.Effect<void, StorageUnavailable>
  /** Deletes the user's key `id`. */
  readonly remove: (userId: bigint, id: bigint) => Effect.Effect<void, StorageUnavailable>
  /** Whether a key with digest `digest` exists. */
  readonly digestExists: (digest: string) => Effect.Effect<boolean, StorageUnavailable>
  /**
   * Inserts the user's playground token named `name` with `digest`; nothing
   * when the digest or the name is already taken.
   */
  readonly insertPlayground: (userId: bigint, name: string, digest: string) => Effect.Effect<void, StorageUnavailable>
}

const list = (values: ReadonlyArray<string> | null | undefined) =>
  values === undefined || values === null ? null : [...values]

/** The token store over `sql`. */
export const makeTokenStore = (sql: SqlClient.SqlClient): TokenStore => {
  const columns = sql`t.id, t.name, t.key_prefix AS prefix, t.enabled, t.remain_quota AS remain,
    t.used_quota AS used, t.models, t.allow_ips AS "allowIps", t.group_name AS "group", t.expires_at AS "expiresAt",
    t.created_at AS "createdAt", t.limits, t.key_hash AS "keyHash", t.budgets`

  /** The views of `rows`, with their budgets' spend this period. */
  const viewsOf = (rows: ReadonlyArray<TokenRow>) =>
    Effect.map(
      budgetViews(sql, "token", rows),
      (budgets) => rows.map((row) => tokenViewOf(row, budgets.get(BigInt(row.id)) ?? null))
    )

  const exists = (rows: ReadonlyArray<{ readonly n: bigint }>) => Number(rows[0].n) > 0

  return {
    count: (userId, query) =>
      sql<{ total: bigint }>`SELECT count(*) AS total FROM tokens t
        WHERE t.user_id = ${userId} AND ${tokenConditions(sql, query)}`.pipe(
        Effect.map(([row]) => Number(row.total)),
        storageFailure("tokens.count")
      ),

    page: (userId, page, query) =>
      sql<TokenRow>`SELECT ${columns} FROM tokens t WHERE t.user_id = ${userId} AND ${tokenConditions(sql, query)}
        ORDER BY ${tokenOrder(sql, query)} LIMIT ${page.size} OFFSET ${offsetOf(page)}`.pipe(
        storageFailure("tokens.page"),
        Effect.flatMap(viewsOf)
      ),

    one: (userId, id) =>
      sql<TokenRow>`SELECT ${columns} FROM tokens t WHERE t.id = ${id} AND t.user_id = ${userId}`.pipe(
        storageFailure("tokens.one"),
        Effect.flatMap((rows) => rows.length === 0 ? Effect.succeed(undefined) : viewsOf(rows.slice(0, 1))),
        Effect.map((views) => views?.[0])
      ),

    nameTaken: (userId, name, except) =>
      sql<{ n: bigint }>`SELECT count(*) AS n FROM tokens WHERE user_id = ${userId} AND name = ${name}
        AND id <> ${except}`.pipe(Effect.map(exists), storageFailure("tokens.name_taken")),

    userBudgets: (userId) =>
      sql<{ budgets: unknown }>`SELECT budgets FROM users WHERE id = ${userId}`.pipe(
        Effect.map(([row]) => row?.budgets),
        storageFailure("tokens.user_budgets")
      ),

    insert: (userId, input, key) => {
      const { hash, prefix } = storedKey(key)
      return sql<{ id: bigint }>`
        INSERT INTO tokens
          (user_id, name, key_hash, key_prefix, remain_quota, models, expires_at, allow_ips, limits, budgets)
        VALUES (${userId}, ${input.name}, ${hash}, ${prefix}, ${input.remain_quota ?? null},
                ${list(input.models)}::text[], ${expiryDate(input.expires_at)}, ${list(input.allow_ips)}::text[],
                ${limitsJson(input.limits)}::jsonb, ${budgetsJson(fromSpec(input.budgets ?? []))}::jsonb)
        RETURNING id`.pipe(Effect.map(([row]) => row.id), storageFailure("tokens.insert"))
    },

    update: (id, patch) =>
      sql.withTransaction(Effect.gen(function* () {
        if (patch.name !== undefined) yield* sql`UPDATE tokens SET name = ${patch.name} WHERE id = ${id}`
        if (patch.status !== undefined) {
          yield* sql`UPDATE tokens SET enabled = ${patch.status === "enabled"} WHERE id = ${id}`
        }
        if (patch.remain_quota !== undefined) {
          yield* sql`UPDATE tokens SET remain_quota = ${patch.remain_quota} WHERE id = ${id}`
        }
        if (patch.expires_at !== undefined) {
          yield* sql`UPDATE tokens SET expires_at = ${expiryDate(patch.expires_at)} WHERE id = ${id}`
        }
        if (patch.models !== undefined) {
          yield* sql`UPDATE tokens SET models = ${list(patch.models)}::text[] WHERE id = ${id}`
        }
        if (patch.allow_ips !== undefined) {
          yield* sql`UPDATE tokens SET allow_ips = ${list(patch.allow_ips)}::text[] WHERE id = ${id}`
        }
        if (patch.limits !== undefined) {
          yield* sql`UPDATE tokens SET limits = ${limitsJson(patch.limits)}::jsonb WHERE id = ${id}`
        }
        if (patch.budgets !== undefined) {
          yield* sql`UPDATE tokens SET budgets = ${budgetsJson(fromSpec(patch.budgets ?? []))}::jsonb WHERE id = ${id}`
        }
      })).pipe(storageFailure("tokens.update")),

    remove: (userId, id) =>
      sql`DELETE FROM tokens WHERE id = ${id} AND user_id = ${userId}`.pipe(
        Effect.asVoid,
        storageFailure("tokens.remove")
      ),

    digestExists: (digest) =>
      sql<{ n: bigint }>`SELECT count(*) AS n FROM tokens WHERE key_hash = ${digest}`.pipe(
        Effect.map(exists),
        storageFailure("tokens.digest_exists")
      ),

    insertPlayground: (userId, name, digest) =>
      sql`INSERT INTO tokens (user_id, name, key_hash, key_prefix)
        VALUES (${userId}, ${name}, ${digest}, ${PLAYGROUND_PREFIX}) ON CONFLICT DO NOTHING`.pipe(
        Effect.asVoid,
        storageFailure("tokens.insert_playground")
      )
  }
}
