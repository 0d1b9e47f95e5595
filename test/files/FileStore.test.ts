/**
 * The file store (`src/files/FileStore.ts`) on a fresh embedded store, under `TestClock`: files are cut into chunks of
 * `CHUNK_BYTES` and read back byte for byte; a file past its `expires_at` is hidden at once and the sweep removes its
 * rows and chunks; a failed upload (past the per-file limit, past the user's total, or the stream's own error) leaves
 * no row and no chunk; `createFromLines` writes one line per element; ownership is checked on every read; a user's
 * uploads running at once are capped (one here), an interrupted one leaving nothing.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Exit, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { CHUNK_BYTES, FileStore } from "../../src/files/FileStore.ts"
import { layerPglite } from "../../src/storage/Database.ts"
import { freshPglite } from "../support/PgliteTemplate.ts"

const MAX_FILE = 3 * CHUNK_BYTES
const MAX_USER = 5 * CHUNK_BYTES

/** Random bytes (`crypto.getRandomValues` fills at most 64 KiB at a time). */
const randomBytes = (size: number): Uint8Array => {
  const bytes = new Uint8Array(size)
  for (let offset = 0; offset < size; offset += 65_536) {
    crypto.getRandomValues(bytes.subarray(offset, Math.min(size, offset + 65_536)))
  }
  return bytes
}

/** `bytes` as a stream of uneven pieces (as a socket delivers them). */
const piecesOf = (bytes: Uint8Array, piece = 70_001): Stream.Stream<Uint8Array> => {
  const pieces: Array<Uint8Array> = []
  for (let offset = 0; offset < bytes.byteLength; offset += piece) pieces.push(bytes.subarray(offset, offset + piece))
  return Stream.fromIterable(pieces)
}

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => {
    const all = Array.from(chunks)
    const out = new Uint8Array(all.reduce((size, chunk) => size + chunk.byteLength, 0))
    let offset = 0
    for (const chunk of all) {
      out.set(chunk, offset)
      offset += chunk.byteLength
    }
    return out
  })

const counts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ files: number | string; chunks: number | string }>`
    SELECT (SELECT count(*) FROM files) AS files, (SELECT count(*) FROM file_chunks) AS chunks`
  return { files: Number(row.files), chunks: Number(row.chunks) }
})

const newUser = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: bigint | string }>`
      INSERT INTO users (username, group_name, quota) VALUES (${name}, 'default', 0) RETURNING id`
    return BigInt(row.id)
  })

/** Runs `body` with a file store on a fresh copy of the migrated embedded store, under `TestClock`. */
const withStore = async <A>(body: Effect.Effect<A, unknown, FileStore | SqlClient.SqlClient>): Promise<A> => {
  const copy = await freshPglite()
  try {
    const store = FileStore.layer({
      maxFileBytes: MAX_FILE,
      maxUserBytes: MAX_USER,
      sweepIntervalMillis: 0,
      maxUploadsInFlight: 1
    })
    const layer = store.pipe(Layer.provideMerge(layerPglite(copy.dataDir)))
    return await Effect.runPromise(
      body.pipe(Effect.provide(layer), Effect.provide(TestClock.layer())) as Effect.Effect<A, unknown, never>
    )
  } finally {
    await copy.remove()
  }
}

