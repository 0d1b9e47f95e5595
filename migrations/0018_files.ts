/**
 * OpenAI's Files API (`/v1/files`; `src/files/FileStore.ts`): a file's metadata in `files` and its bytes in
 * `file_chunks`, `seq` 0, 1, … of at most 1 MiB each, so that an upload is written and a download read one chunk at a
 * time, on every instance alike.
 *
 * `files.id` (`file-` and 24 lowercase letters or digits, the first 9 the creation time) sorts in creation order
 * under the `C` collation, which the list's cursor relies on. `purpose` stays NULL while the upload runs (the form's
 * `purpose` may come after the file); `complete` turns true when every chunk is in, and only complete, undeleted,
 * unexpired rows are visible. `deleted` marks a file whose chunks are being removed: the expiry sweep finishes what a
 * deletion (or a crashed upload) left behind. `bytes` counts the chunks written so far (the per-user total includes
 * uploads in flight). `created_at` and `expires_at` are what the File object shows (`expires_at` NULL: never);
 * `written_at` is when the last chunk of an unfinished upload was written (a long silence marks one a crash left).
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE files (
      id          TEXT COLLATE "C" PRIMARY KEY,
      user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      filename    TEXT NOT NULL,
      purpose     TEXT,
      bytes       BIGINT NOT NULL DEFAULT 0 CHECK (bytes >= 0),
      created_at  TIMESTAMPTZ NOT NULL,
      expires_at  TIMESTAMPTZ,
      written_at  TIMESTAMPTZ NOT NULL,
      complete    BOOLEAN NOT NULL DEFAULT false,
      deleted     BOOLEAN NOT NULL DEFAULT false
    )`
  yield* sql`CREATE INDEX files_user_idx ON files (user_id, id)`
  yield* sql`CREATE INDEX files_expires_idx ON files (expires_at) WHERE expires_at IS NOT NULL`
  yield* sql`CREATE INDEX files_unfinished_idx ON files (written_at) WHERE deleted OR NOT complete`
  yield* sql`
    CREATE TABLE file_chunks (
      file_id  TEXT COLLATE "C" NOT NULL REFERENCES files (id) ON DELETE CASCADE,
      seq      INTEGER NOT NULL CHECK (seq >= 0),
      data     BYTEA NOT NULL,
      PRIMARY KEY (file_id, seq)
    )`
})
