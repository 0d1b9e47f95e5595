/**
 * Writes a decoded bootstrap file to the store, in one transaction: groups,
 * models and channels (with their keys and abilities) are upserted; users and
 * tokens are created when absent and never reset, so a restart keeps usage.
 *
 * @since 0.1.0
 */
import bcrypt from "bcryptjs"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { hashKey, keyPrefix } from "../domain/KeyHash.ts"
import { budgetsJson, fromSpec } from "../domain/BudgetPeriod.ts"
import { baseUrlOf } from "../domain/ChannelType.ts"
import type { BootstrapFile } from "./BootstrapFile.ts"

const toTimestamp = (value: string | number | undefined): Date | null => {
  if (value === undefined) return null
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value)
  return Number.isNaN(date.getTime()) ? null : date
}

/**
 * Applies `file`. Storage failures are defects (nothing is written: the
 * transaction rolls back).
 *
 * @category config
 */
export const applyBootstrap = Effect.fn("applyBootstrap")(function* (file: BootstrapFile) {
  const sql = yield* SqlClient.SqlClient
  const groupNames = Object.keys(file.groups ?? {})
  const write = Effect.gen(function* () {
    for (const [name, group] of Object.entries(file.groups ?? {})) {
      const limits = group.limits === undefined ? null : JSON.stringify(group.limits)
      yield* sql`INSERT INTO groups (name, ratio, limits) VALUES (${name}, ${group.ratio}, ${limits})
        ON CONFLICT (name) DO UPDATE SET ratio = EXCLUDED.ratio, limits = EXCLUDED.limits`
    }
    for (const [name, model] of Object.entries(file.models ?? {})) {
      yield* sql`INSERT INTO models
          (name, input_price, output_price, cached_input_price, cache_write_price, per_image, per_second,
           per_1m_characters, per_search, audio_input_price, audio_output_price, cached_audio_input_price,
           batch_input_price, batch_output_price, family, free)
        VALUES (${name}, ${model.input ?? null}, ${model.output ?? null}, ${model.cached_input ?? null},
                ${model.cache_write ?? null}, ${model.per_image ?? null}, ${model.per_second ?? null},
                ${model.per_1m_characters ?? null}, ${model.per_search ?? null},
                ${model.audio_input ?? null}, ${model.audio_output ?? null}, ${model.cached_audio_input ?? null},
                ${model.batch_input ?? null}, ${model.batch_output ?? null},
                ${model.family ?? null}, ${model.free ?? false})
        ON CONFLICT (name) DO UPDATE SET input_price = EXCLUDED.input_price, output_price = EXCLUDED.output_price,
          cached_input_price = EXCLUDED.cached_input_price, cache_write_price = EXCLUDED.cache_write_price,
          per_image = EXCLUDED.per_image, per_second = EXCLUDED.per_second,
          per_1m_characters = EXCLUDED.per_1m_characters, per_search = EXCLUDED.per_search, family = EXCLUDED.family,
          audio_input_price = EXCLUDED.audio_input_price, audio_output_price = EXCLUDED.audio_output_price,
          cached_audio_input_price = EXCLUDED.cached_audio_input_price,
          batch_input_price = EXCLUDED.batch_input_price, batch_output_price = EXCLUDED.batch_output_price,
          free = EXCLUDED.free`
    }
    for (const channel of file.channels ?? []) {
      const groups = channel.groups ?? (groupNames.length > 0 ? groupNames : ["default"])
      const priority = channel.priority ?? 0
      const weight = channel.weight ?? 1
      // `parseBootstrap` refuses a channel without a base URL whose type has no default; a file built in code too.
      const baseUrl = baseUrlOf(channel.type, channel.base_url, channel.settings)
      if (baseUrl === undefined) return yield* Effect.die(new Error(`Channel ${channel.name} has no base_url.`))
      const rows = yield* sql<{ readonly id: bigint }>`
        INSERT INTO channels (name, type, base_url, models, groups, priority, weight, model_mapping, settings, enabled)
        VALUES (${channel.name}, ${channel.type}, ${baseUrl}, ${[...channel.models]}::text[],
                ${[...groups]}::text[], ${priority}, ${weight}, ${JSON.stringify(channel.model_mapping ?? {})},
                ${JSON.stringify(channel.settings ?? {})}, ${channel.enabled ?? true})
        ON CONFLICT (name) DO UPDATE SET type = EXCLUDED.type, base_url = EXCLUDED.base_url,
          models = EXCLUDED.models, groups = EXCLUDED.groups, priority = EXCLUDED.priority,
          weight = EXCLUDED.weight, model_mapping = EXCLUDED.model_mapping, settings = EXCLUDED.settings,
          enabled = EXCLUDED.enabled
        RETURNING id`
      yield* writeChannelParts(sql, rows[0].id, {
        keys: channel.keys,
        groups,
        models: channel.models,
        priority,
        weight,
        enabled: channel.enabled ?? true
      })
    }
    for (const user of file.users ?? []) {
      const passwordHash = user.password === undefined ? null : bcrypt.hashSync(user.password, 10)
      const userLimits = user.limits === undefined ? null : JSON.stringify(user.limits)
      // Budgets stated in the file are set (their spend is kept: it lives in budget_periods); unstated, left alone.
      const userBudgets = user.budgets === undefined ? null : budgetsJson(fromSpec(user.budgets))
      yield* sql`INSERT INTO users (username, password_hash, role, group_name, quota, limits, budgets)
        VALUES (${user.username}, ${passwordHash}, ${user.role ?? "user"}, ${user.group}, ${user.quota}, ${userLimits},
                ${userBudgets}::jsonb)
        ON CONFLICT (username) DO UPDATE SET limits = EXCLUDED.limits,
          budgets = CASE WHEN ${user.budgets !== undefined} THEN EXCLUDED.budgets ELSE users.budgets END`
      const [{ id: userId }] = yield* sql<
        { readonly id: bigint }
      >`SELECT id FROM users WHERE username = ${user.username}`
      for (const token of user.tokens ?? []) {
        const keyHash = hashKey(token.key)
        const tokenLimits = token.limits === undefined ? null : JSON.stringify(token.limits)
        const tokenBudgets = token.budgets === undefined ? null : budgetsJson(fromSpec(token.budgets))
        yield* sql`INSERT INTO tokens
            (user_id, name, key_hash, key_prefix, remain_quota, models, group_name, expires_at, limits, budgets)
          VALUES (${userId}, ${token.name}, ${keyHash}, ${keyPrefix(token.key)}, ${token.quota ?? null},
                  ${token.models === undefined ? null : [...token.models]}::text[], ${token.group ?? null},
                  ${toTimestamp(token.expires_at)}, ${tokenLimits}, ${tokenBudgets}::jsonb)
          ON CONFLICT (key_hash) DO UPDATE SET limits = EXCLUDED.limits,
            budgets = CASE WHEN ${token.budgets !== undefined} THEN EXCLUDED.budgets ELSE tokens.budgets END`
      }
    }
  })
  // Other instances sharing the database reload their routing index (Catalog polls this row).
  yield* sql.withTransaction(
    Effect.andThen(write, sql`UPDATE catalog_version SET version = version + 1 WHERE id = 1`)
    // Applied at start, before serving: a bootstrap that cannot be written is a gateway that cannot start.
  ).pipe(Effect.orDie)
})

