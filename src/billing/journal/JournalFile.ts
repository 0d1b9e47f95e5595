/**
 * A local append-only journal of billing records: each record is one frame
 * (`Frame.ts`) appended synchronously to the active segment file, made durable
 * by a group-committed fdatasync, and forgotten once a `folded` marker says the
 * database holds it.
 *
 * On disk, `dir` holds segments named `journal-<seq, 16 digits>.log` (the seq
 * the segment's first record gets) and `journal.lock`, which the open journal
 * holds an exclusive lock on (flock), so two opens never append to one journal.
 * Segments are read in name order; seqs increase across them and across
 * restarts.
 *
 * @since 0.1.0
 */
import { Effect, Schema, type Scope } from "effect"
import { decodeFrames, encodeFrame, MAX_PAYLOAD_BYTES } from "./Frame.ts"

/**
 * The journal could not be opened: the directory could not be created or
 * listed, a segment could not be read, cut or opened, or the journal is
 * already open (its lock is held, in this process or another). `message` names the directory or segment and the OS error, never
 * payload contents.
 *
 * @category errors
 */
export class JournalOpenError extends Schema.TaggedError<JournalOpenError>()("JournalOpenError", {
  message: Schema.String
}) {}

/**
 * A record or marker could not be written or made durable: the write or the
 * fdatasync failed, the payload is over the frame cap, or the journal is closed
 * or failed. `message` names the segment and the OS error, never payload
 * contents.
 *
 * @category errors
 */
export class JournalWriteError extends Schema.TaggedError<JournalWriteError>()("JournalWriteError", {
  message: Schema.String
}) {}

/**
 * One record read back from the journal: its seq and the payload bytes it was
 * appended with.
 *
 * @category models
 */
export interface JournalRecord {
  readonly seq: number
  readonly payload: Uint8Array
}

/**
 * An open journal. `append` and `markFolded` are synchronous (no await between
 * the call and the bytes reaching the OS); `sync` is what makes them durable.
 *
 * @category models
 */
export interface JournalFile {
  /**
   * Appends one record synchronously as one frame; returns its seq (monotonic
   * across restarts). Throws JournalWriteError when the write fails; after a
   * failed or short write the segment is truncated back to its last good end,
   * so later appends keep the framing intact (if even that truncation fails,
   * the segment is left and the next append opens a new one).
   */
  readonly append: (payload: Uint8Array) => number
  /**
   * fdatasync of the active segment (and of segments rotated since the last
   * sync; the directory too after a segment was created), group-committed:
   * callers that ask while a sync runs share the next one. It covers every
   * append that returned before it was asked for. After one failed fdatasync
   * the journal is failed: this and every later `sync` fail, `append` throws,
   * `markFolded` returns false (the page cache may have dropped the unsynced
   * bytes, so no later success could be trusted); reopen to go on.
   */
  readonly sync: Effect.Effect<void, JournalWriteError>
  /**
   * Every record with seq <= `seq` is folded: appends a `folded` marker,
   * deletes older segments all of whose records are folded (never the active
   * one), and rotates the active segment when it exceeds `maxSegmentBytes`
   * (the next append opens a new segment). Returns false (never throws) if the
   * marker could not be written — the records are then folded again after a
   * restart, which the caller's exactly-once claim makes harmless. The folded
   * position never moves back: a `seq` below it marks the current position
   * again. A `seq` at or past the next seq moves the next seq past it.
   */
  readonly markFolded: (seq: number) => boolean
  /**
   * The records found at open past the last folded marker, oldest first (what
   * recovery must fold before the gateway serves).
   */
  readonly unfolded: ReadonlyArray<JournalRecord>
  /** Bytes on disk across segments; segments count. */
  readonly size: () => { readonly bytes: number; readonly segments: number }
}

/**
 * The journal's two system calls, replaceable so tests can inject a failing
 * write or count fdatasyncs. `write` writes some prefix of `bytes` and returns
 * how many it wrote (as `FsFile.writeSync`); `syncData` is one fdatasync.
 *
 * @category models
 */
export interface JournalIo {
  readonly write: (file: Deno.FsFile, bytes: Uint8Array) => number
  readonly syncData: (file: Deno.FsFile) => Promise<void>
}

/**
 * `maxSegmentBytes`: the size (bytes) past which `markFolded` rotates the
 * active segment, 16 MiB unless given. `io`: replaces the write or the
 * fdatasync (tests).
 *
 * @category models
 */
export interface JournalFileOptions {
  readonly maxSegmentBytes?: number
  readonly io?: Partial<JournalIo>
}

