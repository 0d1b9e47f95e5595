/**
 * The billing journal file (`src/billing/journal/JournalFile.ts`) on real
 * temporary directories: reopening, folding, torn tails, rotation, failed
 * writes and fdatasyncs, group commit.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict"
import { Effect, Exit, Fiber, Logger, References, type Scope } from "effect"
import { encodeFrame, HEADER_BYTES } from "../../src/billing/journal/Frame.ts"
import {
  type JournalFile,
  type JournalFileOptions,
  JournalWriteError,
  openJournalFile
} from "../../src/billing/journal/JournalFile.ts"

interface LogLine {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** Runs `program` scoped, with every log line appended to `logs` instead of printed. */
const run = <A, E>(program: Effect.Effect<A, E, Scope.Scope>, logs: Array<LogLine> = []): Promise<A> => {
  const collector = Logger.make((options) => {
    const parts = Array.isArray(options.message) ? options.message : [options.message]
    logs.push({
      level: options.logLevel,
      message: parts.map(String).join(" "),
      annotations: { ...options.fiber.getRef(References.CurrentLogAnnotations) }
    })
  })
  return program.pipe(Effect.scoped, Effect.provide(Logger.layer([collector])), Effect.runPromise)
}

/** Opens the journal in `dir`, hands it to `body`, and closes it again. */
const withJournal = <A>(
  dir: string,
  body: (journal: JournalFile) => A | Promise<A>,
  options?: JournalFileOptions,
  logs?: Array<LogLine>
): Promise<A> =>
  run(Effect.flatMap(openJournalFile(dir, options), (journal) => Effect.promise(async () => await body(journal))), logs)

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (payload: Uint8Array) => new TextDecoder().decode(payload)
const records = (journal: JournalFile) => journal.unfolded.map((record) => [record.seq, text(record.payload)])

/** The segment files in `dir`, in name order. */
const segmentsIn = (dir: string): Array<string> =>
  [...Deno.readDirSync(dir)].map((entry) => entry.name).filter((name) => name.endsWith(".log")).sort()

/** `Deno.test` with a fresh temporary directory, removed afterwards. */
const journalTest = (name: string, body: (dir: string) => Promise<void>) =>
  Deno.test(name, async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-journal-" })
    try {
      await body(dir)
    } finally {
      await Deno.remove(dir, { recursive: true })
    }
  })

journalTest("JournalFile: records appended are unfolded at reopen, in order, with seqs from 1", async (dir) => {
  const seqs = await withJournal(dir, (journal) => {
    deepStrictEqual(journal.unfolded, [])
    deepStrictEqual(journal.size(), { bytes: 0, segments: 0 })
    return [journal.append(bytes("one")), journal.append(bytes("two")), journal.append(new Uint8Array())]
  })
  deepStrictEqual(seqs, [1, 2, 3])
  deepStrictEqual(segmentsIn(dir), ["journal-0000000000000001.log"])
  await withJournal(dir, (journal) => {
    deepStrictEqual(records(journal), [[1, "one"], [2, "two"], [3, ""]])
    deepStrictEqual(journal.size(), { bytes: 3 * HEADER_BYTES + 6, segments: 1 })
    strictEqual(journal.append(bytes("four")), 4)
  })
  await withJournal(dir, (journal) => deepStrictEqual(journal.unfolded.map((record) => record.seq), [1, 2, 3, 4]))
})

journalTest("JournalFile: after markFolded(seq), a reopen returns only the records after seq", async (dir) => {
  await withJournal(dir, (journal) => {
    for (const name of ["a", "b", "c", "d"]) journal.append(bytes(name))
    strictEqual(journal.markFolded(2), true)
    // The folded position never moves back.
    strictEqual(journal.markFolded(1), true)
  })
  await withJournal(dir, (journal) => {
    deepStrictEqual(records(journal), [[3, "c"], [4, "d"]])
    strictEqual(journal.append(bytes("e")), 5)
    strictEqual(journal.markFolded(4), true)
  })
  await withJournal(dir, (journal) => deepStrictEqual(records(journal), [[5, "e"]]))
})

journalTest(
  "JournalFile: markFolded past the next seq moves the next seq past it, so no new record counts as folded",
  async (dir) => {
    await withJournal(dir, (journal) => {
      journal.append(bytes("a"))
      strictEqual(journal.markFolded(10), true)
      strictEqual(journal.append(bytes("b")), 11)
      strictEqual(journal.markFolded(-1), false)
      strictEqual(journal.markFolded(1.5), false)
    })
    await withJournal(dir, (journal) => deepStrictEqual(records(journal), [[11, "b"]]))
  }
)

