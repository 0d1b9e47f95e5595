/**
 * A batch survives a SIGKILL of an instance running it: two `src/main.ts` processes share one PostgreSQL database
 * and one batch (`@anthropic-ai/sdk`); one is killed mid-run; the other takes the dead one's claimed lines over once
 * their lease runs out and folds its journal once it is stale. Every line ends once, and every line that was
 * answered is billed exactly once: a taken-over line already charged (its usage row, or its charge still in the dead
 * instance's journal rows) is not sent again (`batch_line_interrupted`), one not charged is sent again.
 */
import { ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { startEmulator } from "../../emulator/Emulator.ts"
import { freshPostgres } from "../support/Gateway.ts"
import { type MainProcess, startMain, writeTempFile } from "../support/MainProcess.ts"
import { queryPostgres } from "../support/Store.ts"

const KEY = "sk-test-batch-kill-0001"
const LINES = 30

const configJson = (emulatorUrl: string) =>
  JSON.stringify({
    groups: { default: { ratio: 1 } },
    models: { "gpt-batch": { input: 1, output: 2 } },
    channels: [{
      name: "emu-openai",
      type: "openai",
      base_url: emulatorUrl,
      keys: ["sk-test-up-openai"],
      models: ["gpt-batch"]
    }],
    users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }],
    settings: { batch_concurrency: 3, batch_lease_seconds: 1, batch_poll_ms: 50 }
  })

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

Deno.test("a batch survives a SIGKILL of an instance running it: every answered line billed once", async () => {
  const emulator = startEmulator({ latencyMs: 120 })
  const database = await freshPostgres()
  const file = await writeTempFile("batch-kill.json", configJson(emulator.url))
  const dataDirs = [
    await Deno.makeTempDir({ prefix: "sluice_batch_kill_" }),
    await Deno.makeTempDir({ prefix: "sluice_batch_kill_" })
  ]
  const envOf = (index: number) => ({
    DATABASE_URL: database.url,
    SLUICE_CONFIG: file.path,
    SLUICE_ROOT_PASSWORD: "root-password-batch-kill",
    SLUICE_DATA_DIR: dataDirs[index],
    SLUICE_LEASE_STALE_SECONDS: "2"
  })
  const instances: Array<MainProcess> = [await startMain(envOf(0)), await startMain(envOf(1))]
  try {
    const killed = new Anthropic({ apiKey: KEY, baseURL: instances[0].url, maxRetries: 0 })
    const survivor = new Anthropic({ apiKey: KEY, baseURL: instances[1].url, maxRetries: 0 })
    const created = await killed.messages.batches.create({
      requests: Array.from({ length: LINES }, (_, index) => ({
        custom_id: `k-${index}`,
        params: {
          model: "gpt-batch",
          max_tokens: 16,
          messages: [{ role: "user" as const, content: `Kill marker k${index}x.` }]
        }
      }))
    })
    for (let tries = 0; tries < 400; tries++) {
      if ((await survivor.messages.batches.retrieve(created.id)).request_counts.succeeded >= 6) break
      await sleep(20)
    }
    instances[0].signal("SIGKILL")
    await instances[0].exited
    let batch = await survivor.messages.batches.retrieve(created.id)
    for (let tries = 0; tries < 600 && batch.processing_status !== "ended"; tries++) {
      await sleep(50)
      batch = await survivor.messages.batches.retrieve(created.id)
    }
    strictEqual(batch.processing_status, "ended")
    const counts = batch.request_counts
    strictEqual(counts.succeeded + counts.errored, LINES, JSON.stringify(counts))
    // The dead instance's journal is folded by the survivor once stale.
    for (let tries = 0; tries < 100; tries++) {
      const [left] = await queryPostgres(
        database.url,
        `SELECT count(*) FILTER (WHERE c.id IS NULL) AS unfolded
         FROM charge_journal j LEFT JOIN ledger_commits c ON c.id = j.id`
      )
      if (Number(left.unfolded) === 0) break
      await sleep(100)
    }
    await sleep(300)
    const billed = new Map(
      (await queryPostgres(
        database.url,
        `SELECT request_id, count(*) FILTER (WHERE status < 400) AS billed FROM usage_logs
         WHERE request_id LIKE '${created.id}.%' GROUP BY request_id`
      )).map((row) => [String(row.request_id), Number(row.billed)])
    )
    let index = 0
    for await (const entry of await survivor.messages.batches.results(created.id)) {
      const requestId = `${created.id}.${index++}`
      if (entry.result.type !== "succeeded") {
        ok(entry.result.type === "errored")
        strictEqual((entry.result.error.error as unknown as { code: string }).code, "batch_line_interrupted")
      }
      strictEqual(billed.get(requestId), 1, `${requestId} (${entry.result.type}): billed once`)
    }
    strictEqual(index, LINES)
  } finally {
    await Promise.all(instances.map((instance) => instance.kill()))
    await database.drop()
    await emulator.close()
    await file.remove()
    for (const dir of dataDirs) await Deno.remove(dir, { recursive: true }).catch(() => undefined)
  }
})