/**
 * The default `maxSegmentBytes`: 16 MiB.
 *
 * @category constants
 */
export const DEFAULT_MAX_SEGMENT_BYTES = 16 * 1024 * 1024

const SEGMENT_NAME = /^journal-(\d{16})\.log$/
const LOCK_NAME = "journal.lock"
const EMPTY = new Uint8Array(0)

const segmentName = (firstSeq: number): string => `journal-${String(firstSeq).padStart(16, "0")}.log`

const reason = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

const defaultIo: JournalIo = {
  write: (file, bytes) => file.writeSync(bytes),
  syncData: (file) => file.syncData()
}

interface Segment {
  readonly name: string
  readonly path: string
  /** The seq in the name. */
  readonly firstSeq: number
  /** Bytes in the file, as far as this process knows. */
  bytes: number
  /** The highest record seq in the segment (0: none). */
  lastRecordSeq: number
}

interface Note {
  readonly level: "warning" | "error"
  readonly message: string
  readonly segment: string
  readonly bytes: number
}

interface Scan {
  readonly segments: Array<Segment>
  readonly unfolded: Array<JournalRecord>
  readonly folded: number
  readonly nextSeq: number
  readonly notes: Array<Note>
}

/** Reads every segment in `dir` in name order; cuts the torn or corrupt tail of the last one. */
const scan = (dir: string): Scan => {
  const names: Array<string> = []
  for (const entry of Deno.readDirSync(dir)) {
    if (entry.isFile && SEGMENT_NAME.test(entry.name)) names.push(entry.name)
  }
  names.sort()
  const segments: Array<Segment> = []
  const records: Array<JournalRecord> = []
  const notes: Array<Note> = []
  let folded = 0
  let highestSeq = 0
  for (const [index, name] of names.entries()) {
    const path = `${dir}/${name}`
    const bytes = Deno.readFileSync(path)
    const decoded = decodeFrames(bytes)
    const segment: Segment = {
      name,
      path,
      firstSeq: Number(SEGMENT_NAME.exec(name)![1]),
      bytes: bytes.byteLength,
      lastRecordSeq: 0
    }
    for (const frame of decoded.frames) {
      highestSeq = Math.max(highestSeq, frame.seq)
      if (frame.kind === "folded") folded = Math.max(folded, frame.seq)
      else {
        segment.lastRecordSeq = Math.max(segment.lastRecordSeq, frame.seq)
        records.push(frame)
      }
    }
    const bad = bytes.byteLength - decoded.goodLength
    if (bad > 0) {
      const what = decoded.corrupt ? "a corrupt frame" : "a torn frame"
      if (index === names.length - 1) {
        try {
          Deno.truncateSync(path, decoded.goodLength)
        } catch (cause) {
          throw new JournalOpenError({
            message: `Could not cut the torn tail of journal segment ${path}: ${reason(cause)}`
          })
        }
        segment.bytes = decoded.goodLength
        notes.push({ level: "warning", message: `Cut ${what} at the tail of the journal`, segment: name, bytes: bad })
      } else {
        notes.push({
          level: "error",
          message: `Skipped the rest of a journal segment after ${what}: records in it are lost`,
          segment: name,
          bytes: bad
        })
      }
    }
    segments.push(segment)
  }
  const lastName = segments.at(-1)?.firstSeq ?? 0
  return {
    segments,
    // Copies: the unfolded payloads outlive the segment buffers they were read from.
    unfolded: records.filter((record) => record.seq > folded).map((record) => ({
      seq: record.seq,
      payload: record.payload.slice()
    })),
    folded,
    // The last segment's name is the seq its first record gets (or got): no seq at or past it was used before.
    nextSeq: Math.max(highestSeq + 1, lastName, 1),
    notes
  }
}

/**
 * Opens (creating `dir` if missing) the journal in `dir`: reads every segment,
 * cuts a torn or corrupt tail of the last one (logged as a warning with the
 * bytes cut), skips the rest of an earlier segment after a corrupt frame
 * (logged as an error with the segment name), and keeps the last segment open
 * for appends. The scope's finalizer fdatasyncs and closes the open segment
 * files and releases the lock. Fails with `JournalOpenError` when the
 * directory or a segment cannot be read, cut or opened, or the journal is
 * already open. `maxSegmentBytes` is in bytes (default 16 MiB).
 *
 * @category constructors
 */
