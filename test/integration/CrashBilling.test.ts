/**
 * The ledger agrees with the vendor under crashes (docs/ARCHITECTURE.md,
 * "Billing truth"): two `src/main.ts` processes share one fresh PostgreSQL database in
 * front of one emulator and take a seeded mix of requests in all five text
 * formats over openai, anthropic and gemini channels, streamed and not. Every
 * streamed answer is read the way the SDKs read it: up to the format's end
 * marker (`[DONE]`, `message_stop`, `response.completed`; generate-content's
 * body end), then the connection is dropped. Some callers leave mid-answer.
 * At 40% of the requests one instance is SIGKILLed right after an answer it
 * delivered in full, its charges journaled (`charge_journal`) and not yet
 * folded. In the first run it is started again and later every database
 * connection of the gateways is killed; in the second it never comes back and
 * every later caller goes to the survivor. The instances count a lease
 * unrenewed for `SLUICE_LEASE_STALE_SECONDS` (4 here) as dead, so a survivor
 * folds the dead instance's journal rows within seconds; the test waits for
 * `charge_journal` to hold no unfolded row before it stops the survivors with SIGTERM.
 *
 * Afterwards, against what the emulator reported for each answer (never
 * against the ledger alone):
 * - every answer delivered in full is billed exactly the usage the vendor
 *   reported, tokens and cost, and none is missing (its charge was journaled
 *   before its end left, so the kill could not give it away) nor doubled;
 * - every answer cut by its caller is billed within the cut-stream rule: no
 *   more output than the hold's cap;
 * - `used_quota` equals the logged costs;
 * - no unfolded row is left in the journal: the dead instance's rows were
 *   folded by a survivor (in the second run, within about twice the stale
 *   time of the kill).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
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
import { freshPostgres, POSTGRES_URL } from "../support/Gateway.ts"
import { type MainProcess, startMain, writeTempFile } from "../support/MainProcess.ts"
import { queryPostgres } from "../support/Store.ts"

const CALLER: Caller = { key: "sk-test-crash-billing-0001", maxTokens: 48 }
const UPSTREAMS = ["openai", "anthropic", "gemini"] as const

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

const number = (value: unknown) => Number(value)
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** `SLUICE_LEASE_STALE_SECONDS` of the instances: a dead one's journal is folded by a live one after this. */
const STALE_SECONDS = 4

/** One run: how many requests, and what goes wrong on the way. */
interface Scenario {
  readonly requests: number
  readonly concurrency: number
  readonly seed: number
  /** Instance 0 is started again (on its data directory) after its SIGKILL; false: never, later callers go to 1. */
  readonly restart: boolean
  /** Every database connection of the gateways is killed at 70% of the requests. */
  readonly killConnections: boolean
}

/** What is left in `charge_journal`: rows whose batch no commit folded yet, and rows of batches already folded. */
interface JournalLeft {
  readonly unfolded: number
  readonly folded: number
}

const journalLeft = async (url: string): Promise<JournalLeft> => {
  const [row] = await queryPostgres(
    url,
    `SELECT count(*) FILTER (WHERE c.id IS NULL) AS unfolded, count(c.id) AS folded
     FROM charge_journal j LEFT JOIN ledger_commits c ON c.id = j.id`
  )
  return { unfolded: number(row.unfolded), folded: number(row.folded) }
}

/**
 * Polls `charge_journal` until it holds no unfolded row or `timeoutMs` passed; returns what is left.
 */
const drainJournal = async (url: string, timeoutMs: number): Promise<JournalLeft> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const left = await journalLeft(url)
    if (left.unfolded === 0 || Date.now() > deadline) return left
    await sleep(250)
  }
}

/**
 * Runs `scenario` on two `src/main.ts` instances sharing one fresh database, SIGKILLs instance 0 right after an
 * answer it delivered in full at 40% of the requests, waits until the journal is folded (the dead instance's rows
 * by a survivor), stops the survivors with SIGTERM and checks the store against what the emulator reported.
 */
