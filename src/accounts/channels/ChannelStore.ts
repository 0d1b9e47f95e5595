/**
 * The `channels` table as channel admin uses it: reading rows, the name
 * check, and each change written with its keys and abilities
 * (`writeChannelParts`) and its audit row in one transaction; a test's time,
 * latency and error. A statement that cannot run fails with `StorageUnavailable`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { writeChannelParts } from "../../config/ApplyBootstrap.ts"
import type { ChannelTest } from "../../services/HealthProber.ts"
import { writeAudit } from "../AuditLog.ts"
import type { SessionUser } from "../Sessions.ts"
import type { PlannedChange } from "./ChannelChanges.ts"
import type { ChannelFields, ChannelRow } from "./ChannelViews.ts"
import type { StorageUnavailable } from "../../errors/GatewayError.ts"
import { storageFailure } from "../../storage/StorageFailure.ts"

/**
 * Channel admin's SQL. `before` and `after` are what the audit row shows
 * (secrets already masked).
 *
 * @category models
 */
export interface ChannelStore {
  /** Every channel by id, or the one with `id` (none when there is no such channel). */
  readonly rows: (id: bigint | undefined) => Effect.Effect<ReadonlyArray<ChannelRow>, StorageUnavailable>
  /** Whether a channel other than `except` has the name `name`. */
  readonly nameTaken: (name: string, except: bigint) => Effect.Effect<boolean, StorageUnavailable>
  /** Inserts a channel with its keys, audited as created by `caller`; its id. */
  readonly insert: (
    caller: SessionUser,
    fields: ChannelFields,
    keys: ReadonlyArray<string>,
    after: unknown
  ) => Effect.Effect<bigint, StorageUnavailable>
  /** Writes a planned change of channel `id`, audited against `before`. */
  readonly update: (
    caller: SessionUser,
    id: bigint,
    change: PlannedChange,
    before: unknown,
    after: unknown
  ) => Effect.Effect<void, StorageUnavailable>
  /** Deletes channel `id` (its keys and abilities go with it), audited against `before`. */
  readonly remove: (caller: SessionUser, id: bigint, before: unknown) => Effect.Effect<void, StorageUnavailable>
  /** Records a test's outcome on channel `id`: now, its latency, and its message when it failed. */
  readonly recordTest: (id: bigint, outcome: ChannelTest) => Effect.Effect<void, StorageUnavailable>
}

const partsOf = (fields: ChannelFields, keys: ReadonlyArray<string>) => ({
  keys,
  groups: fields.groups,
  models: fields.models,
  priority: fields.priority,
  weight: fields.weight,
  enabled: fields.enabled
})

/** The channel store over `sql`. */
export const makeChannelStore = (sql: SqlClient.SqlClient): ChannelStore => ({
  rows: (id) =>
    sql<ChannelRow>`SELECT id, name, type, base_url AS "baseUrl", models, groups, priority, weight,
                    model_mapping AS "modelMapping", settings, enabled, tested_at AS "testedAt",
                    test_latency_ms AS "testLatencyMs", test_error AS "testError"
             FROM channels WHERE ${id === undefined ? sql`TRUE` : sql`id = ${id}`} ORDER BY id`.pipe(
      storageFailure("channels.rows")
    ),

  nameTaken: (name, except) =>
    sql<{ n: bigint }>`SELECT count(*) AS n FROM channels WHERE name = ${name} AND id <> ${except}`.pipe(
      Effect.map(([row]) => Number(row.n) > 0),
      storageFailure("channels.name_taken")
    ),

  insert: (caller, fields, keys, after) =>
    sql.withTransaction(Effect.gen(function* () {
      const [row] = yield* sql<{ id: bigint }>`
        INSERT INTO channels (name, type, base_url, models, groups, priority, weight, model_mapping, settings, enabled)
        VALUES (${fields.name}, ${fields.type}, ${fields.baseUrl}, ${[...fields.models]}::text[],
                ${[...fields.groups]}::text[], ${fields.priority}, ${fields.weight},
                ${JSON.stringify(fields.modelMapping)}, ${JSON.stringify(fields.settings)}, ${fields.enabled})
        RETURNING id`
      yield* writeChannelParts(sql, row.id, partsOf(fields, keys))
      yield* writeAudit(sql, {
        actor: caller,
        action: "channel.create",
        target: `channel:${row.id}`,
        before: undefined,
        after
      })
      return row.id
    })).pipe(storageFailure("channels.insert")),

  update: (caller, id, { fields, keys }, before, after) =>
    sql.withTransaction(Effect.gen(function* () {
      yield* sql`UPDATE channels SET name = ${fields.name}, type = ${fields.type}, base_url = ${fields.baseUrl},
          models = ${[...fields.models]}::text[], groups = ${[...fields.groups]}::text[],
          priority = ${fields.priority}, weight = ${fields.weight}, model_mapping = ${
        JSON.stringify(fields.modelMapping)
      },
          settings = ${JSON.stringify(fields.settings)}, enabled = ${fields.enabled}
        WHERE id = ${id}`
      yield* writeChannelParts(sql, id, partsOf(fields, keys))
      yield* writeAudit(sql, { actor: caller, action: "channel.update", target: `channel:${id}`, before, after })
    })).pipe(storageFailure("channels.update")),

  remove: (caller, id, before) =>
    sql.withTransaction(Effect.gen(function* () {
      yield* sql`DELETE FROM channels WHERE id = ${id}`
      yield* writeAudit(sql, { actor: caller, action: "channel.delete", target: `channel:${id}`, before, after: null })
    })).pipe(storageFailure("channels.remove")),

  recordTest: (id, outcome) =>
    sql`UPDATE channels SET tested_at = now(), test_latency_ms = ${outcome.latencyMs},
        test_error = ${outcome.ok ? null : outcome.message}
      WHERE id = ${id}`.pipe(Effect.asVoid, storageFailure("channels.record_test"))
})
