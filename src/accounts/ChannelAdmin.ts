/**
 * Channels at run time, for admins: list and read them (upstream keys,
 * header values and the user, password and query values of a base URL
 * masked, in answers and audit rows alike: a secret is shown in full only in
 * the request that sets it), create, change, delete and test them. Changing
 * where the keys go (`base_url`, `type`, `settings.headers`) needs the keys
 * given again in the same change; a test goes to the channel as stored. Each change is written with its
 * keys and abilities and an audit row in one transaction, then the routing
 * index is rebuilt at once on this instance and the catalog version bumped so
 * other instances rebuild theirs within `CATALOG_POLL_SECONDS`. A test records
 * its time, latency and error on the channel.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { ChannelSettings, ChannelSpec } from "../config/BootstrapFile.ts"
import { writeChannelParts } from "../config/ApplyBootstrap.ts"
import { InvalidRequest, NotFound } from "../errors/GatewayError.ts"
import { epochSeconds } from "../domain/Page.ts"
import { Catalog } from "../storage/Catalog.ts"
import { writeAudit } from "./AuditLog.ts"
import { ChannelRouter, type HealthView } from "../services/ChannelRouter.ts"
import { type ChannelTest, HealthProber } from "../services/HealthProber.ts"
import type { SessionUser } from "./Sessions.ts"

/** A channel as `/api/channel` shows it (keys masked; times in epoch seconds). @category models */
export interface ChannelView {
  readonly id: number
  readonly name: string
  readonly type: string
  readonly base_url: string
  readonly models: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly model_mapping: Readonly<Record<string, string>>
  readonly settings: unknown
  readonly status: "enabled" | "disabled"
  readonly keys: ReadonlyArray<{
    readonly position: number
    readonly key: string
    readonly enabled: boolean
    readonly disabled_reason: string | null
  }>
  /** This instance's view: healthy, cooling or disabled. */
  readonly health: HealthView["state"] | "unknown"
  readonly tested_at: number | null
  readonly test_latency_ms: number | null
  readonly test_error: string | null
}

/** A new channel: the bootstrap file's channel fields. @category models */
export type NewChannel = typeof ChannelSpec.Type

/** A change: `id` and any channel field; `keys` replaces the list. @category models */
export type ChannelPatch = { readonly id: number } & Partial<NewChannel>

interface Row {
  readonly id: bigint
  readonly name: string
  readonly type: string
  readonly baseUrl: string
  readonly models: Array<string>
  readonly groups: Array<string>
  readonly priority: number
  readonly weight: number
  readonly modelMapping: Record<string, string>
  readonly settings: typeof ChannelSettings.Type
  readonly enabled: boolean
  readonly testedAt: Date | null
  readonly testLatencyMs: number | null
  readonly testError: string | null
}

/**
 * What may be shown of an upstream key: its first 3 and last 4 characters
 * when it is long enough that they give little away, else nothing.
 *
 * @category masking
 */
export const maskKey = (key: string): string => key.length >= 20 ? `${key.slice(0, 3)}…${key.slice(-4)}` : "…"

/** What a masked header value or URL credential shows. @category masking */
export const MASKED = "…"

/**
 * Settings as an admin answer or an audit row shows them: every header value
 * (an `api-key`, a proxy token) replaced by `…`.
 *
 * @category masking
 */
export const maskSettings = (settings: typeof ChannelSettings.Type | undefined): unknown =>
  settings?.headers === undefined
    ? settings
    : { ...settings, headers: Object.fromEntries(Object.keys(settings.headers).map((name) => [name, MASKED])) }

/**
 * A base URL as an admin answer or an audit row shows it: user and password
 * (`https://user:pass@host`) and query values replaced by `…`; text that is
 * not a URL is shown as `…`.
 *
 * @category masking
 */
export const maskUrl = (value: string): string => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return MASKED
  }
  const hasCredentials = url.username !== "" || url.password !== ""
  if (!hasCredentials && url.search === "") return value
  const query = [...url.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=${MASKED}`).join("&")
  // A URL written without a path keeps none ("http://host?x" is not shown as "http://host/?x").
  const path = url.pathname === "/" && !/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\//i.test(value) ? "" : url.pathname
  return `${url.protocol}//${hasCredentials ? `${MASKED}@` : ""}${url.host}${path}${query === "" ? "" : `?${query}`}`
}

/**
 * The headers a change asks for: a value sent back as `…` (as the admin
 * answer showed it) keeps the stored value of that header.
 */
const mergeHeaders = (
  given: Readonly<Record<string, string>> | undefined,
  stored: Readonly<Record<string, string>> | undefined
): Record<string, string> | undefined =>
  given === undefined ? undefined : Object.fromEntries(
    Object.entries(given).map(([name, value]) => [name, value === MASKED ? stored?.[name] ?? "" : value])
  )

const sameHeaders = (
  left: Readonly<Record<string, string>> | undefined,
  right: Readonly<Record<string, string>> | undefined
): boolean => {
  const a = Object.entries(left ?? {}).sort(([x], [y]) => x < y ? -1 : 1)
  const b = Object.entries(right ?? {}).sort(([x], [y]) => x < y ? -1 : 1)
  return a.length === b.length && a.every(([name, value], index) => b[index]![0] === name && b[index]![1] === value)
}