Deno.test("file store: chunks, expiry and the sweep, failed uploads, lines, ownership", async () => {
  await withStore(Effect.gen(function* () {
    const files = yield* FileStore
    const sql = yield* SqlClient.SqlClient
    const alice = yield* newUser("alice")
    const bob = yield* newUser("bob")

    // 2.5 chunks in uneven pieces: three rows of at most CHUNK_BYTES, read back exactly.
    const bytes = randomBytes(2.5 * CHUNK_BYTES)
    const file = yield* files.create({
      userId: alice,
      filename: "data.bin",
      content: piecesOf(bytes),
      purpose: "user_data",
      expiresAfterSeconds: 3600
    })
    strictEqual(file.bytes, bytes.byteLength)
    strictEqual(file.expires_at, file.created_at + 3600)
    const sizes = yield* sql<{ seq: number; size: number }>`
      SELECT seq, length(data) AS size FROM file_chunks WHERE file_id = ${file.id} ORDER BY seq`
    deepStrictEqual(sizes.map((row) => Number(row.size)), [CHUNK_BYTES, CHUNK_BYTES, CHUNK_BYTES / 2])
    const read = yield* files.content(alice, file.id)
    deepStrictEqual(yield* collect(read.stream), bytes)

    // Bob sees none of it.
    strictEqual((yield* Effect.exit(files.get(bob, file.id)))._tag, "Failure")
    strictEqual((yield* Effect.exit(files.content(bob, file.id)))._tag, "Failure")
    strictEqual((yield* Effect.exit(files.remove(bob, file.id)))._tag, "Failure")
    strictEqual((yield* files.list(bob, { limit: 10, order: "desc" })).data.length, 0)

    // An hour on, the file is hidden at once; the sweep removes its rows and chunks.
    // The store's connection is up before the clock jumps, so no connect timeout of its fires with the jump.
    yield* counts
    yield* TestClock.adjust("3601 seconds")
    const expired = yield* Effect.exit(files.get(alice, file.id))
    ok(Exit.isFailure(expired))
    strictEqual((yield* files.list(alice, { limit: 10, order: "desc" })).data.length, 0)
    deepStrictEqual(yield* counts, { files: 1, chunks: 3 })
    strictEqual(yield* files.sweep, 1)
    deepStrictEqual(yield* counts, { files: 0, chunks: 0 })
    strictEqual(yield* files.sweep, 0)

    // Past the per-file limit: refused, nothing left.
    const tooBig = yield* Effect.exit(files.create({
      userId: alice,
      filename: "big.bin",
      content: piecesOf(randomBytes(MAX_FILE + 1)),
      purpose: "batch"
    }))
    ok(Exit.isFailure(tooBig))
    ok(JSON.stringify(tooBig.cause).includes("PayloadTooLarge"))
    deepStrictEqual(yield* counts, { files: 0, chunks: 0 })

    // Past the user's total (3 + 3 > 5 chunks): the second upload is refused and removed, the first stays.
    const first = yield* files.create({
      userId: alice,
      filename: "one.bin",
      content: piecesOf(randomBytes(MAX_FILE)),
      purpose: "batch"
    })
    const second = yield* Effect.exit(files.create({
      userId: alice,
      filename: "two.bin",
      content: piecesOf(randomBytes(MAX_FILE)),
      purpose: "batch"
    }))
    ok(Exit.isFailure(second))
    ok(JSON.stringify(second.cause).includes("file_storage_limit_exceeded"))
    deepStrictEqual(yield* counts, { files: 1, chunks: 3 })
    // Bob's total is his own.
    yield* files.create({ userId: bob, filename: "b.bin", content: piecesOf(randomBytes(100)), purpose: "vision" })

    // The stream's own error: nothing left of what it had written.
    const broken = yield* Effect.exit(files.create({
      userId: alice,
      filename: "broken.bin",
      content: Stream.concat(piecesOf(randomBytes(CHUNK_BYTES + 5)), Stream.fail("connection reset")),
      purpose: "batch"
    }))
    ok(Exit.isFailure(broken))
    deepStrictEqual(yield* counts, { files: 2, chunks: 4 })

    // Deleting: hidden and removed at once; a second delete is a NotFound.
    const removed = yield* files.remove(alice, first.id)
    deepStrictEqual(removed, { id: first.id, object: "file", deleted: true })
    ok(Exit.isFailure(yield* Effect.exit(files.remove(alice, first.id))))
    deepStrictEqual(yield* counts, { files: 1, chunks: 1 })

    // Lines: one per element, each ended by "\n", purpose batch_output, 30 days unless told otherwise.
    const lines = Stream.make('{"custom_id":"a"}', new TextEncoder().encode('{"custom_id":"b"}'), "")
    const output = yield* files.createFromLines(alice, lines, { filename: "batch_output.jsonl" })
    strictEqual(output.purpose, "batch_output")
    strictEqual(output.expires_at, output.created_at + 30 * 86_400)
    const text = new TextDecoder().decode(yield* collect((yield* files.content(alice, output.id)).stream))
    strictEqual(text, '{"custom_id":"a"}\n{"custom_id":"b"}\n\n')
    strictEqual(output.bytes, new TextEncoder().encode(text).byteLength)

    // Malformed ids are NotFound, never a query.
    ok(Exit.isFailure(yield* Effect.exit(files.get(alice, "file-'; DROP TABLE files; --"))))
  }))
})

Deno.test("file store: an upload a crash left unfinished is swept once it is stale", async () => {
  await withStore(Effect.gen(function* () {
    const files = yield* FileStore
    const alice = yield* newUser("alice")
    // An upload staged but never committed (its instance died): invisible, and kept while it may still be running.
    const staged = yield* files.upload(alice, "partial.bin", piecesOf(randomBytes(CHUNK_BYTES + 1)))
    ok(Exit.isFailure(yield* Effect.exit(files.get(alice, staged.id))))
    strictEqual(yield* files.sweep, 0)
    // Three hours without a chunk written: aged in the table rather than by jumping the clock, since a jump also
    // fires the connection pool's own timers (under load it failed a statement of the sweep).
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE files SET written_at = written_at - interval '3 hours' WHERE id = ${staged.id}`
    strictEqual(yield* files.sweep, 1)
    deepStrictEqual(yield* counts, { files: 0, chunks: 0 })
  }))
})

Deno.test("file store: a user's uploads in flight are capped; an interrupted upload leaves nothing", async () => {
  await withStore(Effect.gen(function* () {
    const files = yield* FileStore
    const alice = yield* newUser("alice")
    const bob = yield* newUser("bob")
    // A caller that sends a chunk and a half, then nothing.
    const stalled = Stream.concat(piecesOf(randomBytes(CHUNK_BYTES + CHUNK_BYTES / 2)), Stream.never)
    const running = yield* Effect.forkChild(files.upload(alice, "stalled.bin", stalled))
    // Each count is a round trip to the store, during which the upload goes on.
    while ((yield* counts).chunks < 1) yield* Effect.yieldNow
    const refused = yield* Effect.exit(files.upload(alice, "second.bin", piecesOf(randomBytes(10))))
    ok(Exit.isFailure(refused))
    ok(JSON.stringify(refused.cause).includes("RateLimited"), JSON.stringify(refused.cause))
    // Another user is not held up.
    yield* files.create({ userId: bob, filename: "b.bin", content: piecesOf(randomBytes(10)), purpose: "batch" })
    yield* Fiber.interrupt(running)
    deepStrictEqual(yield* counts, { files: 1, chunks: 1 })
    yield* files.create({ userId: alice, filename: "third.bin", content: piecesOf(randomBytes(10)), purpose: "batch" })
  }))
})