const crashRun = async (scenario: Scenario) => {
  const { requests, concurrency } = scenario
  const emulator = startEmulator({ tokensPerSecond: 400 })
  const database = await freshPostgres()
  const file = await writeTempFile("crash.json", configJson(emulator.url))
  // Each instance its own spill directory (a restart finds its own again).
  const dataDirs = [
    await Deno.makeTempDir({ prefix: "sluice_crash_" }),
    await Deno.makeTempDir({ prefix: "sluice_crash_" })
  ]
  const envOf = (index: number) => ({
    DATABASE_URL: database.url,
    SLUICE_CONFIG: file.path,
    SLUICE_ROOT_PASSWORD: "root-password-crash",
    SLUICE_DATA_DIR: dataDirs[index],
    SLUICE_LEASE_STALE_SECONDS: String(STALE_SECONDS)
  })
  const instances: Array<MainProcess> = [await startMain(envOf(0)), await startMain(envOf(1))]
  /** Whether instance `index` runs (instance 0 does not after its SIGKILL, unless restarted). */
  const alive = [true, true]
  const next = random(scenario.seed)
  const outcomes: Array<Outcome> = []
  const killAt = Math.floor(requests * 0.4)
  let killedAt = 0
  let down = false
  /** The killed instance's restart: the connection kill waits for it (it is meant for running gateways). */
  let restarting: Promise<void> | undefined
  let connectionsKilled = 0
  /** Unfolded journal rows older than a survivor's commits a moment after the kill: the dead instance's. */
  let orphaned = 0
  try {
    let sent = 0
    const worker = async () => {
      while (sent < requests) {
        const index = sent++
        if (index === Math.floor(requests * 0.7) && scenario.killConnections) {
          // A gateway still starting (migrations, bootstrap) would exit on the lost connection, as it should.
          await restarting
          const rows = await queryPostgres(
            POSTGRES_URL,
            `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
             WHERE datname = '${new URL(database.url).pathname.slice(1)}' AND pid <> pg_backend_pid()`
          )
          connectionsKilled += rows.length
        }
        const plan = {
          inbound: FORMATS[Math.floor(next() * FORMATS.length)],
          upstream: UPSTREAMS[Math.floor(next() * UPSTREAMS.length)],
          stream: next() < 0.7
        }
        const leave = plan.stream && next() < 0.15
        const text = promptOf(next)
        if (index === killAt) {
          // The kill lands right after an answer of instance 0 was read in full: its charge is journaled, and
          // most likely not yet folded (the fold runs every 250 ms).
          outcomes.push(await send(instances[0].url, CALLER, { ...plan, leave: false, text }))
          down = true
          killedAt = Date.now()
          alive[0] = false
          restarting = (async () => {
            await instances[0].kill()
            // Rows still unfolded once every survivor commit had a chance are the dead instance's.
            await sleep(1_500)
            const [row] = await queryPostgres(
              database.url,
              `SELECT count(*) AS count FROM charge_journal j WHERE written_at < now() - interval '1 second'
               AND NOT EXISTS (SELECT 1 FROM ledger_commits c WHERE c.id = j.id)`
            )
            orphaned = number(row.count)
            if (!scenario.restart) return
            instances[0] = await startMain(envOf(0))
            alive[0] = true
            down = false
          })()
          continue
        }
        // While the killed instance is down, callers go to the other one (as a load balancer would).
        const base = instances[down ? 1 : index % 2].url
        outcomes.push(await send(base, CALLER, { ...plan, leave, text }))
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    await restarting
    // The dead instance's journal rows are folded by a survivor once it renewed no lease for the stale time.
    const left = await drainJournal(database.url, 30_000)
    const drainedMillis = Date.now() - killedAt
    const live = instances.filter((_, index) => alive[index])
    for (const instance of live) instance.signal("SIGTERM")
    const exits = await Promise.all(live.map((instance) => instance.exited))

    const check = checkBilling({
      outcomes,
      rows: await queryPostgres(database.url, BILLED_ROWS_SQL),
      reported: reportedUsage(emulator.requests),
      price: { input: 1, output: 2 },
      maxTokens: CALLER.maxTokens
    })
    const [sums] = await queryPostgres(
      database.url,
      `SELECT (SELECT used_quota FROM users WHERE username = 'crash')::text AS used,
              (SELECT COALESCE(SUM(cost), 0) FROM usage_logs WHERE user_id =
                (SELECT id FROM users WHERE username = 'crash'))::text AS logged`
    )
    const summary = `${outcomes.length} requests: ${check.full} delivered in full, ${check.cut} cut by the caller, ` +
      `${outcomes.length - check.full - check.cut} failed; ${check.mismatched.length} mismatched, ` +
      `${check.missing.length} missing; one SIGKILL (${scenario.restart ? "restarted" : "never restarted"}) ` +
      `leaving ${orphaned} journal rows; ${drainedMillis} ms after it the journal held ${left.unfolded} unfolded ` +
      `rows and ${left.folded} of batches already folded; ${connectionsKilled} database connections killed`
    ok(killedAt > 0 && check.full > requests / 2, summary)
    deepStrictEqual(exits.map((exit) => exit.code), live.map(() => 0), summary)
    deepStrictEqual(check.mismatched.slice(0, 5), [], summary)
    deepStrictEqual(check.missing.slice(0, 5), [], summary)
    strictEqual(check.overCap, 0, "a cut answer is never billed above the held output")
    strictEqual(sums.used, sums.logged, "used_quota equals the logged costs")
    strictEqual(left.unfolded, 0, `the dead instance's journal is folded by a survivor: ${summary}`)
    strictEqual(left.folded, 0, `no journal row outlives the commit that folded its batch: ${summary}`)
    return { orphaned, drainedMillis, summary }
  } finally {
    await Promise.all(instances.map((instance) => instance.kill()))
    await emulator.close()
    await database.drop()
    await file.remove()
    await Promise.all(dataDirs.map((dir) => Deno.remove(dir, { recursive: true }).catch(() => undefined)))
  }
}

Deno.test({
  name: "crash billing: every answer delivered in full is billed exactly what the vendor reported, across a SIGKILL",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await crashRun({ requests: 360, concurrency: 12, seed: 0x1ed9e7, restart: true, killConnections: true })
  }
})

Deno.test({
  name: "crash billing: a survivor folds a SIGKILLed instance's journal that is never restarted, within the stale time",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { orphaned, drainedMillis, summary } = await crashRun({
      requests: 160,
      concurrency: 8,
      seed: 0x5eed42,
      restart: false,
      killConnections: false
    })
    ok(orphaned > 0, `the kill left journaled charges for the survivor to fold: ${summary}`)
    // Folded once the dead lease is stale and the journal rows are as old, at the survivor's next foreign fold
    // (every quarter of the stale time), with room for a loaded machine.
    ok(drainedMillis < (STALE_SECONDS * 2 + 4) * 1000, `folded in time: ${summary}`)
  }
})