journalTest(
  "JournalFile: a torn tail is cut at open (logged with the bytes cut) and later appends read back",
  async (dir) => {
    await withJournal(dir, (journal) => {
      journal.append(bytes("kept"))
      journal.append(bytes("torn away"))
    })
    const [segment] = segmentsIn(dir)
    const path = `${dir}/${segment}`
    const whole = Deno.statSync(path).size
    Deno.truncateSync(path, whole - 4)
    const logs: Array<LogLine> = []
    await withJournal(
      dir,
      (journal) => {
        deepStrictEqual(records(journal), [[1, "kept"]])
        strictEqual(Deno.statSync(path).size, HEADER_BYTES + 4)
        strictEqual(journal.append(bytes("after")), 2)
      },
      undefined,
      logs
    )
    const warnings = logs.filter((line) => line.level === "Warn")
    strictEqual(warnings.length, 1)
    strictEqual(warnings[0].annotations.segment, segment)
    strictEqual(warnings[0].annotations.bytes, HEADER_BYTES + 9 - 4)
    const quiet: Array<LogLine> = []
    await withJournal(
      dir,
      (journal) => deepStrictEqual(records(journal), [[1, "kept"], [2, "after"]]),
      undefined,
      quiet
    )
    deepStrictEqual(quiet, [])
  }
)

journalTest("JournalFile: garbage after the last frame is cut at open and appends after it read back", async (dir) => {
  await withJournal(dir, (journal) => void journal.append(bytes("kept")))
  const path = `${dir}/${segmentsIn(dir)[0]}`
  Deno.writeFileSync(path, bytes("garbage, not a frame at all"), { append: true })
  const logs: Array<LogLine> = []
  await withJournal(
    dir,
    (journal) => {
      deepStrictEqual(records(journal), [[1, "kept"]])
      journal.append(bytes("after"))
    },
    undefined,
    logs
  )
  deepStrictEqual(logs.map((line) => [line.level, line.annotations.bytes]), [["Warn", 27]])
  await withJournal(dir, (journal) => deepStrictEqual(records(journal), [[1, "kept"], [2, "after"]]))
})

journalTest(
  "JournalFile: a corrupt frame in an earlier segment ends that segment (logged as an error); later segments are read",
  async (dir) => {
    const payload = bytes("x".repeat(40))
    await withJournal(dir, (journal) => {
      journal.append(payload)
      journal.append(payload)
      journal.markFolded(0)
      journal.append(payload)
    }, { maxSegmentBytes: 100 })
    const [first, second] = segmentsIn(dir)
    deepStrictEqual([first, second], ["journal-0000000000000001.log", "journal-0000000000000003.log"])
    // Flip a payload byte of the second record of the first segment.
    const path = `${dir}/${first}`
    const contents = Deno.readFileSync(path)
    contents[HEADER_BYTES + 40 + HEADER_BYTES + 5] ^= 0xff
    Deno.writeFileSync(path, contents)
    const logs: Array<LogLine> = []
    await withJournal(
      dir,
      (journal) => {
        deepStrictEqual(journal.unfolded.map((record) => record.seq), [1, 3])
        strictEqual(journal.append(payload), 4)
      },
      undefined,
      logs
    )
    const errors = logs.filter((line) => line.level === "Error")
    strictEqual(errors.length, 1)
    strictEqual(errors[0].annotations.segment, first)
    // The earlier segment is left as it was (only the last one's tail is ever cut).
    strictEqual(Deno.statSync(path).size, contents.byteLength)
  }
)

