/**
 * The read-mostly tables held in memory: group ratios and limits, model
 * prices, channels with their keys, and the (group, model) → abilities index.
 * Loaded at start and after every change, so the hot path reads no table.
 * An admin change on this instance reloads at once and bumps the row of
 * `catalog_version`; every instance reads that one row every
 * `CATALOG_POLL_SECONDS` and reloads when it moved, so instances sharing the
 * database follow within seconds.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Ref, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { ChannelSettings, LimitsSpec } from "../config/BootstrapFile.ts"
import { defaultImageFamily, type ImageFamily, isImageFamily } from "../formats/images/ImageFamilies.ts"
import { type Price, toFixed } from "../domain/Pricing.ts"
import { registerKnownSecrets } from "../domain/Redact.ts"
import { defaultVideoFamily, isVideoFamily, type VideoFamily } from "../formats/videos/VideoFamilies.ts"

/** Rate limits as configured. @category models */
export type Limits = typeof LimitsSpec.Type

/** The channel types, each with an adapter in `src/upstreams/`. @category models */
export type { ChannelType } from "../domain/ChannelType.ts"
import type { ChannelType } from "../domain/ChannelType.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "./StorageFailure.ts"

/** One upstream key of a channel (`position` is its place in the file's list). @category models */
export interface ChannelKey {
  readonly position: number
  readonly key: string
  readonly enabled: boolean
  readonly disabledReason: string | null
}

/** A configured upstream channel. @category models */
export interface Channel {
  readonly id: number
  readonly name: string
  readonly type: ChannelType
  readonly baseUrl: string
  readonly models: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly modelMapping: Readonly<Record<string, string>>
  readonly settings: typeof ChannelSettings.Type
  readonly enabled: boolean
  readonly keys: ReadonlyArray<ChannelKey>
}

/** A channel's right to serve a model for a group, with its tier (priority) and weight. @category models */
export interface Ability {
  readonly channelId: number
  readonly priority: number
  readonly weight: number
}

/** A group: its price ratio (fixed-point, see `Pricing.toFixed`) and default limits. @category models */
export interface Group {
  readonly ratio: bigint
  readonly limits: Limits | undefined
}

/** Everything the hot path reads. @category models */
export interface Snapshot {
  readonly groups: ReadonlyMap<string, Group>
  readonly prices: ReadonlyMap<string, Price>
  /** model → the image family the bootstrap file gave it (see `imageFamilyOf` for the default by name) */
  readonly families: ReadonlyMap<string, ImageFamily>
  /** model → the video family the bootstrap file gave it (see `videoFamilyOf` for the default by name) */
  readonly videoFamilies: ReadonlyMap<string, VideoFamily>
  readonly channels: ReadonlyMap<number, Channel>
  /** group → model → enabled abilities */
  readonly abilities: ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<Ability>>>
}

/** How often each instance checks the catalog version for another instance's change. @category constants */
export const CATALOG_POLL_SECONDS = 2

const optionalFixed = (value: string | null): bigint | undefined => (value === null ? undefined : toFixed(value))

