/**
 * Midjourney tasks (`kind = 'midjourney'`) in the `tasks` table: the check on
 * `kind` (0006 listed `video` and `image`) becomes a shape check, a short
 * lower-case word, so a new task kind needs no migration of its own and the
 * migrations of kinds added side by side cannot undo one another. The kinds
 * the gateway writes are the `TaskKind` union (`tasks/TaskStore.ts`).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_kind_check`
  yield* sql`ALTER TABLE tasks ADD CONSTRAINT tasks_kind_check CHECK (kind ~ '^[a-z][a-z_]{0,31}$')`
})
