/**
 * The ledger agrees with the vendor across crashes on the embedded store
 * (PGlite, no `DATABASE_URL`): one `src/main.ts` process on a data directory
 * in front of one emulator takes bursts of seeded requests in the five text
 * formats over openai and anthropic channels, streamed and not (some callers
 * leave mid-answer), and is SIGKILLed the moment the last answer of a burst
 * was read: those answers' charges are in the journal file
 * (`<data dir>/charge-journal/journal-*.log`) and most likely not yet folded
 * (the fold runs every 250 ms). It is started again on the same directory
 * (its recovery folds the journal before it serves), killed so once more,
 * started a last time and stopped with SIGTERM.
 *
 * Then, reading the store and comparing with what the emulator reported for
 * each answer (never against the ledger alone):
 * - every answer delivered in full is billed exactly once, with the vendor's
 *   tokens and cost: none missing (lost with the kill), none doubled (folded
 *   again at recovery);
 * - an answer cut by its caller is billed no more output than the hold's cap;
 * - `used_quota` equals the logged costs;
 * - a kill left records past the journal's folded position, and the start
 *   after it logged `Charge journal recovered` with as many records.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { openJournalFile } from "../../src/billing/journal/JournalFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import {
  BILLED_ROWS_SQL,
  type Caller,
  checkBilling,
  FORMATS,
  type Outcome,
  promptOf,
  random,
  reportedUsage,
  send
} from "../support/CrashTraffic.ts"
import { startMain, writeTempFile } from "../support/MainProcess.ts"
import { freshPglite } from "../support/PgliteTemplate.ts"
import { queryPglite } from "../support/Store.ts"

const CALLER: Caller = { key: "sk-test-crash-embedded-0001", maxTokens: 48 }
const UPSTREAMS = ["openai", "anthropic"] as const
/** Bursts per run, and requests per burst. */
const BURSTS = 3
const BURST_SIZE = 10

const configJson = (emulatorUrl: string) =>
  JSON.stringify({
    groups: { default: { ratio: 1 } },
    models: Object.fromEntries(UPSTREAMS.map((upstream) => [`m-${upstream}`, { input: 1, output: 2 }])),
    channels: UPSTREAMS.map((upstream) => ({
      name: `emu-${upstream}`,
      type: upstream,
      base_url: emulatorUrl,
      keys: [`sk-test-upstream-${upstream}`],
      models: [`m-${upstream}`]
    })),
    users: [{ username: "crash", group: "default", quota: 1_000_000_000_000, tokens: [{ name: "k", key: CALLER.key }] }]
  })

/** The records past the folded position of the journal in `dir` (opened while no gateway holds it). */
const unfoldedIn = (dir: string): Promise<number> =>
  Effect.runPromise(Effect.scoped(Effect.map(openJournalFile(dir), (journal) => journal.unfolded.length)))

/** The `records` of every `Charge journal recovered` line in `stdout` (JSON log lines). */
const recoveredIn = (stdout: string): ReadonlyArray<number> =>
  stdout.split("\n").filter((line) => line.includes("Charge journal recovered")).map((line) =>
    Number(/"records":"?(\d+)/.exec(line)?.[1] ?? Number.NaN)
  )

Deno.test({
  name: "crash billing (embedded store): answers delivered before a SIGKILL are billed once, after the restart",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const emulator = startEmulator({ tokensPerSecond: 400 })
    const file = await writeTempFile("crash.json", configJson(emulator.url))
    const store = await freshPglite()
    const journalDir = `${store.dataDir}/charge-journal`
    const env = {
      SLUICE_CONFIG: file.path,
      SLUICE_ROOT_PASSWORD: "root-password-crash",
      SLUICE_DATA_DIR: store.dataDir
    }
    const next = random(0xe3bed)
    const outcomes: Array<Outcome> = []
    const burst = (base: string) =>
      Promise.all(Array.from({ length: BURST_SIZE }, () => {
        const inbound = FORMATS[Math.floor(next() * FORMATS.length)]
        const upstream = UPSTREAMS[Math.floor(next() * UPSTREAMS.length)]
        const stream = next() < 0.6
        const leave = stream && next() < 0.15
        return send(base, CALLER, { inbound, upstream, stream, leave, text: promptOf(next) })
      })).then((done) => outcomes.push(...done))
    /** Per SIGKILL: the journal records it left unfolded. */
    const unfolded: Array<number> = []
    /** Per start after a kill: the `records` of its `Charge journal recovered` lines. */
    const recovered: Array<ReadonlyArray<number>> = []
    let main = await startMain(env)
    try {
      for (let kill = 0; kill < 2; kill++) {
        for (let round = 0; round < BURSTS; round++) await burst(main.url)
        // The last answer of the burst is read: kill before the next fold.
        await main.kill()
        const names = [...Deno.readDirSync(journalDir)].map((entry) => entry.name)
        ok(names.some((name) => /^journal-\d{16}\.log$/.test(name)), `a journal segment: ${names.join(", ")}`)
        unfolded.push(await unfoldedIn(journalDir))
        main = await startMain(env)
        // The line was written before the gateway served; the pipe that carries it may be read a moment later.
        for (let waited = 0; waited < 3_000 && recoveredIn(main.stdout()).length === 0; waited += 50) {
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        recovered.push(recoveredIn(main.stdout()))
      }
      await burst(main.url)
      main.signal("SIGTERM")
      const exit = await main.exited
      strictEqual(exit.code, 0, exit.stderr)
      strictEqual(await unfoldedIn(journalDir), 0, "a graceful stop leaves nothing unfolded")

      const rows = await queryPglite(store.dataDir, BILLED_ROWS_SQL)
      const check = checkBilling({
        outcomes,
        rows,
        reported: reportedUsage(emulator.requests),
        price: { input: 1, output: 2 },
        maxTokens: CALLER.maxTokens
      })
      const [sums] = await queryPglite(
        store.dataDir,
        `SELECT (SELECT used_quota FROM users WHERE username = 'crash')::text AS used,
                (SELECT COALESCE(SUM(cost), 0) FROM usage_logs WHERE user_id =
                  (SELECT id FROM users WHERE username = 'crash'))::text AS logged`
      )
      const summary = `${outcomes.length} requests: ${check.full} delivered in full, ${check.cut} cut by the caller, ` +
        `${outcomes.length - check.full - check.cut} failed; ${check.mismatched.length} mismatched, ` +
        `${check.missing.length} missing; journal records left unfolded by each kill: ${unfolded.join(", ")}; ` +
        `recovered at each restart: ${JSON.stringify(recovered)}`
      ok(check.full > outcomes.length / 2, summary)
      deepStrictEqual(check.mismatched.slice(0, 5), [], summary)
      deepStrictEqual(check.missing.slice(0, 5), [], summary)
      strictEqual(check.overCap, 0, "a cut answer is never billed above the held output")
      strictEqual(sums.used, sums.logged, "used_quota equals the logged costs")
      // The recovery ran: a kill left journaled charges unfolded, and the next start folded them before it served.
      ok(unfolded.some((count) => count > 0), summary)
      unfolded.forEach((count, index) => {
        deepStrictEqual(recovered[index], count === 0 ? [] : [count], summary)
      })
    } finally {
      await main.kill()
      await emulator.close()
      await file.remove()
      await store.remove()
    }
  }
})