journalTest(
  "JournalFile: markFolded rotates past maxSegmentBytes and deletes older segments whose records are all folded",
  async (dir) => {
    // 40-byte payloads: 61-byte record frames, 21-byte markers; a segment rotates past 100 bytes.
    const payload = bytes("y".repeat(40))
    await withJournal(dir, (journal) => {
      journal.append(payload)
      journal.append(payload)
      strictEqual(journal.markFolded(1), true)
      deepStrictEqual(journal.size(), { bytes: 61 * 2 + 21, segments: 1 })
      // Past 100 bytes, so rotated: the next append opens a new segment.
      strictEqual(journal.append(payload), 3)
      deepStrictEqual(segmentsIn(dir), ["journal-0000000000000001.log", "journal-0000000000000003.log"])
      // Record 2 is not folded yet: the first segment stays.
      strictEqual(journal.markFolded(1), true)
      deepStrictEqual(journal.size(), { bytes: 143 + 61 + 21, segments: 2 })
      // Now it is: the first segment goes, and the second (103 bytes) rotates.
      strictEqual(journal.markFolded(2), true)
      deepStrictEqual(segmentsIn(dir), ["journal-0000000000000003.log"])
      strictEqual(journal.append(payload), 4)
      deepStrictEqual(segmentsIn(dir), ["journal-0000000000000003.log", "journal-0000000000000004.log"])
      deepStrictEqual(journal.size(), { bytes: 61 + 21 * 2 + 61, segments: 2 })
      strictEqual(journal.markFolded(3), true)
      deepStrictEqual(segmentsIn(dir), ["journal-0000000000000004.log"])
    }, { maxSegmentBytes: 100 })
    await withJournal(dir, (journal) => {
      deepStrictEqual(journal.unfolded.map((record) => record.seq), [4])
      deepStrictEqual(journal.size(), { bytes: 61 + 21, segments: 1 })
    })
  }
)

journalTest(
  "JournalFile: seq keeps increasing across reopen after every segment but the active one was deleted",
  async (dir) => {
    const payload = bytes("z".repeat(40))
    await withJournal(dir, (journal) => {
      for (let index = 0; index < 4; index++) journal.append(payload)
      journal.markFolded(4)
      // Rotated; this marker opens a segment of its own and the old one, all folded, goes.
      journal.markFolded(4)
      deepStrictEqual(segmentsIn(dir), ["journal-0000000000000005.log"])
    }, { maxSegmentBytes: 100 })
    await withJournal(dir, (journal) => {
      deepStrictEqual(journal.unfolded, [])
      strictEqual(journal.append(payload), 5)
      journal.markFolded(5)
    })
    await withJournal(dir, (journal) => {
      deepStrictEqual(journal.unfolded, [])
      strictEqual(journal.append(payload), 6)
    })
  }
)

journalTest("JournalFile: an empty last segment gives the next seq by its name", async (dir) => {
  Deno.writeFileSync(`${dir}/journal-0000000000000042.log`, new Uint8Array())
  await withJournal(dir, (journal) => strictEqual(journal.append(bytes("a")), 42))
  await withJournal(dir, (journal) => deepStrictEqual(records(journal), [[42, "a"]]))
})

journalTest(
  "JournalFile: a write that fails part-way throws JournalWriteError and the segment is cut back to its last frame",
  async (dir) => {
    // The real write, but a fault does what a filling disk does: a short write (half the frame reaches the file),
    // then ENOSPC on the write of the rest.
    let fault: "none" | "short" | "full" = "none"
    const io = {
      write: (file: Deno.FsFile, chunk: Uint8Array) => {
        if (fault === "full") {
          fault = "none"
          throw new Error("No space left on device (os error 28)")
        }
        if (fault === "short") {
          fault = "full"
          return file.writeSync(chunk.subarray(0, Math.floor(chunk.byteLength / 2)))
        }
        return file.writeSync(chunk)
      }
    }
    await withJournal(dir, (journal) => {
      journal.append(bytes("first"))
      const before = Deno.statSync(`${dir}/${segmentsIn(dir)[0]}`).size
      fault = "short"
      const secret = bytes("secret payload")
      let thrown: unknown
      try {
        journal.append(secret)
      } catch (error) {
        thrown = error
      }
      ok(thrown instanceof JournalWriteError)
      strictEqual(thrown._tag, "JournalWriteError")
      ok(thrown.message.includes("No space left on device"))
      ok(!thrown.message.includes("secret"))
      strictEqual(Deno.statSync(`${dir}/${segmentsIn(dir)[0]}`).size, before)
      deepStrictEqual(journal.size().bytes, before)
      // The failed record took no seq.
      strictEqual(journal.append(bytes("second")), 2)
      // A marker that cannot be written: false, not a throw.
      fault = "short"
      strictEqual(journal.markFolded(1), false)
      strictEqual(journal.append(bytes("third")), 3)
    }, { io })
    const logs: Array<LogLine> = []
    await withJournal(
      dir,
      (journal) => deepStrictEqual(records(journal), [[1, "first"], [2, "second"], [3, "third"]]),
      {
        io
      },
      logs
    )
    deepStrictEqual(logs, [])
  }
)