const badUrl = (value: string | undefined) => {
  if (value === undefined) return Effect.void
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
    ? Effect.void
    : Effect.fail(new InvalidRequest({ message: "base_url must be an http or https URL.", param: "base_url" }))
}

/** @category services */
export class ChannelAdmin extends Context.Service<ChannelAdmin, {
  readonly list: () => Effect.Effect<ReadonlyArray<ChannelView>>
  readonly get: (id: bigint) => Effect.Effect<ChannelView, NotFound>
  readonly create: (caller: SessionUser, input: NewChannel) => Effect.Effect<ChannelView, InvalidRequest>
  readonly update: (caller: SessionUser, patch: ChannelPatch) => Effect.Effect<ChannelView, InvalidRequest | NotFound>
  readonly remove: (caller: SessionUser, id: bigint) => Effect.Effect<void, NotFound>
  /** Tests the channel and records the outcome on it. */
  readonly test: (id: bigint) => Effect.Effect<ChannelTest, NotFound>
}>()("sluice/services/ChannelAdmin") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    ChannelAdmin,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const catalog = yield* Catalog
      const router = yield* ChannelRouter
      const prober = yield* HealthProber

      const rows = (id: bigint | undefined) =>
        sql<Row>`SELECT id, name, type, base_url AS "baseUrl", models, groups, priority, weight,
                        model_mapping AS "modelMapping", settings, enabled, tested_at AS "testedAt",
                        test_latency_ms AS "testLatencyMs", test_error AS "testError"
                 FROM channels WHERE ${id === undefined ? sql`TRUE` : sql`id = ${id}`} ORDER BY id`.pipe(Effect.orDie)

      const viewOf = (row: Row): ChannelView => {
        const id = Number(row.id)
        const loaded = catalog.snapshot().channels.get(id)
        const health = router.health().find((view) => view.channelId === id)
        return {
          id,
          name: row.name,
          type: row.type,
          base_url: maskUrl(row.baseUrl),
          models: row.models,
          groups: row.groups,
          priority: row.priority,
          weight: row.weight,
          model_mapping: row.modelMapping ?? {},
          settings: maskSettings(row.settings ?? {}),
          status: row.enabled ? "enabled" : "disabled",
          keys: (loaded?.keys ?? []).map((key) => ({
            position: key.position,
            key: maskKey(key.key),
            enabled: key.enabled,
            disabled_reason: key.disabledReason
          })),
          health: health?.state ?? "unknown",
          tested_at: epochSeconds(row.testedAt),
          test_latency_ms: row.testLatencyMs,
          test_error: row.testError
        }
      }

      const get = (id: bigint) =>
        Effect.flatMap(rows(id), (found) =>
          Option.match(Option.fromNullishOr(found[0]), {
            onNone: () => Effect.fail(new NotFound({ what: "channel", id: String(id), param: "id" })),
            onSome: (row) => Effect.succeed(viewOf(row))
          }))

      const nameTaken = (name: string | undefined, except: bigint) =>
        name === undefined ? Effect.void : sql<{ n: bigint }>`
          SELECT count(*) AS n FROM channels WHERE name = ${name} AND id <> ${except}`.pipe(
          Effect.orDie,
          Effect.flatMap(([row]) =>
            Number(row.n) > 0
              ? Effect.fail(new InvalidRequest({ message: "A channel with this name exists.", param: "name" }))
              : Effect.void
          )
        )

      const list = () => Effect.map(rows(undefined), (found) => found.map(viewOf))

      const create = Effect.fn("ChannelAdmin.create")(function* (caller: SessionUser, input: NewChannel) {
        yield* badUrl(input.base_url)
        yield* nameTaken(input.name, -1n)
        const groups = input.groups ?? ["default"]
        const priority = input.priority ?? 0
        const weight = input.weight ?? 1
        const enabled = input.enabled ?? true
        const id = yield* sql.withTransaction(Effect.gen(function* () {
          const [row] = yield* sql<{ id: bigint }>`
            INSERT INTO channels (name, type, base_url, models, groups, priority, weight, model_mapping, settings, enabled)
            VALUES (${input.name}, ${input.type}, ${input.base_url}, ${[...input.models]}::text[],
                    ${[...groups]}::text[], ${priority}, ${weight}, ${JSON.stringify(input.model_mapping ?? {})},
                    ${JSON.stringify(input.settings ?? {})}, ${enabled})
            RETURNING id`
          yield* writeChannelParts(sql, row.id, {
            keys: input.keys,
            groups,
            models: input.models,
            priority,
            weight,
            enabled
          })
          const { keys: _keys, ...shown } = input
          yield* writeAudit(sql, {
            actor: caller,
            action: "channel.create",
            target: `channel:${row.id}`,
            before: undefined,
            after: {
              ...shown,
              base_url: maskUrl(input.base_url),
              ...(input.settings === undefined ? {} : { settings: maskSettings(input.settings) }),
              keys: input.keys.map(maskKey)
            }
          })
          return row.id
        })).pipe(Effect.orDie)
        yield* catalog.changed
        return yield* get(id).pipe(Effect.orDie)
      })

      const update = Effect.fn("ChannelAdmin.update")(function* (caller: SessionUser, patch: ChannelPatch) {
        const id = BigInt(patch.id)
        const before = yield* get(id)
        yield* badUrl(patch.base_url)
        yield* nameTaken(patch.name, id)
        const [current] = yield* rows(id)
        // A base URL sent back as the admin answer showed it (masked) is no change.
        const baseUrl = patch.base_url === undefined || patch.base_url === maskUrl(current.baseUrl)
          ? current.baseUrl
          : patch.base_url
        const headers = mergeHeaders(patch.settings?.headers, current.settings?.headers)
        const settings = patch.settings === undefined
          ? current.settings
          : { ...patch.settings, ...(headers === undefined ? {} : { headers }) }
        // Where the stored keys go (host, wire format, headers sent with them) changes only with the keys given
        // again: otherwise an admin could point a channel at a host of theirs and test it to read the keys.
        const rehomed = baseUrl !== current.baseUrl || (patch.type !== undefined && patch.type !== current.type)
        const moved = rehomed || !sameHeaders(settings?.headers, current.settings?.headers)
        // The stored header values (tokens) do not follow a channel to another host or wire format either.
        const keptHeaders = Object.keys(current.settings?.headers ?? {}).length > 0 &&
          (patch.settings?.headers === undefined ||
            Object.values(patch.settings.headers).some((value) => value === MASKED))
        if (rehomed && keptHeaders) {
          return yield* new InvalidRequest({
            message: "Changing base_url or type needs the channel's settings.headers given again.",
            param: "settings.headers"
          })
        }
        if (moved && patch.keys === undefined) {
          return yield* new InvalidRequest({
            message: "Changing base_url, type or settings.headers needs the channel's keys given again.",
            param: "keys"
          })
        }
        const keys = patch.keys ?? catalog.snapshot().channels.get(Number(id))?.keys.map((key) => key.key) ?? []
        if (keys.length === 0) {
          return yield* new InvalidRequest({ message: "A channel needs at least one key.", param: "keys" })
        }
        const next = {
          name: patch.name ?? current.name,
          type: patch.type ?? current.type,
          baseUrl,
          models: patch.models ?? current.models,
          groups: patch.groups ?? current.groups,
          priority: patch.priority ?? current.priority,
          weight: patch.weight ?? current.weight,
          modelMapping: patch.model_mapping ?? current.modelMapping,
          settings,
          enabled: patch.enabled ?? current.enabled
        }
        yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`UPDATE channels SET name = ${next.name}, type = ${next.type}, base_url = ${next.baseUrl},
              models = ${[...next.models]}::text[], groups = ${[...next.groups]}::text[], priority = ${next.priority},
              weight = ${next.weight}, model_mapping = ${JSON.stringify(next.modelMapping)},
              settings = ${JSON.stringify(next.settings)}, enabled = ${next.enabled}
            WHERE id = ${id}`
          yield* writeChannelParts(sql, id, {
            keys,
            groups: next.groups,
            models: next.models,
            priority: next.priority,
            weight: next.weight,
            enabled: next.enabled
          })
          const { keys: newKeys, ...shown } = patch
          yield* writeAudit(sql, {
            actor: caller,
            action: "channel.update",
            target: `channel:${id}`,
            before,
            after: {
              ...shown,
              ...(patch.base_url === undefined ? {} : { base_url: maskUrl(patch.base_url) }),
              ...(patch.settings === undefined ? {} : { settings: maskSettings(patch.settings) }),
              ...(newKeys === undefined ? {} : { keys: newKeys.map(maskKey) })
            }
          })
        })).pipe(Effect.orDie)
        yield* catalog.changed
        return yield* get(id).pipe(Effect.orDie)
      })

      const remove = Effect.fn("ChannelAdmin.remove")(function* (caller: SessionUser, id: bigint) {
        const before = yield* get(id)
        yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`DELETE FROM channels WHERE id = ${id}`
          yield* writeAudit(sql, {
            actor: caller,
            action: "channel.delete",
            target: `channel:${id}`,
            before,
            after: null
          })
        })).pipe(Effect.orDie)
        yield* catalog.changed
      })

      const test = Effect.fn("ChannelAdmin.test")(function* (id: bigint) {
        yield* get(id)
        const channel = catalog.snapshot().channels.get(Number(id))
        if (channel === undefined) return yield* new NotFound({ what: "channel", id: String(id), param: "id" })
        const outcome = yield* prober.test(channel)
        yield* sql`UPDATE channels SET tested_at = now(), test_latency_ms = ${outcome.latencyMs},
            test_error = ${outcome.ok ? null : outcome.message}
          WHERE id = ${id}`.pipe(Effect.orDie)
        return outcome
      })

      return ChannelAdmin.of({ list, get, create, update, remove, test })
    })
  )
}
