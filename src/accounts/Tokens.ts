/**
 * A user's own API keys: list (masked: the stored display prefix only;
 * searched, filtered and sorted as `tokens/TokenListing.ts` says),
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
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidRequest, NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { generateKey } from "../domain/KeyHash.ts"
import type { BudgetList } from "../domain/BudgetPeriod.ts"
import type { Page, PageRequest } from "../domain/Page.ts"
import { Auth } from "../services/Auth.ts"
import { budgetRefusal, playgroundDigest, playgroundName } from "./tokens/TokenRules.ts"
import type { TokenQuery } from "./tokens/TokenListing.ts"
import { makeTokenStore } from "./tokens/TokenStore.ts"
import type { NewToken, TokenPatch, TokenView } from "./tokens/TokenViews.ts"

/** The playground token's digest and listed prefix (defined with the key rules, `tokens/TokenRules.ts`). */
export { PLAYGROUND_PREFIX, playgroundDigest } from "./tokens/TokenRules.ts"

/** The key list's search, filters and sort (defined with their SQL, `tokens/TokenListing.ts`). */
export { TOKEN_SORTS, type TokenQuery, type TokenSort } from "./tokens/TokenListing.ts"

/** A key as listed, a new key, a change and rate limits (defined with the row, `tokens/TokenViews.ts`). */
export type { NewToken, TokenLimits, TokenPatch, TokenView } from "./tokens/TokenViews.ts"

/** @category services */
export class Tokens extends Context.Service<Tokens, {
  /** One page of the user's keys matching `query` (`tokens/TokenListing.ts`; `{}`: every key, newest first). */
  readonly list: (
    userId: bigint,
    page: PageRequest,
    query: TokenQuery
  ) => Effect.Effect<Page<TokenView>, StorageUnavailable>
  /** The new key's view and the full key (shown once). Names are unique per user. */
  readonly create: (
    userId: bigint,
    input: NewToken
  ) => Effect.Effect<{ readonly token: TokenView; readonly key: string }, InvalidRequest | StorageUnavailable>
  readonly update: (
    userId: bigint,
    patch: TokenPatch
  ) => Effect.Effect<TokenView, InvalidRequest | NotFound | StorageUnavailable>
  readonly remove: (userId: bigint, id: bigint) => Effect.Effect<void, NotFound | StorageUnavailable>
  /**
   * The user's playground token, made on first use (named `Playground`, or
   * `Playground 2`… when the user has a key of that name; a random suffix
   * after nine taken names): the digest
   * (`playgroundDigest`) that `Auth.authenticateDigest` resolves. It has no
   * key, so it is billed only for requests made with the user's browser
   * session; it lists with `kind: "playground"` and can be limited, disabled or
   * deleted like any key (deleted, it is made again on the next use).
   */
  readonly playground: (userId: bigint) => Effect.Effect<string, StorageUnavailable>
}>()("sluice/accounts/Tokens") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    Tokens,
    Effect.gen(function* () {
      const store = makeTokenStore(yield* SqlClient.SqlClient)
      const auth = yield* Auth

      const refused = (refusal: { readonly message: string; readonly param: string } | undefined) =>
        refusal === undefined ? Effect.void : Effect.fail(new InvalidRequest(refusal))

      /** Fails unless each budget is within the user's budget of the same period (an admin sets those). */
      const withinUser = (userId: bigint, budgets: typeof BudgetList.Type | null | undefined) =>
        budgets === undefined || budgets === null || budgets.length === 0
          ? Effect.void
          : Effect.flatMap(store.userBudgets(userId), (stored) => refused(budgetRefusal(stored, budgets)))

      const one = (userId: bigint, id: bigint) =>
        Effect.flatMap(
          store.one(userId, id),
          (view) =>
            view === undefined
              ? Effect.fail(new NotFound({ what: "token", id: String(id), param: "id" }))
              : Effect.succeed(view)
        )

      const nameTaken = (userId: bigint, name: string, except: bigint) =>
        Effect.flatMap(
          store.nameTaken(userId, name, except),
          (taken) => refused(taken ? { message: "You already have a key with this name.", param: "name" } : undefined)
        )

      const list = Effect.fn("Tokens.list")(function* (userId: bigint, page: PageRequest, query: TokenQuery) {
        const total = yield* store.count(userId, query)
        const items = yield* store.page(userId, page, query)
        return { items, total, page: page.page, page_size: page.size } satisfies Page<TokenView>
      })

      const create = Effect.fn("Tokens.create")(function* (userId: bigint, input: NewToken) {
        yield* nameTaken(userId, input.name, -1n)
        yield* withinUser(userId, input.budgets)
        const key = generateKey()
        const id = yield* store.insert(userId, input, key)
        yield* auth.invalidate
        // The row was written or checked just before: its absence would be a bug, so a defect.
        return { token: yield* one(userId, id).pipe(Effect.catchTag("NotFound", Effect.die)), key }
      })

      const update = Effect.fn("Tokens.update")(function* (userId: bigint, patch: TokenPatch) {
        const id = BigInt(patch.id)
        yield* one(userId, id)
        if (patch.name !== undefined) yield* nameTaken(userId, patch.name, id)
        yield* withinUser(userId, patch.budgets)
        yield* store.update(id, patch)
        yield* auth.invalidate
        // The row was written or checked just before: its absence would be a bug, so a defect.
        return yield* one(userId, id).pipe(Effect.catchTag("NotFound", Effect.die))
      })

      const remove = Effect.fn("Tokens.remove")(function* (userId: bigint, id: bigint) {
        yield* one(userId, id)
        yield* store.remove(userId, id)
        yield* auth.invalidate
      })

      const playground = Effect.fn("Tokens.playground")(function* (userId: bigint) {
        const digest = playgroundDigest(userId)
        for (let attempt = 1; attempt <= 10 && !(yield* store.digestExists(digest)); attempt++) {
          // A concurrent first use, or a key already named so, makes this insert nothing; the loop looks again.
          // No cache to clear: `Auth` keeps no answer for a digest it did not find.
          yield* store.insertPlayground(userId, playgroundName(attempt, () => crypto.randomUUID().slice(0, 8)), digest)
        }
        return digest
      })

      return Tokens.of({ list, create, update, remove, playground })
    })
  )
}
