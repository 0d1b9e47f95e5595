/**
 * The rows the list tests seed on PostgreSQL, in SQL (seconds, not minutes):
 * 1,000 channels and 10,000 users with varied types, groups, priorities,
 * roles and statuses, so every filter and sort has something to tell apart.
 */

/**
 * Seeds 1,000 channels (`bulk-0000`…; types, groups, priorities and statuses varied; one fake key each, on a
 * closed port) and 10,000 users (`member00000`…), in SQL, and bumps the catalog version.
 */
export const seedAtScale = async (query: (text: string) => Promise<unknown>) => {
  await query(`INSERT INTO channels (name, type, base_url, models, groups, priority, weight, model_mapping, settings,
                                     enabled)
    SELECT 'bulk-' || lpad(i::text, 4, '0'),
           (ARRAY['openai', 'anthropic', 'gemini', 'deepseek'])[1 + i % 4],
           'http://127.0.0.1:9/bulk/' || i,
           ARRAY['bulk-model-' || (i % 10)],
           ARRAY[CASE WHEN i % 3 = 0 THEN 'vip' ELSE 'bulk' END],
           i % 7, 1, '{}', '{}', i % 5 <> 0
    FROM generate_series(0, 999) AS i`)
  await query(`INSERT INTO channel_keys (channel_id, position, key)
    SELECT id, 0, 'sk-test-bulk-' || lpad(id::text, 6, '0') FROM channels WHERE name LIKE 'bulk-%'`)
  await query(`INSERT INTO users (username, password_hash, role, group_name, quota, display_name, email)
    SELECT 'member' || lpad(i::text, 5, '0'), 'x', CASE WHEN i % 100 = 0 THEN 'admin' ELSE 'user' END,
           CASE WHEN i % 2 = 0 THEN 'default' ELSE 'vip' END, i * 10, 'Member ' || i, 'm' || i || '@example.test'
    FROM generate_series(0, 9999) AS i`)
  // Every instance reloads its catalog (the channels' keys) within `CATALOG_POLL_SECONDS`.
  await query(`UPDATE catalog_version SET version = version + 1 WHERE id = 1`)
}

/** The first seeded task's creation time (epoch seconds, 2026-01-01T00:00:00Z); task `i` is `i` minutes later. */
export const SEEDED_TASKS_FROM = 1_767_225_600

/**
 * Seeds, for user `username`, 1,000 keys (`seed-key-0000`…, listed prefix `sk-seed0000`…; every fourth disabled,
 * every third in group `vip`, every fifth limited to `gpt-test`, quota and use growing with the number) and 10,000
 * tasks (`task_seed00000`…; kinds video, image, midjourney in turn, statuses queued, in_progress, completed, failed in
 * turn, models `seed-model-0`…`6`, task `i` created `i` minutes after `SEEDED_TASKS_FROM`, charged `i` units), in SQL.
 * The tasks name no channel the gateway has and are already settled, with a deadline a month away, so the poller
 * leaves them alone.
 */
export const seedOwnAtScale = async (query: (text: string) => Promise<unknown>, username: string) => {
  await query(`INSERT INTO tokens (user_id, name, key_hash, key_prefix, remain_quota, used_quota, models, group_name,
                                   expires_at, enabled)
    SELECT u.id, 'seed-key-' || lpad(i::text, 4, '0'), 'seed:' || u.id || ':' || i, 'sk-seed' || lpad(i::text, 4, '0'),
           i * 100, i * 7, CASE WHEN i % 5 = 0 THEN ARRAY['gpt-test'] END,
           CASE WHEN i % 3 = 0 THEN 'vip' END, CASE WHEN i % 10 = 0 THEN now() + i * interval '1 day' END,
           i % 4 <> 0
    FROM generate_series(0, 999) AS i, users u WHERE u.username = '${username}'`)
  await query(`INSERT INTO tasks (public_id, kind, user_id, token_id, channel_id, key_position, model, upstream_model,
                                  request, status, progress, request_id, billing, quota_charged, settled, created_at,
                                  completed_at, deadline_at)
    SELECT 'task_seed' || lpad(i::text, 5, '0'), (ARRAY['video', 'image', 'midjourney'])[1 + i % 3], u.id, 0, 999999,
           0, 'seed-model-' || (i % 7), 'seed-model-' || (i % 7), '{}',
           (ARRAY['queued', 'in_progress', 'completed', 'failed'])[1 + i % 4], CASE WHEN i % 4 = 2 THEN 100 ELSE i % 90 END,
           'req-seed-' || i, '{"ratio":"1","free":true}', i, TRUE,
           to_timestamp(${1_767_225_600}) + i * interval '1 minute',
           CASE WHEN i % 4 >= 2 THEN to_timestamp(${1_767_225_600}) + (i + 5) * interval '1 minute' END,
           now() + interval '30 days'
    FROM generate_series(0, 9999) AS i, users u WHERE u.username = '${username}'`)
}