/** @category services */
export class Catalog extends Context.Service<Catalog, {
  /** The current snapshot (a plain read, no I/O). */
  readonly snapshot: () => Snapshot
  /** Reloads every table; `StorageUnavailable` when they cannot be read (the snapshot is then kept). */
  readonly reload: Effect.Effect<void, StorageUnavailable>
  /**
   * After a change written to the tables: bumps the catalog version (other instances reload) and reloads;
   * `StorageUnavailable` when the database cannot be reached.
   */
  readonly changed: Effect.Effect<void, StorageUnavailable>
}>()("sluice/storage/Catalog") {
  /** Backed by SQL; loads once when built, then follows the catalog version in the background. */
  static readonly layer = Layer.effect(
    Catalog,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // This catalog's entry in the registry of secrets masked by value, dropped when the layer closes.
      const owner = {}
      yield* Effect.addFinalizer(() => Effect.sync(() => registerKnownSecrets(owner, [])))
      const load = Effect.gen(function* () {
        const groupRows = yield* sql<{ name: string; ratio: string; limits: Limits | null }>`
          SELECT name, ratio::text AS ratio, limits FROM groups`
        const modelRows = yield* sql<{
          name: string
          input: string | null
          output: string | null
          cachedInput: string | null
          cacheWrite: string | null
          perImage: string | null
          perSecond: string | null
          perMillionCharacters: string | null
          perSearch: string | null
          audioInput: string | null
          audioOutput: string | null
          cachedAudioInput: string | null
          batchInput: string | null
          batchOutput: string | null
          family: string | null
          free: boolean
        }>`SELECT name, input_price::text AS input, output_price::text AS output,
                  cached_input_price::text AS "cachedInput", cache_write_price::text AS "cacheWrite", per_image::text AS "perImage",
                  per_second::text AS "perSecond", per_1m_characters::text AS "perMillionCharacters",
                  per_search::text AS "perSearch", audio_input_price::text AS "audioInput",
                  audio_output_price::text AS "audioOutput", cached_audio_input_price::text AS "cachedAudioInput",
                  batch_input_price::text AS "batchInput", batch_output_price::text AS "batchOutput",
                  family, free FROM models`
        const channelRows = yield* sql<{
          id: bigint
          name: string
          type: ChannelType
          baseUrl: string
          models: Array<string>
          priority: number
          weight: number
          modelMapping: Record<string, string>
          settings: typeof ChannelSettings.Type
          enabled: boolean
        }>`SELECT id, name, type, base_url AS "baseUrl", models, priority, weight, model_mapping AS "modelMapping",
                  settings, enabled FROM channels`
        const keyRows = yield* sql<{
          channelId: bigint
          position: number
          key: string
          enabled: boolean
          disabledReason: string | null
        }>`SELECT channel_id AS "channelId", position, key, enabled, disabled_reason AS "disabledReason"
           FROM channel_keys ORDER BY channel_id, position`
        const abilityRows = yield* sql<{
          group: string
          model: string
          channelId: bigint
          priority: number
          weight: number
        }>`SELECT group_name AS "group", model, channel_id AS "channelId", priority, weight
           FROM abilities WHERE enabled`
        const keysByChannel = new Map<number, Array<ChannelKey>>()
        for (const row of keyRows) {
          const id = Number(row.channelId)
          const list = keysByChannel.get(id) ?? []
          list.push({ position: row.position, key: row.key, enabled: row.enabled, disabledReason: row.disabledReason })
          keysByChannel.set(id, list)
        }
        const channels = new Map<number, Channel>()
        for (const row of channelRows) {
          const id = Number(row.id)
          channels.set(id, {
            id,
            name: row.name,
            type: row.type,
            baseUrl: row.baseUrl.replace(/\/+$/, ""),
            models: row.models,
            priority: row.priority,
            weight: row.weight,
            modelMapping: row.modelMapping ?? {},
            settings: row.settings ?? {},
            enabled: row.enabled,
            keys: keysByChannel.get(id) ?? []
          })
        }
        const abilities = new Map<string, Map<string, Array<Ability>>>()
        for (const row of abilityRows) {
          const byModel = abilities.get(row.group) ?? new Map<string, Array<Ability>>()
          const list = byModel.get(row.model) ?? []
          list.push({ channelId: Number(row.channelId), priority: row.priority, weight: row.weight })
          byModel.set(row.model, list)
          abilities.set(row.group, byModel)
        }
        // Vendor text is masked by the value of every key and header this catalog configures (Redact.ts), and by
        // each half of a kling key (`accessKey|secretKey`), which the vendor could only ever quote apart.
        registerKnownSecrets(
          owner,
          [...channels.values()].flatMap((channel) => [
            ...channel.keys.flatMap((key) => channel.type === "kling" ? [key.key, ...key.key.split("|")] : [key.key]),
            ...Object.values(channel.settings.headers ?? {})
          ])
        )
        const snapshot: Snapshot = {
          groups: new Map(
            groupRows.map((row) => [row.name, { ratio: toFixed(row.ratio), limits: row.limits ?? undefined }])
          ),
          prices: new Map(modelRows.map((row) => [row.name, {
            input: optionalFixed(row.input),
            output: optionalFixed(row.output),
            cachedInput: optionalFixed(row.cachedInput),
            cacheWrite: optionalFixed(row.cacheWrite),
            perImage: optionalFixed(row.perImage),
            perSecond: optionalFixed(row.perSecond),
            perMillionCharacters: optionalFixed(row.perMillionCharacters),
            perSearch: optionalFixed(row.perSearch),
            audioInput: optionalFixed(row.audioInput),
            audioOutput: optionalFixed(row.audioOutput),
            cachedAudioInput: optionalFixed(row.cachedAudioInput),
            batchInput: optionalFixed(row.batchInput),
            batchOutput: optionalFixed(row.batchOutput),
            free: row.free
          }])),
          families: new Map(
            modelRows.flatMap((row) =>
              isImageFamily(row.family ?? undefined) ? [[row.name, row.family as ImageFamily]] : []
            )
          ),
          videoFamilies: new Map(
            modelRows.flatMap((row) =>
              isVideoFamily(row.family ?? undefined) ? [[row.name, row.family as VideoFamily]] : []
            )
          ),
          channels,
          abilities
        }
        return snapshot
      }).pipe(storageFailure("catalog.load"))
      const readVersion = sql<{ version: bigint }>`SELECT version FROM catalog_version WHERE id = 1`.pipe(
        Effect.map((rows) => BigInt(rows[0]?.version ?? 0)),
        storageFailure("catalog.version")
      )
      // At start, before serving: a catalog that cannot be read is a gateway that cannot start, a defect.
      let seen = yield* Effect.orDie(readVersion)
      const state = yield* Ref.make(yield* Effect.orDie(load))
      const reload = Effect.flatMap(load, (next) => Ref.set(state, next))
      const changed = Effect.gen(function* () {
        const [row] = yield* sql<{ version: bigint }>`
          UPDATE catalog_version SET version = version + 1 WHERE id = 1 RETURNING version`.pipe(
          storageFailure("catalog.change")
        )
        seen = BigInt(row.version)
        yield* reload
      })
      yield* Effect.gen(function* () {
        const version = yield* readVersion
        if (version === seen) return
        seen = version
        yield* reload
      }).pipe(
        Effect.catchCause((cause) => Effect.logWarning("Catalog version check failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.seconds(CATALOG_POLL_SECONDS))),
        Effect.forkScoped
      )
      return Catalog.of({ snapshot: () => Ref.getUnsafe(state), reload, changed })
    })
  )
}

/**
 * The image family of `model`: the bootstrap file's, else the default for
 * its name (`dall-e-2`, `dall-e-3`, `gpt-image-*`), else `undefined`.
 *
 * @category models
 */
export const imageFamilyOf = (snapshot: Snapshot, model: string): ImageFamily | undefined =>
  snapshot.families.get(model) ?? defaultImageFamily(model)

/**
 * The video family of `model`: the bootstrap file's, else the default for its
 * name (`videoa-*` → `videoa`, `mini-2.0` → `mini-2.0`, else `openai-video`).
 *
 * @category models
 */
export const videoFamilyOf = (snapshot: Snapshot, model: string): VideoFamily =>
  snapshot.videoFamilies.get(model) ?? defaultVideoFamily(model)
