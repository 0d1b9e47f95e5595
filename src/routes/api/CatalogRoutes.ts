/**
 * Group ratios, model prices and the audit table: `GET /api/group` and
 * `GET /api/pricing` (admin), `PUT /api/group` (`{name, ratio, limits?}`) and
 * `PUT /api/pricing` (`{model, input?, output?, cached_input?, cache_write?,
 * per_image?, per_second?, per_1m_characters?, per_search?, audio_input?, audio_output?, cached_audio_input?, batch_input?, batch_output?, family?, free?}`, the model's prices replaced whole)
 * (admin), `GET /api/audit` (root; paginated, newest first; `action` (an action or
 * a prefix ending in `.`), `actor`, `target` (contains), `start_timestamp`,
 * `end_timestamp` (epoch seconds), `order` (`asc`, `desc`)).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { GroupSpec, ModelSpec } from "../../config/BootstrapFile.ts"
import { AuditLog, type AuditQuery } from "../../accounts/AuditLog.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import { CatalogAdmin } from "../../accounts/CatalogAdmin.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { decodeBody, makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { Name } from "./Fields.ts"
import { ORDERS, queryChoice } from "./ListQuery.ts"

const GroupBody = Schema.Struct({ name: Name, ...GroupSpec.fields })

const PriceBody = Schema.Struct({ model: Name, ...ModelSpec.fields })

/** @category routes */
export const CatalogRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const catalog = yield* CatalogAdmin
  const audit = yield* AuditLog
  const guards = makeGuards(yield* Sessions)
  const group = decodeBody(GroupBody)
  const price = decodeBody(PriceBody)

  yield* router.add("GET", "/api/group", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      return ok(yield* catalog.groups())
    }).pipe(respondApi))

  yield* router.add("PUT", "/api/group", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* catalog.putGroup(caller, yield* group(request)))
    }).pipe(respondApi))

  yield* router.add("GET", "/api/pricing", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      return ok(yield* catalog.prices())
    }).pipe(respondApi))

  yield* router.add("PUT", "/api/pricing", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* catalog.putPrice(caller, yield* price(request)))
    }).pipe(respondApi))

  yield* router.add("GET", "/api/audit", (request) =>
    Effect.gen(function* () {
      yield* guards.root(request)
      const query = queryOf(request)
      const seconds = (name: string) => {
        const value = query.get(name)
        if (value === null || value === "") return Effect.succeed(undefined)
        return /^\d{1,12}$/.test(value)
          ? Effect.succeed(Number(value))
          : Effect.fail(new InvalidRequest({ message: `${name} must be epoch seconds.`, param: name }))
      }
      const auditQuery: AuditQuery = {
        action: yield* queryText(query.get("action"), "action", 64),
        actor: yield* queryText(query.get("actor"), "actor", 64),
        target: yield* queryText(query.get("target"), "target", 128),
        start: yield* seconds("start_timestamp"),
        end: yield* seconds("end_timestamp"),
        order: yield* queryChoice(query.get("order"), "order", ORDERS)
      }
      return ok(yield* audit.list(yield* pageOf(request), auditQuery))
    }).pipe(respondApi))
}))