export const openJournalFile: (
  dir: string,
  options?: JournalFileOptions
) => Effect.Effect<JournalFile, JournalOpenError, Scope.Scope> = Effect.fn("openJournalFile")(function* (
  dir: string,
  options?: JournalFileOptions
) {
  const io: JournalIo = { ...defaultIo, ...options?.io }
  const maxSegmentBytes = options?.maxSegmentBytes ?? DEFAULT_MAX_SEGMENT_BYTES
  const { journal, notes } = yield* Effect.acquireRelease(
    Effect.try({
      try: () => {
        Deno.mkdirSync(dir, { recursive: true })
        const lock = Deno.openSync(`${dir}/${LOCK_NAME}`, { write: true, create: true })
        if (!lock.tryLockSync(true)) {
          lock.close()
          throw new JournalOpenError({
            message: `Could not open the journal in ${dir}: it is already open (its lock is held)`
          })
        }
        try {
          const found = scan(dir)
          const last = found.segments.at(-1)
          const file = last === undefined ? undefined : Deno.openSync(last.path, { append: true })
          return { journal: makeJournal(dir, io, maxSegmentBytes, found, file, lock), notes: found.notes }
        } catch (cause) {
          lock.close()
          throw cause
        }
      },
      catch: (cause) =>
        cause instanceof JournalOpenError
          ? cause
          : new JournalOpenError({ message: `Could not open the journal in ${dir}: ${reason(cause)}` })
    }),
    ({ journal }) =>
      Effect.promise(journal.close).pipe(
        Effect.flatMap((failures) =>
          Effect.forEach(failures, (failure) =>
            Effect.logWarning("Could not fdatasync a journal segment at close").pipe(
              Effect.annotateLogs({ journal: dir, error: failure })
            ))
        )
      )
  )
  for (const note of notes) {
    const log = note.level === "warning" ? Effect.logWarning(note.message) : Effect.logError(note.message)
    yield* log.pipe(Effect.annotateLogs({ journal: dir, segment: note.segment, bytes: note.bytes }))
  }
  return journal.file
})

type Resume = (effect: Effect.Effect<void, JournalWriteError>) => void

