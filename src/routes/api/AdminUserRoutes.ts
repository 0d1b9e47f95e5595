/**
 * User management for admins (role admin or root): `GET /api/user/`
 * (paginated; `keyword` in the username, display name or e-mail, `role`,
 * `status`, `group`, `sort` (`USER_SORTS`) and `order` (`asc`, `desc`; newest
 * first by default); only the users the caller manages, and itself), `GET /api/user/{id}`,
 * `POST /api/user/` (create), `PUT /api/user/` (`id` and any of
 * display_name, email, role, group, status, password, budgets: `[{amount (USD),
 * period: day | week | month | total, timezone?}]` or `null`), `DELETE
 * /api/user/{id}` and `POST /api/user/topup` (`{id, amount, note?}`, a
 * quota top-up recorded as its own row). A caller manages only users ranked
 * below it and grants only roles below its own: an admin manages users, root
 * manages admins and users, and nobody changes root here.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { Accounts } from "../../accounts/Accounts.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { USER_SORTS, type UserQuery } from "../../accounts/UserListing.ts"
import { BudgetList } from "../../domain/BudgetPeriod.ts"
import { decodeBody, idOf, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { DisplayName, Email, Id, Name, Password, Quota, RoleField, Status, Text, Username } from "./Fields.ts"
import { ORDERS, queryChoice } from "./ListQuery.ts"

const CreateBody = Schema.Struct({
  username: Username,
  password: Password,
  display_name: Schema.optional(DisplayName),
  email: Schema.optional(Email),
  role: Schema.optional(RoleField),
  group: Schema.optional(Name)
})

const UpdateBody = Schema.Struct({
  id: Id,
  display_name: Schema.optional(DisplayName),
  email: Schema.optional(Schema.NullOr(Email)),
  role: Schema.optional(RoleField),
  group: Schema.optional(Name),
  status: Schema.optional(Status),
  password: Schema.optional(Password),
  budgets: Schema.optional(Schema.NullOr(BudgetList))
})

const TopUpBody = Schema.Struct({
  id: Id,
  amount: Quota.check(Schema.isGreaterThanOrEqualTo(1)),
  note: Schema.optional(Text(256))
})

/** @category routes */
export const AdminUserRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const accounts = yield* Accounts
  const guards = makeGuards(yield* Sessions)
  const created = decodeBody(CreateBody)
  const updated = decodeBody(UpdateBody)
  const toppedUp = decodeBody(TopUpBody)

  yield* router.add("GET", "/api/user", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const query = queryOf(request)
      const userQuery: UserQuery = {
        keyword: yield* queryText(query.get("keyword"), "keyword", 64),
        role: yield* queryChoice(query.get("role"), "role", RoleField.literals),
        status: yield* queryChoice(query.get("status"), "status", Status.literals),
        group: yield* queryText(query.get("group"), "group", 64),
        sort: yield* queryChoice(query.get("sort"), "sort", USER_SORTS),
        order: yield* queryChoice(query.get("order"), "order", ORDERS)
      }
      return ok(yield* accounts.list(caller, yield* pageOf(request), userQuery))
    }).pipe(respondApi))

  yield* router.add("GET", "/api/user/:id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const params = yield* HttpRouter.params
      return ok(yield* accounts.get(caller, yield* idOf(params.id, "id")))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/user", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* accounts.create(caller, yield* created(request)))
    }).pipe(respondApi))

  yield* router.add("PUT", "/api/user", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* accounts.update(caller, yield* updated(request)))
    }).pipe(respondApi))

  yield* router.add("DELETE", "/api/user/:id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const params = yield* HttpRouter.params
      yield* accounts.remove(caller, yield* idOf(params.id, "id"))
      return ok(null)
    }).pipe(respondApi))

  yield* router.add("POST", "/api/user/topup", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const body = yield* toppedUp(request)
      return ok(yield* accounts.topUp(caller, BigInt(body.id), BigInt(body.amount), body.note ?? ""))
    }).pipe(respondApi))
}))
