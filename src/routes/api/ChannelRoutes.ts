/**
 * Channels for admins: `GET /api/channel/` (every channel, keys masked, with
 * this instance's health and the last test), `GET /api/channel/{id}`,
 * `POST /api/channel/` (the bootstrap file's channel fields), `PUT
 * /api/channel/` (`id` and any of them; `keys` replaces the list), `DELETE
 * /api/channel/{id}` and `POST /api/channel/test/{id}` (one test request,
 * its status and latency recorded on the channel; a failed test is
 * `success: false` with the reason and the same `data`).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { ChannelSettings, ChannelType } from "../../config/BootstrapFile.ts"
import { ChannelAdmin } from "../../accounts/ChannelAdmin.ts"
import { Sessions } from "../../accounts/Sessions.ts"
import { decodeBody, idOf, makeGuards, ok, respondApi } from "./Api.ts"
import { Id, ModelList, Name, Text } from "./Fields.ts"

/** An upstream key: up to 8 KiB, room for a Google service-account key JSON (about 2.4 KB) on vertex channels. */
const Key = Text(8192).check(Schema.isMinLength(1))
const Weight = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(1_000_000))
const Priority = Schema.Int.check(Schema.isBetween({ minimum: -1_000_000, maximum: 1_000_000 }))
const Mapping = Schema.Record(Name, Name)
const Url = Text(2048).check(Schema.isMinLength(1))

const CreateBody = Schema.Struct({
  name: Name,
  type: ChannelType,
  /**
   * Optional where the type has a default (`deepseek`; `bedrock`: its `settings.region`'s endpoint); refused as
   * missing otherwise (`ChannelChanges.placed`).
   */
  base_url: Schema.optional(Url),
  keys: Schema.Array(Key).check(Schema.isMinLength(1), Schema.isMaxLength(1000)),
  models: ModelList,
  groups: Schema.optional(Schema.Array(Name).check(Schema.isMaxLength(100))),
  priority: Schema.optional(Priority),
  weight: Schema.optional(Weight),
  model_mapping: Schema.optional(Mapping),
  settings: Schema.optional(ChannelSettings),
  enabled: Schema.optional(Schema.Boolean)
})

const UpdateBody = Schema.Struct({
  id: Id,
  name: Schema.optional(Name),
  type: Schema.optional(ChannelType),
  base_url: Schema.optional(Url),
  keys: Schema.optional(Schema.Array(Key).check(Schema.isMinLength(1), Schema.isMaxLength(1000))),
  models: Schema.optional(ModelList),
  groups: Schema.optional(Schema.Array(Name).check(Schema.isMaxLength(100))),
  priority: Schema.optional(Priority),
  weight: Schema.optional(Weight),
  model_mapping: Schema.optional(Mapping),
  settings: Schema.optional(ChannelSettings),
  enabled: Schema.optional(Schema.Boolean)
})

/** @category routes */
export const ChannelRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const channels = yield* ChannelAdmin
  const guards = makeGuards(yield* Sessions)
  const created = decodeBody(CreateBody)
  const updated = decodeBody(UpdateBody)

  yield* router.add("GET", "/api/channel", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      return ok(yield* channels.list())
    }).pipe(respondApi))

  yield* router.add("GET", "/api/channel/:id", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      const params = yield* HttpRouter.params
      return ok(yield* channels.get(yield* idOf(params.id, "id")))
    }).pipe(respondApi))

  yield* router.add("POST", "/api/channel", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* channels.create(caller, yield* created(request)))
    }).pipe(respondApi))

  yield* router.add("PUT", "/api/channel", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      return ok(yield* channels.update(caller, yield* updated(request)))
    }).pipe(respondApi))

  yield* router.add("DELETE", "/api/channel/:id", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.admin(request)
      const params = yield* HttpRouter.params
      yield* channels.remove(caller, yield* idOf(params.id, "id"))
      return ok(null)
    }).pipe(respondApi))

  yield* router.add("POST", "/api/channel/test/:id", (request) =>
    Effect.gen(function* () {
      yield* guards.admin(request)
      const params = yield* HttpRouter.params
      const outcome = yield* channels.test(yield* idOf(params.id, "id"))
      const data = { status: outcome.status, latency_ms: outcome.latencyMs }
      return outcome.ok ? ok(data) : HttpServerResponse.jsonUnsafe({ success: false, message: outcome.message, data })
    }).pipe(respondApi))
}))
