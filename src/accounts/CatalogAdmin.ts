/**
 * Group ratios and model prices at run time, for admins: read them, and set
 * one group or one model's prices (upserted whole, with an audit row, in one
 * transaction; then the catalog reloads here and the version bump tells the
 * other instances). Prices are USD per 1M tokens (`input`, `output`,
 * `cached_input`, `cache_write`), USD (`per_image`, `per_second`, `per_search`) or USD per 1M characters
 * (`per_1m_characters`), USD per 1M audio tokens (`audio_input`, `audio_output`, `cached_audio_input`), USD per 1M tokens of a
 * delegated batch's lines (`batch_input`, `batch_output`), as in the
 * bootstrap file; a restart re-applies the file's groups and models over
 * what was set here.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { GroupSpec, ModelSpec } from "../config/BootstrapFile.ts"
import { Catalog } from "../storage/Catalog.ts"
import { writeAudit } from "./AuditLog.ts"
import type { SessionUser } from "./Sessions.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** A group as shown and set. @category models */
export type GroupView = { readonly name: string } & typeof GroupSpec.Type

/** A model's prices as shown and set (absent price = none). @category models */
export type PriceView = { readonly model: string } & typeof ModelSpec.Type

const numberOr = (value: string | null): number | undefined => value === null ? undefined : Number(value)

/** @category services */
export class CatalogAdmin extends Context.Service<CatalogAdmin, {
  readonly groups: () => Effect.Effect<ReadonlyArray<GroupView>, StorageUnavailable>
  readonly putGroup: (caller: SessionUser, group: GroupView) => Effect.Effect<GroupView, StorageUnavailable>
  readonly prices: () => Effect.Effect<ReadonlyArray<PriceView>, StorageUnavailable>
  readonly putPrice: (caller: SessionUser, price: PriceView) => Effect.Effect<PriceView, StorageUnavailable>
}>()("sluice/accounts/CatalogAdmin") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    CatalogAdmin,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const catalog = yield* Catalog

      const groups = () =>
        sql<{ name: string; ratio: string; limits: GroupView["limits"] | null }>`
          SELECT name, ratio::text AS ratio, limits FROM groups ORDER BY name`.pipe(
          Effect.map((rows) =>
            rows.map((row): GroupView => ({
              name: row.name,
              ratio: Number(row.ratio),
              ...(row.limits === null ? {} : { limits: row.limits })
            }))
          ),
          storageFailure("catalog_admin.groups")
        )

      const putGroup = Effect.fn("CatalogAdmin.putGroup")(function* (caller: SessionUser, group: GroupView) {
        const before = (yield* groups()).find((row) => row.name === group.name) ?? null
        const limits = group.limits === undefined ? null : JSON.stringify(group.limits)
        yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`INSERT INTO groups (name, ratio, limits) VALUES (${group.name}, ${group.ratio}, ${limits})
            ON CONFLICT (name) DO UPDATE SET ratio = EXCLUDED.ratio, limits = EXCLUDED.limits`
          yield* writeAudit(sql, {
            actor: caller,
            action: "group.put",
            target: `group:${group.name}`,
            before,
            after: group
          })
        })).pipe(storageFailure("catalog_admin.put_group"))
        yield* catalog.changed
        return group
      })

      const prices = () =>
        sql<{
          model: string
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
        }>`SELECT name AS model, input_price::text AS input, output_price::text AS output,
                  cached_input_price::text AS "cachedInput", cache_write_price::text AS "cacheWrite",
                  per_image::text AS "perImage", per_second::text AS "perSecond",
                  per_1m_characters::text AS "perMillionCharacters", per_search::text AS "perSearch",
                  audio_input_price::text AS "audioInput", audio_output_price::text AS "audioOutput",
                  cached_audio_input_price::text AS "cachedAudioInput", batch_input_price::text AS "batchInput",
                  batch_output_price::text AS "batchOutput", family, free
           FROM models ORDER BY name`.pipe(
          Effect.map((rows) =>
            rows.map((row): PriceView => {
              const fields = {
                input: numberOr(row.input),
                output: numberOr(row.output),
                cached_input: numberOr(row.cachedInput),
                cache_write: numberOr(row.cacheWrite),
                per_image: numberOr(row.perImage),
                per_second: numberOr(row.perSecond),
                per_1m_characters: numberOr(row.perMillionCharacters),
                per_search: numberOr(row.perSearch),
                audio_input: numberOr(row.audioInput),
                audio_output: numberOr(row.audioOutput),
                cached_audio_input: numberOr(row.cachedAudioInput),
                batch_input: numberOr(row.batchInput),
                batch_output: numberOr(row.batchOutput),
                family: row.family ?? undefined
              }
              return {
                model: row.model,
                ...Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)),
                free: row.free
              }
            })
          ),
          storageFailure("catalog_admin.prices")
        )

      const putPrice = Effect.fn("CatalogAdmin.putPrice")(function* (caller: SessionUser, price: PriceView) {
        const before = (yield* prices()).find((row) => row.model === price.model) ?? null
        yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`INSERT INTO models
              (name, input_price, output_price, cached_input_price, cache_write_price, per_image, per_second,
               per_1m_characters, per_search, audio_input_price, audio_output_price, cached_audio_input_price,
               batch_input_price, batch_output_price, family, free)
            VALUES (${price.model}, ${price.input ?? null}, ${price.output ?? null}, ${price.cached_input ?? null},
                    ${price.cache_write ?? null}, ${price.per_image ?? null}, ${price.per_second ?? null},
                    ${price.per_1m_characters ?? null}, ${price.per_search ?? null},
                    ${price.audio_input ?? null}, ${price.audio_output ?? null}, ${price.cached_audio_input ?? null},
                    ${price.batch_input ?? null}, ${price.batch_output ?? null},
                    ${price.family ?? null}, ${price.free ?? false})
            ON CONFLICT (name) DO UPDATE SET input_price = EXCLUDED.input_price,
              output_price = EXCLUDED.output_price, cached_input_price = EXCLUDED.cached_input_price,
              cache_write_price = EXCLUDED.cache_write_price, per_image = EXCLUDED.per_image,
              per_second = EXCLUDED.per_second, per_1m_characters = EXCLUDED.per_1m_characters,
              per_search = EXCLUDED.per_search, audio_input_price = EXCLUDED.audio_input_price,
              audio_output_price = EXCLUDED.audio_output_price,
              cached_audio_input_price = EXCLUDED.cached_audio_input_price,
              batch_input_price = EXCLUDED.batch_input_price, batch_output_price = EXCLUDED.batch_output_price,
              family = EXCLUDED.family,
              free = EXCLUDED.free`
          yield* writeAudit(sql, {
            actor: caller,
            action: "pricing.put",
            target: `model:${price.model}`,
            before,
            after: price
          })
        })).pipe(storageFailure("catalog_admin.put_price"))
        yield* catalog.changed
        return (yield* prices()).find((row) => row.model === price.model) ?? price
      })

      return CatalogAdmin.of({ groups, putGroup, prices, putPrice })
    })
  )
}
