/**
 * The files of OpenAI's Files API (`/v1/files`), kept in the database so that every instance sees them: metadata
 * in `files`, bytes in `file_chunks` (`migrations/0018_files.ts`), `CHUNK_BYTES` per row. An upload is written
 * chunk by chunk as its bytes arrive and a download read chunk by chunk as the caller takes them, so no file is
 * ever whole in memory (at most one chunk and the piece that completes it, per transfer).
 *
 * A file belongs to the user who uploaded it: every read names the user, and another user's file, a deleted or an
 * expired one, and an id of the wrong shape all fail with the same `NotFound` (`what: "file"`).
 *
 * Limits: `maxFileBytes` per file (an upload past it fails with `PayloadTooLarge`, `param: "file"`) and
 * `maxUserBytes` for all of a user's files together, uploads in flight included (past it: `InvalidRequest`,
 * `param: "file"`, code `file_storage_limit_exceeded`), and `maxUploadsInFlight` uploads of one user at once on one
 * instance (past it: `RateLimited`, so a user cannot hold a chunk's buffer in memory per open request). A failed or interrupted upload leaves nothing behind: its
 * chunks are removed before the failure returns. Files the gateway writes itself (`createFromLines`, a batch's
 * output) are not held to either limit; they count towards the user's total for later uploads.
 *
 * Expiry: `expires_at` (from `expires_after`, OpenAI's `{anchor: "created_at", seconds}`; `batch` and
 * `batch_output` files expire after 30 days unless told otherwise, as OpenAI's do) hides a file at once; the sweep
 * (`sweep`, run every `sweepIntervalMillis` by the layer on every instance) removes expired and deleted files'
 * rows and chunks, and uploads left unfinished by a crash (`STALE_UPLOAD_MILLIS`). Sweeps on several instances may
 * overlap: each removal is idempotent.
 *
 * A failed statement is `StorageUnavailable` (`storage/StorageFailure.ts`: 503 with `Retry-After` at a route).
 *
 * @since 0.3.0
 */
