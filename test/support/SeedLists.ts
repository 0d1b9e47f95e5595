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