const makeJournal = (
  dir: string,
  io: JournalIo,
  maxSegmentBytes: number,
  found: Scan,
  openFile: Deno.FsFile | undefined,
  lock: Deno.FsFile
) => {
  const segments = found.segments
  let nextSeq = found.nextSeq
  let folded = found.folded
  /** The segment appends go to, with its open file; undefined after a rotation until the next write. */
  let active: { readonly segment: Segment; readonly file: Deno.FsFile } | undefined = openFile === undefined
    ? undefined
    : { segment: segments.at(-1)!, file: openFile }
  /** Files of segments left since the last sync: synced by the next one, then closed. */
  let retired: Array<Deno.FsFile> = []
  /** A segment was created since the last sync, so the directory needs one too. */
  let directoryDirty = false
  let closed = false
  /** Set by a failed fdatasync: the journal refuses all work from then on. */
  let failure: string | undefined
  let syncing: Promise<void> | undefined
  let waiting: Array<Resume> = []

  const unusable = (): string | undefined =>
    closed ? "the journal is closed" : failure === undefined ? undefined : `an earlier fdatasync failed (${failure})`

  const retire = () => {
    if (active !== undefined) retired.push(active.file)
    active = undefined
  }

  /** The open segment, creating `journal-<next seq>.log` when there is none. */
  const target = (): { readonly segment: Segment; readonly file: Deno.FsFile } => {
    if (active !== undefined) return active
    // Names strictly increase even when a segment of markers alone was rotated without using a seq.
    const firstSeq = Math.max(nextSeq, (segments.at(-1)?.firstSeq ?? 0) + 1)
    const name = segmentName(firstSeq)
    const path = `${dir}/${name}`
    let file: Deno.FsFile
    try {
      file = Deno.openSync(path, { append: true, createNew: true })
    } catch (cause) {
      throw new JournalWriteError({ message: `Could not create journal segment ${path}: ${reason(cause)}` })
    }
    nextSeq = firstSeq
    directoryDirty = true
    const segment: Segment = { name, path, firstSeq, bytes: 0, lastRecordSeq: 0 }
    segments.push(segment)
    active = { segment, file }
    return active
  }

  /** Writes one whole frame to the open segment, or cuts the segment back to where it was and throws. */
  const writeFrame = (frame: Uint8Array): Segment => {
    const { segment, file } = target()
    const goodEnd = segment.bytes
    let written = 0
    try {
      while (written < frame.byteLength) {
        const count = io.write(file, frame.subarray(written))
        if (count <= 0) throw new Error(`the write returned ${count}`)
        written += count
      }
    } catch (cause) {
      try {
        // Even when no write reported bytes: what reached the file is not known, the good end is.
        file.truncateSync(goodEnd)
      } catch {
        // The tail stays torn: leave the segment so no later frame lands after it.
        segment.bytes = goodEnd + written
        retire()
      }
      throw new JournalWriteError({
        message: `Could not append a ${frame.byteLength}-byte frame to journal segment ${segment.path}: ${
          reason(cause)
        }`
      })
    }
    segment.bytes += frame.byteLength
    return segment
  }

  const append = (payload: Uint8Array): number => {
    const refusal = unusable()
    if (refusal !== undefined) throw new JournalWriteError({ message: `Could not append a record: ${refusal}` })
    if (payload.byteLength > MAX_PAYLOAD_BYTES) {
      throw new JournalWriteError({
        message: `Could not append a record of ${payload.byteLength} bytes: over the ${MAX_PAYLOAD_BYTES}-byte cap`
      })
    }
    target()
    const seq = nextSeq
    const segment = writeFrame(encodeFrame("record", seq, payload))
    segment.lastRecordSeq = seq
    nextSeq = seq + 1
    return seq
  }

  const markFolded = (seq: number): boolean => {
    if (unusable() !== undefined || !Number.isSafeInteger(seq) || seq < 0) return false
    const position = Math.max(seq, folded)
    try {
      writeFrame(encodeFrame("folded", position, EMPTY))
    } catch {
      return false
    }
    folded = position
    nextSeq = Math.max(nextSeq, position + 1)
    // The marker sits in the last segment, which is never deleted here, so the position outlives what it frees.
    const last = segments.at(-1)
    for (const segment of segments.filter((s) => s !== last && s.lastRecordSeq <= folded)) {
      try {
        Deno.removeSync(segment.path)
        segments.splice(segments.indexOf(segment), 1)
      } catch {
        // Kept in the list; the next markFolded tries again.
      }
    }
    if (active !== undefined && active.segment.bytes > maxSegmentBytes) retire()
    return true
  }

  const syncDirectory = async () => {
    const handle = await Deno.open(dir, { read: true })
    try {
      await handle.sync()
    } finally {
      handle.close()
    }
  }

  /** One fdatasync round for everyone waiting; the next round starts when it ends, if anyone asked meanwhile. */
  const startRound = () => {
    const batch = waiting
    waiting = []
    const refusal = unusable()
    if (refusal !== undefined) {
      for (const resume of batch) resume(Effect.fail(new JournalWriteError({ message: `Could not sync: ${refusal}` })))
      return
    }
    const files = active === undefined ? retired : [...retired, active.file]
    const leaving = retired
    retired = []
    const directory = directoryDirty
    directoryDirty = false
    syncing = (async () => {
      let outcome: Effect.Effect<void, JournalWriteError> = Effect.void
      try {
        await Promise.all(files.map((file) => io.syncData(file)))
        if (directory) await syncDirectory()
        for (const file of leaving) file.close()
      } catch (cause) {
        failure = reason(cause)
        retired.push(...leaving)
        outcome = Effect.fail(
          new JournalWriteError({ message: `Could not fdatasync the journal in ${dir}: ${failure}` })
        )
      }
      // The round is over before its callers resume: a sync asked for from here on starts a round of its own.
      syncing = undefined
      if (waiting.length > 0) startRound()
      for (const resume of batch) resume(outcome)
    })()
  }

  const sync: Effect.Effect<void, JournalWriteError> = Effect.callback<void, JournalWriteError>((resume) => {
    waiting.push(resume)
    if (syncing === undefined) startRound()
    return Effect.sync(() => {
      waiting = waiting.filter((other) => other !== resume)
    })
  })

  const size = () => ({
    bytes: segments.reduce((sum, segment) => sum + segment.bytes, 0),
    segments: segments.length
  })

  /**
   * Waits out a running round, then fdatasyncs (unless failed) and closes every open segment file and the lock;
   * returns the fdatasync failures.
   */
  const close = async (): Promise<Array<string>> => {
    closed = true
    while (syncing !== undefined) await syncing
    const files = active === undefined ? retired : [...retired, active.file]
    active = undefined
    retired = []
    const failures: Array<string> = []
    for (const file of files) {
      try {
        if (failure === undefined) file.syncDataSync()
      } catch (cause) {
        failures.push(reason(cause))
      }
      file.close()
    }
    lock.close()
    const refusal = new JournalWriteError({ message: "Could not sync: the journal is closed" })
    for (const resume of waiting) resume(Effect.fail(refusal))
    waiting = []
    return failures
  }

  const file: JournalFile = { append, sync, markFolded, unfolded: found.unfolded, size }
  return { file, close }
}