import { Clock, Context, Duration, Effect, Exit, Layer, Option, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import {
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  RequestTimeout,
  type StorageUnavailable
} from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"
import {
  type FileDeleted,
  type FileList,
  type FileObject,
  type FilePurpose,
  isFileId,
  isFilePurpose,
  newFileId,
  quotableFileId
} from "./FileObject.ts"

/** Bytes per stored chunk (1 MiB; the last chunk of a file may be shorter). @category constants */
export const CHUNK_BYTES = 1024 * 1024

/** The default per-file limit (`settings.file_max_bytes`): 200 MiB, OpenAI's for batch input. @category constants */
export const DEFAULT_FILE_MAX_BYTES = 200 * 1024 * 1024

/** The default per-user total (`settings.file_storage_per_user_bytes`): 10 GiB. @category constants */
export const DEFAULT_USER_MAX_BYTES = 10 * 1024 * 1024 * 1024

/** Uploads one user may have running at once on one instance, by default (`settings.file_max_uploads_in_flight`). @category constants */
export const DEFAULT_MAX_UPLOADS_IN_FLIGHT = 4

/** How often the sweep runs by default (`settings.file_sweep_interval_seconds`), in milliseconds. @category constants */
export const DEFAULT_SWEEP_INTERVAL_MILLIS = 60_000

/** The longest an upload may take, in seconds: past it the upload fails (`RequestTimeout`). @category constants */
export const UPLOAD_DEADLINE_SECONDS = 3600

/**
 * An unfinished upload that wrote no chunk for this long (milliseconds) is one a crashed instance left: the sweep
 * removes it. Twice `UPLOAD_DEADLINE_SECONDS`, so no upload still running is swept (nor a long `createFromLines`,
 * which writes a chunk at least every mebibyte).
 *
 * @category constants
 */
export const STALE_UPLOAD_MILLIS = 2 * UPLOAD_DEADLINE_SECONDS * 1000

/** Seconds a `batch` or `batch_output` file lives when no `expires_after` is given (30 days, OpenAI's). @category constants */
export const DEFAULT_BATCH_EXPIRY_SECONDS = 30 * 86_400

/** The range of `expires_after.seconds` (OpenAI's: one hour to 30 days). @category constants */
export const EXPIRES_AFTER_RANGE = { min: 3600, max: 30 * 86_400 } as const

/** Files the sweep removes per round at most (the rest go with the next round). */
const SWEEP_BATCH = 100

/** @category models */
export interface FileStoreOptions {
  /** Largest file a caller may upload, in bytes (default `DEFAULT_FILE_MAX_BYTES`). */
  readonly maxFileBytes: number
  /** Largest total of one user's files, in bytes (default `DEFAULT_USER_MAX_BYTES`). */
  readonly maxUserBytes: number
  /** Milliseconds between sweeps (default `DEFAULT_SWEEP_INTERVAL_MILLIS`); 0: no background sweep. */
  readonly sweepIntervalMillis: number
  /** Uploads one user may have running at once on this instance (default `DEFAULT_MAX_UPLOADS_IN_FLIGHT`). */
  readonly maxUploadsInFlight?: number | undefined
}

/** The defaults of `FileStoreOptions`. @category constants */
export const DEFAULT_FILE_STORE_OPTIONS: FileStoreOptions = {
  maxFileBytes: DEFAULT_FILE_MAX_BYTES,
  maxUserBytes: DEFAULT_USER_MAX_BYTES,
  sweepIntervalMillis: DEFAULT_SWEEP_INTERVAL_MILLIS
}

/**
 * An upload whose bytes are stored but which nobody sees yet (`upload`): `commit` gives it its purpose and makes it
 * visible, `discard` removes it. `bytes` is its size.
 *
 * @category models
 */
export interface StagedFile {
  readonly id: string
  readonly userId: bigint
  readonly filename: string
  readonly bytes: number
  /** When the upload started (epoch milliseconds): the file's `created_at`, the anchor of its expiry. */
  readonly createdAtMillis: number
}

/**
 * What a file is kept for: its purpose and, optionally, seconds after its creation when it expires
 * (`EXPIRES_AFTER_RANGE` for a caller's; unset: `DEFAULT_BATCH_EXPIRY_SECONDS` for `batch` and `batch_output`,
 * never for the rest).
 *
 * @category models
 */
export interface FileDetails {
  readonly purpose: FilePurpose
  readonly expiresAfterSeconds?: number | undefined
}

/** The query of `list`: OpenAI's `after` (a file id), `limit`, `order` (of creation) and `purpose` filter. @category models */
export interface FileListQuery {
  readonly after?: string | undefined
  /** Files per page, 1 to 10,000. */
  readonly limit: number
  readonly order: "asc" | "desc"
  readonly purpose?: string | undefined
}

/**
 * A file ready to be read: its File object and its bytes, a stream of chunks (at most `CHUNK_BYTES` each) read from
 * the store one at a time as they are pulled. A file removed while it is read ends the stream with a defect.
 *
 * @category models
 */
export interface FileContent {
  readonly file: FileObject
  readonly stream: Stream.Stream<Uint8Array, StorageUnavailable>
}

/** @category services */
export class FileStore extends Context.Service<FileStore, {
  /**
   * Stores `content` as a file of `userId` named `filename`, not yet visible: its bytes are written as they arrive.
   * Fails with `PayloadTooLarge` (`param: "file"`) past the per-file limit, `InvalidRequest` (`param: "file"`) past
   * the user's total, `RequestTimeout` past `UPLOAD_DEADLINE_SECONDS`, `RateLimited` when the user already has
   * `maxUploadsInFlight` uploads running here (nothing read then), or `content`'s own error; a failed or interrupted
   * upload leaves nothing stored.
   */
  readonly upload: <E>(
    userId: bigint,
    filename: string,
    content: Stream.Stream<Uint8Array, E>
  ) => Effect.Effect<
    StagedFile,
    E | PayloadTooLarge | InvalidRequest | RequestTimeout | RateLimited | StorageUnavailable
  >
  /** Makes a staged upload visible with its `details`; its File object. */
  readonly commit: (staged: StagedFile, details: FileDetails) => Effect.Effect<FileObject, StorageUnavailable>
  /** Removes a staged upload (a form found bad after its file arrived). */
  readonly discard: (staged: StagedFile) => Effect.Effect<void, StorageUnavailable>
  /** `upload` then `commit`: a file of `userId` from a byte stream, with its File object. Errors as `upload`'s. */
  readonly create: <E>(
    input: {
      readonly userId: bigint
      readonly filename: string
      readonly content: Stream.Stream<Uint8Array, E>
    } & FileDetails
  ) => Effect.Effect<
    FileObject,
    E | PayloadTooLarge | InvalidRequest | RequestTimeout | RateLimited | StorageUnavailable
  >
  /**
   * A file the gateway writes for `userId` (a batch's output or errors): each element of `lines` one line (a string,
   * or its UTF-8 bytes, without its line break), each followed by `\n`, in order. Purpose `batch_output` unless
   * told otherwise; not held to the upload limits. Fails only with `lines`' error (nothing stored then).
   */
  readonly createFromLines: <E>(
    userId: bigint,
    lines: Stream.Stream<string | Uint8Array, E>,
    options: {
      readonly filename: string
      readonly purpose?: FilePurpose | undefined
      readonly expiresAfterSeconds?: number | undefined
    }
  ) => Effect.Effect<FileObject, E | StorageUnavailable>
  /** The File object of `fileId` when `userId` owns it and it is neither deleted nor expired; else `NotFound`. */
  readonly get: (userId: bigint, fileId: string) => Effect.Effect<FileObject, NotFound | StorageUnavailable>
  /**
   * A page of `userId`'s visible files, in creation order (`query.order`), after the file `query.after` (which need
   * not exist any more); only those of `query.purpose` when given (none for a purpose no file can have).
   */
  readonly list: (userId: bigint, query: FileListQuery) => Effect.Effect<FileList, StorageUnavailable>
  /** The File object and bytes of `fileId` (owner-checked as `get`). */
  readonly content: (userId: bigint, fileId: string) => Effect.Effect<FileContent, NotFound | StorageUnavailable>
  /** Deletes `fileId` (owner-checked as `get`): hidden at once, its chunks removed before this returns. */
  readonly remove: (userId: bigint, fileId: string) => Effect.Effect<FileDeleted, NotFound | StorageUnavailable>
  /**
   * One round of the expiry sweep: removes up to 100 expired or deleted files and stale unfinished uploads with
   * their chunks; how many it removed.
   */
  readonly sweep: Effect.Effect<number, StorageUnavailable>
}>()("sluice/files/FileStore") {
  /**
   * On the SQL store (`files`, `file_chunks`), with `options`' limits; runs the sweep every
   * `options.sweepIntervalMillis` while the layer lives.
   */
  static readonly layer = (options: FileStoreOptions = DEFAULT_FILE_STORE_OPTIONS) =>
    Layer.effect(
      FileStore,
      Effect.gen(function* () {
        const store = yield* makeFileStore(options)
        if (options.sweepIntervalMillis > 0) {
          yield* store.sweep.pipe(
            Effect.catchCause((cause) => Effect.logWarning("The file sweep failed; it runs again later", cause)),
            Effect.repeat(Schedule.spaced(Duration.millis(options.sweepIntervalMillis))),
            Effect.forkScoped
          )
        }
        return store
      })
    )
}

/** A row of `files` as the queries select it. */
interface FileRow {
  readonly id: string
  readonly filename: string
  readonly purpose: string | null
  readonly bytes: bigint | number | string
  readonly createdAt: Date
  readonly expiresAt: Date | null
}

const FILE_COLUMNS = `id, filename, purpose, bytes, created_at AS "createdAt", expires_at AS "expiresAt"`

const fileObjectOf = (row: FileRow): FileObject => ({
  id: row.id,
  object: "file",
  bytes: Number(row.bytes),
  created_at: Math.floor(row.createdAt.getTime() / 1000),
  expires_at: row.expiresAt === null ? null : Math.floor(row.expiresAt.getTime() / 1000),
  filename: row.filename,
  purpose: (row.purpose ?? "user_data") as FilePurpose,
  status: "processed"
})

const concat = (pieces: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (pieces.length === 1 && pieces[0].byteLength === size) return pieces[0]
  const out = new Uint8Array(size)
  let offset = 0
  for (const piece of pieces) {
    out.set(piece, offset)
    offset += piece.byteLength
  }
  return out
}

const encoder = new TextEncoder()
const NEWLINE = 0x0a

/** Where a download is: the next chunk's `seq`, and the bytes read so far. */
interface ReadState {
  readonly seq: number
  readonly read: number
}

/** The store itself (the layer adds the background sweep). */
const makeFileStore = (options: FileStoreOptions) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const missing = (fileId: string) => new NotFound({ what: "file", id: quotableFileId(fileId), param: "file_id" })

    /** Removes a file's chunks, then its row (idempotent: sweeps on several instances may race). */
    const purge = (fileId: string) =>
      Effect.gen(function* () {
        yield* sql`DELETE FROM file_chunks WHERE file_id = ${fileId}`
        yield* sql`DELETE FROM files WHERE id = ${fileId}`
      }).pipe(storageFailure("files.purge"), Effect.uninterruptible)

    /** Bytes `userId`'s live files (and uploads in flight) take. */
    const userTotal = (userId: bigint, now: Date) =>
      sql<{ total: bigint | number | string | null }>`
        SELECT COALESCE(SUM(bytes), 0) AS total FROM files
        WHERE user_id = ${userId} AND NOT deleted AND (expires_at IS NULL OR expires_at > ${now})`.pipe(
        Effect.map((rows) => Number(rows[0]?.total ?? 0)),
        storageFailure("files.total")
      )

    /**
     * Writes `content` as the chunks of a new, unfinished row: `limits` undefined for the gateway's own files.
     * Removes what it wrote when it fails or is interrupted.
     */
    const write = <E>(
      userId: bigint,
      filename: string,
      content: Stream.Stream<Uint8Array, E>,
      limits: { readonly maxFileBytes: number; readonly maxUserBytes: number } | undefined
    ): Effect.Effect<StagedFile, E | PayloadTooLarge | InvalidRequest | StorageUnavailable> =>
      Effect.gen(function* () {
        const createdAtMillis = yield* Clock.currentTimeMillis
        const id = newFileId(createdAtMillis)
        const created = new Date(createdAtMillis)
        yield* sql`INSERT INTO files (id, user_id, filename, created_at, written_at)
                   VALUES (${id}, ${userId}, ${filename}, ${created}, ${created})`.pipe(storageFailure("files.stage"))
        let seq = 0
        let total = 0
        let pending: Array<Uint8Array> = []
        let pendingBytes = 0

        const flush = (size: number) =>
          Effect.gen(function* () {
            // `size` bytes off the front of `pending` (all of them, or exactly one chunk's worth).
            const taken: Array<Uint8Array> = []
            let need = size
            while (need > 0) {
              const head = pending[0]
              if (head.byteLength <= need) {
                taken.push(head)
                pending.shift()
                need -= head.byteLength
              } else {
                taken.push(head.subarray(0, need))
                pending[0] = head.subarray(need)
                need = 0
              }
            }
            pendingBytes -= size
            const data = concat(taken, size)
            yield* sql`INSERT INTO file_chunks (file_id, seq, data) VALUES (${id}, ${seq}, ${data})`.pipe(
              storageFailure("files.write")
            )
            const now = new Date(yield* Clock.currentTimeMillis)
            yield* sql`UPDATE files SET bytes = bytes + ${size}, written_at = ${now} WHERE id = ${id}`.pipe(
              storageFailure("files.write")
            )
            seq += 1
            if (limits !== undefined) {
              const used = yield* userTotal(userId, now)
              if (used > limits.maxUserBytes) {
                return yield* new InvalidRequest({
                  message: `This upload would take your files past ${limits.maxUserBytes} bytes in all, ` +
                    "the most the gateway keeps for one user; delete files you no longer need.",
                  param: "file",
                  code: "file_storage_limit_exceeded"
                })
              }
            }
          })

        const body = Effect.gen(function* () {
          yield* Stream.runForEach(content, (piece) =>
            Effect.gen(function* () {
              if (piece.byteLength === 0) return
              total += piece.byteLength
              if (limits !== undefined && total > limits.maxFileBytes) {
                return yield* new PayloadTooLarge({ limitBytes: limits.maxFileBytes, param: "file" })
              }
              pending.push(piece)
              pendingBytes += piece.byteLength
              while (pendingBytes >= CHUNK_BYTES) yield* flush(CHUNK_BYTES)
            }))
          if (pendingBytes > 0) yield* flush(pendingBytes)
          pending = []
          return { id, userId, filename, bytes: total, createdAtMillis } satisfies StagedFile
        })
        return yield* body.pipe(Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : purge(id)))
      })

    const maxInFlight = options.maxUploadsInFlight ?? DEFAULT_MAX_UPLOADS_IN_FLIGHT
    const inFlight = new Map<bigint, number>()
    const busy = () =>
      new RateLimited({
        message: `You have ${maxInFlight} uploads running, the most allowed at once; wait for one to finish.`,
        retryAfterSeconds: 1
      })

    const upload = <E>(
      userId: bigint,
      filename: string,
      content: Stream.Stream<Uint8Array, E>
    ): Effect.Effect<
      StagedFile,
      E | PayloadTooLarge | InvalidRequest | RequestTimeout | RateLimited | StorageUnavailable
    > =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          const running = inFlight.get(userId) ?? 0
          if (running >= maxInFlight) return false
          inFlight.set(userId, running + 1)
          return true
        }),
        (
          admitted
        ): Effect.Effect<
          StagedFile,
          E | PayloadTooLarge | InvalidRequest | RequestTimeout | RateLimited | StorageUnavailable
        > =>
          admitted
            ? write(userId, filename, content, options).pipe(
              Effect.timeoutOrElse({
                duration: Duration.seconds(UPLOAD_DEADLINE_SECONDS),
                orElse: () => Effect.fail(new RequestTimeout({ seconds: UPLOAD_DEADLINE_SECONDS }))
              })
            )
            : Effect.fail(busy()),
        (admitted) =>
          Effect.sync(() => {
            if (!admitted) return
            const left = (inFlight.get(userId) ?? 1) - 1
            if (left <= 0) inFlight.delete(userId)
            else inFlight.set(userId, left)
          })
      ).pipe(Effect.withSpan("FileStore.upload"))

    const commit = Effect.fn("FileStore.commit")(function* (staged: StagedFile, details: FileDetails) {
      const seconds = details.expiresAfterSeconds ??
        (details.purpose === "batch" || details.purpose === "batch_output" ? DEFAULT_BATCH_EXPIRY_SECONDS : undefined)
      const expiresAt = seconds === undefined ? null : new Date(staged.createdAtMillis + seconds * 1000)
      const rows = yield* sql<FileRow>`
        UPDATE files SET purpose = ${details.purpose}, expires_at = ${expiresAt}, complete = true
        WHERE id = ${staged.id} AND NOT deleted
        RETURNING ${sql.literal(FILE_COLUMNS)}`.pipe(storageFailure("files.commit"))
      if (rows[0] === undefined) return yield* Effect.die(new Error(`The staged file ${staged.id} is gone`))
      return fileObjectOf(rows[0])
    })

    const discard = (staged: StagedFile) => purge(staged.id)

    const create = <E>(
      input:
        & { readonly userId: bigint; readonly filename: string; readonly content: Stream.Stream<Uint8Array, E> }
        & FileDetails
    ) =>
      Effect.flatMap(
        upload(input.userId, input.filename, input.content),
        (staged) => commit(staged, input).pipe(Effect.onInterrupt(() => discard(staged)))
      )

    const createFromLines = <E>(
      userId: bigint,
      lines: Stream.Stream<string | Uint8Array, E>,
      details: {
        readonly filename: string
        readonly purpose?: FilePurpose | undefined
        readonly expiresAfterSeconds?: number | undefined
      }
    ): Effect.Effect<FileObject, E | StorageUnavailable> => {
      const bytes = Stream.map(lines, (line) => {
        if (typeof line === "string") return encoder.encode(`${line}\n`)
        const ended = new Uint8Array(line.byteLength + 1)
        ended.set(line)
        ended[line.byteLength] = NEWLINE
        return ended
      })
      // Without limits, `write` fails with nothing but the stream's error or the store's (the limit failures are
      // made only when it is given limits), which the cast says.
      const written = write(userId, details.filename, bytes, undefined) as Effect.Effect<
        StagedFile,
        E | StorageUnavailable
      >
      return written.pipe(
        Effect.flatMap((staged) =>
          commit(staged, {
            purpose: details.purpose ?? "batch_output",
            expiresAfterSeconds: details.expiresAfterSeconds
          })
        ),
        Effect.withSpan("FileStore.createFromLines")
      )
    }

    const visible = (now: Date) => sql`complete AND NOT deleted AND (expires_at IS NULL OR expires_at > ${now})`

    const get = Effect.fn("FileStore.get")(function* (userId: bigint, fileId: string) {
      if (!isFileId(fileId)) return yield* missing(fileId)
      const now = new Date(yield* Clock.currentTimeMillis)
      const rows = yield* sql<FileRow>`
        SELECT ${sql.literal(FILE_COLUMNS)} FROM files
        WHERE id = ${fileId} AND user_id = ${userId} AND ${visible(now)}`.pipe(storageFailure("files.get"))
      if (rows[0] === undefined) return yield* missing(fileId)
      return fileObjectOf(rows[0])
    })

    const list = Effect.fn("FileStore.list")(function* (userId: bigint, query: FileListQuery) {
      // No stored file has another purpose (and a caller's string, NUL and all, never reaches the database).
      if (query.purpose !== undefined && !isFilePurpose(query.purpose)) {
        return { object: "list", data: [], first_id: null, last_id: null, has_more: false } satisfies FileList
      }
      const now = new Date(yield* Clock.currentTimeMillis)
      const limit = Math.max(1, Math.min(10_000, Math.floor(query.limit)))
      const after = query.after === undefined
        ? sql``
        : query.order === "asc"
        ? sql`AND id > ${query.after}`
        : sql`AND id < ${query.after}`
      const purpose = query.purpose === undefined ? sql`` : sql`AND purpose = ${query.purpose}`
      const rows = yield* sql<FileRow>`
        SELECT ${sql.literal(FILE_COLUMNS)} FROM files
        WHERE user_id = ${userId} AND ${visible(now)} ${after} ${purpose}
        ORDER BY id ${sql.literal(query.order === "asc" ? "ASC" : "DESC")}
        LIMIT ${limit + 1}`.pipe(storageFailure("files.list"))
      const data = rows.slice(0, limit).map(fileObjectOf)
      return {
        object: "list",
        data,
        first_id: data[0]?.id ?? null,
        last_id: data[data.length - 1]?.id ?? null,
        has_more: rows.length > limit
      } satisfies FileList
    })

    const readChunk = (fileId: string, seq: number) =>
      sql<{ data: Uint8Array }>`SELECT data FROM file_chunks WHERE file_id = ${fileId} AND seq = ${seq}`.pipe(
        Effect.map((rows) => rows[0]?.data),
        storageFailure("files.read")
      )

    const content = Effect.fn("FileStore.content")(function* (userId: bigint, fileId: string) {
      const file = yield* get(userId, fileId)
      const step = (
        state: ReadState
      ): Effect.Effect<readonly [ReadonlyArray<Uint8Array>, Option.Option<ReadState>], StorageUnavailable> =>
        state.read >= file.bytes
          ? Effect.succeed([[], Option.none()] as const)
          : Effect.flatMap(readChunk(file.id, state.seq), (data) =>
            data === undefined
              ? Effect.die(new Error(`The file ${file.id} was removed while it was read`))
              : Effect.succeed(
                [
                  [new Uint8Array(data.buffer, data.byteOffset, data.byteLength)],
                  Option.some({ seq: state.seq + 1, read: state.read + data.byteLength })
                ] as const
              ))
      const stream = Stream.paginate<ReadState, Uint8Array, StorageUnavailable>({ seq: 0, read: 0 }, step)
      return { file, stream } satisfies FileContent
    })

    const remove = Effect.fn("FileStore.remove")(function* (userId: bigint, fileId: string) {
      if (!isFileId(fileId)) return yield* missing(fileId)
      const now = new Date(yield* Clock.currentTimeMillis)
      const rows = yield* sql<{ id: string }>`
        UPDATE files SET deleted = true
        WHERE id = ${fileId} AND user_id = ${userId} AND ${visible(now)}
        RETURNING id`.pipe(storageFailure("files.remove"))
      if (rows[0] === undefined) return yield* missing(fileId)
      yield* purge(fileId)
      return { id: fileId, object: "file", deleted: true } satisfies FileDeleted
    })

    const sweep = Effect.gen(function* () {
      const nowMillis = yield* Clock.currentTimeMillis
      const now = new Date(nowMillis)
      const stale = new Date(nowMillis - STALE_UPLOAD_MILLIS)
      const rows = yield* sql<{ id: string }>`
        SELECT id FROM files
        WHERE deleted OR expires_at <= ${now} OR (NOT complete AND written_at < ${stale})
        LIMIT ${SWEEP_BATCH}`.pipe(storageFailure("files.sweep"))
      for (const row of rows) yield* purge(row.id)
      if (rows.length > 0) yield* Effect.logDebug("Swept files").pipe(Effect.annotateLogs("files", rows.length))
      return rows.length
    }).pipe(Effect.withSpan("FileStore.sweep"))

    return FileStore.of({ upload, commit, discard, create, createFromLines, get, list, content, remove, sweep })
  })