journalTest("JournalFile: a payload over the frame cap throws JournalWriteError and writes nothing", async (dir) => {
  await withJournal(dir, (journal) => {
    throws(() => journal.append(new Uint8Array(64 * 1024 * 1024 + 1)), JournalWriteError)
    deepStrictEqual(journal.size(), { bytes: 0, segments: 0 })
  })
})

journalTest("JournalFile: concurrent sync callers share fdatasyncs (group commit)", async (dir) => {
  let fdatasyncs = 0
  const io = {
    syncData: async (file: Deno.FsFile) => {
      fdatasyncs++
      await file.syncData()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  await run(Effect.gen(function* () {
    const journal = yield* openJournalFile(dir, { io })
    journal.append(bytes("a"))
    yield* journal.sync
    strictEqual(fdatasyncs, 1)
    const callers = 20
    for (let index = 0; index < callers; index++) journal.append(bytes(`r${index}`))
    yield* Effect.all(Array.from({ length: callers }, () => journal.sync), { concurrency: "unbounded" })
    // The first caller starts a round; the others asked while it ran and share the next one.
    const rounds = fdatasyncs - 1
    ok(rounds >= 1 && rounds <= 2, `${rounds} fdatasyncs for ${callers} callers`)
    const afterBatch = fdatasyncs
    // A caller who asks while a round runs waits for the next one, which covers what it appended.
    const first = yield* Effect.forkChild(journal.sync)
    yield* Effect.yieldNow
    journal.append(bytes("late"))
    const late = yield* Effect.forkChild(journal.sync)
    yield* Effect.yieldNow
    strictEqual(fdatasyncs, afterBatch + 1)
    yield* Fiber.joinAll([first, late])
    strictEqual(fdatasyncs, afterBatch + 2)
  }))
})

journalTest(
  "JournalFile: after a failed fdatasync, sync and append fail until the journal is reopened",
  async (dir) => {
    const io = { syncData: () => Promise.reject(new Error("Input/output error (os error 5)")) }
    await run(Effect.gen(function* () {
      const journal = yield* openJournalFile(dir, { io })
      journal.append(bytes("a"))
      const exit = yield* Effect.exit(journal.sync)
      ok(Exit.isFailure(exit))
      const again = yield* Effect.flip(journal.sync)
      strictEqual(again._tag, "JournalWriteError")
      ok(again.message.includes("Input/output error"))
      throws(() => journal.append(bytes("b")), JournalWriteError)
      strictEqual(journal.markFolded(1), false)
    }))
    await withJournal(dir, (journal) => deepStrictEqual(records(journal), [[1, "a"]]))
  }
)

journalTest(
  "JournalFile: a second open of a journal already open fails with JournalOpenError; so does a file for a directory",
  async (dir) => {
    await run(Effect.gen(function* () {
      yield* openJournalFile(dir)
      const error = yield* Effect.flip(openJournalFile(dir))
      strictEqual(error._tag, "JournalOpenError")
      ok(error.message.includes("already open"))
    }))
    // Closed: it opens again.
    await withJournal(dir, (journal) => deepStrictEqual(journal.unfolded, []))
    const file = `${dir}/not-a-directory`
    Deno.writeTextFileSync(file, "")
    const error = await run(Effect.flip(openJournalFile(file)))
    strictEqual(error._tag, "JournalOpenError")
  }
)

journalTest("JournalFile: the directory is created if missing; after the scope closes, append throws", async (root) => {
  const dir = `${root}/nested/journal`
  const journal = await withJournal(dir, (journal) => {
    journal.append(bytes("a"))
    return journal
  })
  throws(() => journal.append(bytes("b")), JournalWriteError)
  strictEqual(journal.markFolded(1), false)
  const error = await run(Effect.flip(journal.sync))
  strictEqual(error._tag, "JournalWriteError")
  await withJournal(dir, (reopened) => deepStrictEqual(records(reopened), [[1, "a"]]))
})

journalTest("JournalFile: frames on disk are the documented encoding", async (dir) => {
  await withJournal(dir, (journal) => {
    journal.append(bytes("p"))
    journal.markFolded(1)
  })
  const onDisk = Deno.readFileSync(`${dir}/${segmentsIn(dir)[0]}`)
  const expected = [...encodeFrame("record", 1, bytes("p")), ...encodeFrame("folded", 1, new Uint8Array())]
  deepStrictEqual([...onDisk], expected)
})