/** What a channel's keys and abilities are written from. @category models */
export interface ChannelParts {
  readonly keys: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
  readonly models: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly enabled: boolean
}

/**
 * Writes a channel's keys (a key kept at its position keeps its health state,
 * a new one starts enabled) and rebuilds its abilities (one per group and
 * model), with `sql` (the caller's transaction).
 *
 * @category config
 */
export const writeChannelParts = (sql: SqlClient.SqlClient, channelId: bigint, parts: ChannelParts) =>
  Effect.gen(function* () {
    yield* sql`DELETE FROM channel_keys WHERE channel_id = ${channelId} AND position >= ${parts.keys.length}`
    for (const [position, key] of parts.keys.entries()) {
      yield* sql`INSERT INTO channel_keys (channel_id, position, key) VALUES (${channelId}, ${position}, ${key})
        ON CONFLICT (channel_id, position) DO UPDATE SET key = EXCLUDED.key,
          enabled = CASE WHEN channel_keys.key = EXCLUDED.key THEN channel_keys.enabled ELSE TRUE END,
          disabled_reason = CASE WHEN channel_keys.key = EXCLUDED.key THEN channel_keys.disabled_reason ELSE NULL END`
    }
    yield* sql`DELETE FROM abilities WHERE channel_id = ${channelId}`
    for (const group of parts.groups) {
      for (const model of parts.models) {
        yield* sql`INSERT INTO abilities (group_name, model, channel_id, priority, weight, enabled)
          VALUES (${group}, ${model}, ${channelId}, ${parts.priority}, ${parts.weight}, ${parts.enabled})
          ON CONFLICT DO NOTHING`
      }
    }
  })
