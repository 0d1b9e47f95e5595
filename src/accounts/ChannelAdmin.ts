/**
 * Channels at run time, for admins: list and read them (upstream keys,
 * header values and the user, password and query values of a base URL
 * masked, in answers and audit rows alike: a secret is shown in full only in
 * the request that sets it), create, change, delete and test them. Changing
 * where the keys go (`base_url`, `type`, `settings.headers`) needs the keys
 * given again in the same change; a test goes to the channel as stored. A
 * key sent back as the list shows it (masked, holding `…`) is refused by
 * its index (`keys[2]`), on create and change alike. Each change is written with its
 * keys and abilities and an audit row in one transaction, then the routing
 * index is rebuilt at once on this instance and the catalog version bumped so
 * other instances rebuild theirs within `CATALOG_POLL_SECONDS`. A test records
 * its time, latency and error on the channel.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { Page, PageRequest } from "../domain/Page.ts"
import { InvalidRequest, NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { Catalog } from "../storage/Catalog.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { type ChannelTest, HealthProber } from "../services/HealthProber.ts"
import type { SessionUser } from "./Sessions.ts"
import {
  type ChannelPatch,
  createdAudit,
  isRefusal,
  maskedKeyRefusal,
  type NewChannel,
  newChannelFields,
  placed,
  planUpdate,
  type Refusal,
  updatedAudit,
  urlRefusal
} from "./channels/ChannelChanges.ts"
import { channelPage, type ChannelQuery } from "./channels/ChannelListing.ts"
import { makeChannelStore } from "./channels/ChannelStore.ts"
import { type ChannelRow, type ChannelView, channelViewOf } from "./channels/ChannelViews.ts"

/** The masking of a channel's secrets (defined in `channels/ChannelMasking.ts`). */
export { MASKED, maskKey, maskSettings, maskUrl } from "./channels/ChannelMasking.ts"

/** A channel as `/api/channel` shows it, a new channel and a change (defined in `channels/`). */
export type { ChannelView } from "./channels/ChannelViews.ts"
export type { ChannelPatch, NewChannel } from "./channels/ChannelChanges.ts"
export type { ChannelQuery, ChannelSort } from "./channels/ChannelListing.ts"
export { CHANNEL_SORTS } from "./channels/ChannelListing.ts"

const refused = (refusal: Refusal | undefined) =>
  refusal === undefined ? Effect.void : Effect.fail(new InvalidRequest(refusal))

/** @category services */
export class ChannelAdmin extends Context.Service<ChannelAdmin, {
  readonly list: () => Effect.Effect<ReadonlyArray<ChannelView>, StorageUnavailable>
  /** One page of the channels `query` matches, filtered and sorted in SQL. */
  readonly search: (query: ChannelQuery, page: PageRequest) => Effect.Effect<Page<ChannelView>, StorageUnavailable>
  readonly get: (id: bigint) => Effect.Effect<ChannelView, NotFound | StorageUnavailable>
  readonly create: (
    caller: SessionUser,
    input: NewChannel
  ) => Effect.Effect<ChannelView, InvalidRequest | StorageUnavailable>
  readonly update: (
    caller: SessionUser,
    patch: ChannelPatch
  ) => Effect.Effect<ChannelView, InvalidRequest | NotFound | StorageUnavailable>
  readonly remove: (caller: SessionUser, id: bigint) => Effect.Effect<void, NotFound | StorageUnavailable>
  /** Tests the channel and records the outcome on it. */
  readonly test: (id: bigint) => Effect.Effect<ChannelTest, NotFound | StorageUnavailable>
}>()("sluice/accounts/ChannelAdmin") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    ChannelAdmin,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const store = makeChannelStore(sql)
      const catalog = yield* Catalog
      const router = yield* ChannelRouter
      const prober = yield* HealthProber

      const notFound = (id: bigint) => new NotFound({ what: "channel", id: String(id), param: "id" })
      const loadedKeys = (id: bigint) => catalog.snapshot().channels.get(Number(id))?.keys ?? []

      const viewOf = (row: ChannelRow): ChannelView =>
        channelViewOf(row, loadedKeys(row.id), router.health().find((view) => view.channelId === Number(row.id))?.state)

      const row = (id: bigint) =>
        Effect.flatMap(store.rows(id), (found) =>
          Option.match(Option.fromNullishOr(found[0]), {
            onNone: () => Effect.fail(notFound(id)),
            onSome: Effect.succeed
          }))

      const get = (id: bigint) => Effect.map(row(id), viewOf)

      const nameTaken = (name: string | undefined, except: bigint) =>
        name === undefined ? Effect.void : Effect.flatMap(
          store.nameTaken(name, except),
          (taken) => refused(taken ? { message: "A channel with this name exists.", param: "name" } : undefined)
        )

      const list = () => Effect.map(store.rows(undefined), (found) => found.map(viewOf))

      const search = (query: ChannelQuery, page: PageRequest) =>
        Effect.map(channelPage(sql, query, page), (found) => ({
          items: found.rows.map(viewOf),
          total: found.total,
          page: page.page,
          page_size: page.size
        }))

      const create = Effect.fn("ChannelAdmin.create")(function* (caller: SessionUser, given: NewChannel) {
        yield* refused(urlRefusal(given.base_url))
        const input = placed(given)
        if (isRefusal(input)) return yield* new InvalidRequest(input)
        yield* refused(maskedKeyRefusal(input.keys))
        yield* nameTaken(input.name, -1n)
        const id = yield* store.insert(caller, newChannelFields(input), input.keys, createdAudit(input))
        yield* catalog.changed
        // The row was written or checked just before: its absence would be a bug, so a defect.
        return yield* get(id).pipe(Effect.catchTag("NotFound", Effect.die))
      })

      const update = Effect.fn("ChannelAdmin.update")(function* (caller: SessionUser, patch: ChannelPatch) {
        const id = BigInt(patch.id)
        const current = yield* row(id)
        const before = viewOf(current)
        yield* refused(urlRefusal(patch.base_url))
        yield* refused(maskedKeyRefusal(patch.keys))
        yield* nameTaken(patch.name, id)
        const change = planUpdate(current, patch, loadedKeys(id).map((key) => key.key))
        if (isRefusal(change)) return yield* new InvalidRequest(change)
        yield* store.update(caller, id, change, before, updatedAudit(patch))
        yield* catalog.changed
        // The row was written or checked just before: its absence would be a bug, so a defect.
        return yield* get(id).pipe(Effect.catchTag("NotFound", Effect.die))
      })

      const remove = Effect.fn("ChannelAdmin.remove")(function* (caller: SessionUser, id: bigint) {
        const before = yield* get(id)
        yield* store.remove(caller, id, before)
        yield* catalog.changed
      })

      const test = Effect.fn("ChannelAdmin.test")(function* (id: bigint) {
        yield* get(id)
        const channel = catalog.snapshot().channels.get(Number(id))
        if (channel === undefined) return yield* notFound(id)
        const outcome = yield* prober.test(channel)
        yield* store.recordTest(id, outcome)
        return outcome
      })

      return ChannelAdmin.of({ list, search, get, create, update, remove, test })
    })
  )
}
