/**
 * The caller's own API keys: `GET /api/token/` (paginated with `page` and
 * `page_size`, keys masked; `keyword` in the name or the start of the key's
 * listed prefix, `status`, `group`, `model` (on the key's allow-list), `sort`
 * (`TOKEN_SORTS`) and `order` (`asc`, `desc`; newest first by default)),
 * `POST /api/token/bulk` (`{ids: [up to 100], action: enable | disable |
 * delete}`: each of the caller's keys changed in turn; the answer lists each
 * id's outcome, another user's key id "not found"),
 * `POST /api/token/` (the full key in `data.key`, once), `PUT /api/token/`
 * (`id` and any of name, status, remain_quota, expires_at, models,
 * allow_ips, limits: `{rpm?, tpm?, concurrency?}` or `null`, budgets: `[{amount
 * (USD), period: day | week | month | total, timezone?}]` or `null`, each within
 * the user's budget of the same period; listed with each budget's spend this
 * period and `resets_at`) and
 * `DELETE /api/token/{id}`. Another user's key id is "not found".
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { LimitsSpec } from "../../config/BootstrapFile.ts"
import { BudgetList } from "../../domain/BudgetPeriod.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { Tokens } from "../../accounts/Tokens.ts"
import { TOKEN_SORTS, type TokenQuery } from "../../accounts/Tokens.ts"
import { BulkBody, runBulk } from "./BulkAction.ts"
import { decodeBody, idOf, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { EpochSeconds, Id, IpList, ModelList, Name, Quota, Status } from "./Fields.ts"
import { ORDERS, queryChoice } from "./ListQuery.ts"

const NewTokenBody = Schema.Struct({
  name: Name,
  remain_quota: Schema.optional(Schema.NullOr(Quota)),
  expires_at: Schema.optional(Schema.NullOr(EpochSeconds)),
  models: Schema.optional(Schema.NullOr(ModelList)),
  allow_ips: Schema.optional(Schema.NullOr(IpList)),
  limits: Schema.optional(Schema.NullOr(LimitsSpec)),
  budgets: Schema.optional(Schema.NullOr(BudgetList))
})

const TokenPatchBody = Schema.Struct({
  id: Id,
  name: Schema.optional(Name),
  status: Schema.optional(Status),
  remain_quota: Schema.optional(Schema.NullOr(Quota)),
  expires_at: Schema.optional(Schema.NullOr(EpochSeconds)),
  models: Schema.optional(Schema.NullOr(ModelList)),
  allow_ips: Schema.optional(Schema.NullOr(IpList)),
  limits: Schema.optional(Schema.NullOr(LimitsSpec)),
  budgets: Schema.optional(Schema.NullOr(BudgetList))
})

const tokenQueryOf = (query: URLSearchParams) =>
  Effect.gen(function* () {
    const tokenQuery: TokenQuery = {
      keyword: yield* queryText(query.get("keyword"), "keyword", 64),
      status: yield* queryChoice(query.get("status"), "status", Status.literals),
      group: yield* queryText(query.get("group"), "group", 64),
      model: yield* queryText(query.get("model"), "model", 256),
      sort: yield* queryChoice(query.get("sort"), "sort", TOKEN_SORTS),
      order: yield* queryChoice(query.get("order"), "order", ORDERS)
    }
    return tokenQuery
  })

/** @category routes */
export const TokenRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const tokens = yield* Tokens
  const guards = makeGuards(yield* Sessions)
  const created = decodeBody(NewTokenBody)
  const patched = decodeBody(TokenPatchBody)
  const bulk = decodeBody(BulkBody)

  // The router ignores a trailing slash: "/api/token" also serves "/api/token/".
  {
    const path = "/api/token"
    yield* router.add("GET", path, (request) =>
      Effect.gen(function* () {
        const caller = yield* guards.user(request)
        const query = yield* tokenQueryOf(queryOf(request))
        return ok(yield* tokens.list(caller.id, yield* pageOf(request), query))
      }).pipe(respondApi))

    yield* router.add("POST", path, (request) =>
      Effect.gen(function* () {
        const caller = yield* guards.user(request)
        const { token, key } = yield* tokens.create(caller.id, yield* created(request))
        return ok({ ...token, key })
      }).pipe(respondApi))

    yield* router.add("PUT", path, (request) =>
      Effect.gen(function* () {
        const caller = yield* guards.user(request)
        return ok(yield* tokens.update(caller.id, yield* patched(request)))
      }).pipe(respondApi))
  }

  yield* router.add("POST", "/api/token/bulk", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const body = yield* bulk(request)
      const results = yield* runBulk(body, {
        remove: (id) => tokens.remove(caller.id, BigInt(id)),
        setEnabled: (id, enabled) => tokens.update(caller.id, { id, status: enabled ? "enabled" : "disabled" })
      })
      return ok(results)
    }).pipe(respondApi))

  yield* router.add("DELETE", "/api/token/:id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const params = yield* HttpRouter.params
      yield* tokens.remove(caller.id, yield* idOf(params.id, "id"))
      return ok(null)
    }).pipe(respondApi))
}))
