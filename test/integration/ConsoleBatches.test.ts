/**
 * The console's Batches and Files pages in Chromium, against the gateway (PostgreSQL) and the emulator: alice makes an
 * OpenAI batch (`openai`'s `files.create`, then `batches.create`) and a Message Batch (`@anthropic-ai/sdk`'s
 * `messages.batches.create`) with two different keys of hers; signed in, she sees both with their status, counts and
 * the cost equal to the sum of their lines' usage rows (for the OpenAI batch, the usage the emulator reported at the
 * model's prices), downloads the results (the bytes the SDKs read), cancels a running batch, and deletes a file after
 * a confirmation. Her session alone, sent from outside the page, reads but cannot change (403 without same-origin
 * proof); with no key and no session, 401. Bob, signed in, sees none of them and gets 404 for their ids. Both pages
 * pass an axe-core scan with no serious or critical violation; the Batches page is screenshotted to
 * `test/screenshots/console-batches.png` (copied to `docs/console/batches.png`).
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { chromium, type Page } from "playwright-core"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageCall } from "../support/Chromium.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const ALICE = "sk-test-cbatch-alice-0001"
const ALICE_SECOND = "sk-test-cbatch-alice-0002"
const BOB = "sk-test-cbatch-bob-0001"
/** Git-ignored, as the other console screenshots; `docs/console/batches.png` is a copy of one run's. */
const SCREENSHOT = new URL("../screenshots/console-batches.png", import.meta.url)

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-cb": { input: 1, output: 2 }, "claude-cb": { input: 3, output: 5 } },
      channels: [
        { name: "emu-openai", type: "openai", keys: ["sk-test-up-openai"], models: ["gpt-cb"] },
        { name: "emu-anthropic", type: "anthropic", keys: ["sk-test-up-anthropic"], models: ["claude-cb"] }
      ].map((channel) => ({ ...channel, base_url: emulatorUrl })),
      users: [
        {
          username: "alice",
          password: "alice-password-1",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: ALICE }, { name: "second", key: ALICE_SECOND }]
        },
        {
          username: "bob",
          password: "bob-password-1",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: BOB }]
        }
      ],
      settings: { batch_concurrency: 2, batch_poll_ms: 50 }
    }),
    "console-batches.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** The sum of the quota of a batch's usage rows, as the console writes it. */
const chargedOf = async (gateway: TestGateway, batchId: string) => {
  const rows = await gateway.query<{ quota: string }>(
    `SELECT cost::text AS quota FROM usage_logs WHERE request_id LIKE '${batchId}.%'`
  )
  const units = rows.reduce((sum, row) => sum + Number(row.quota), 0)
  return { rows: rows.length, units, text: `${Math.trunc(units / 1e6)}.${String(units % 1e6).padStart(6, "0")} USD` }
}

/**
 * `chargedOf` once the batch's usage rows number `rows`: the rows are written off the request path (the usage log's
 * writer), so a batch can read ended a moment before its last row is in the table.
 */
const chargedWhen = async (gateway: TestGateway, batchId: string, rows: number) => {
  let charged = await chargedOf(gateway, batchId)
  for (let tries = 0; tries < 200 && charged.rows < rows; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    charged = await chargedOf(gateway, batchId)
  }
  return charged
}

const scan = async (page: Page, name: string) => {
  await assertAxeClean(page, name)
}

const signIn = async (page: Page, url: string, username: string, password: string) => {
  await page.goto(url)
  await page.getByLabel("Username").fill(username)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in", exact: true }).click()
  await page.getByRole("heading", { name: "Dashboard" }).waitFor()
}

/** The text of a download link's target, fetched by the page with its session. */
const download = async (page: Page, label: string) => {
  const href = await page.getByRole("link", { name: label }).getAttribute("href")
  ok(href !== null, `a link named ${label}`)
  return await page.evaluate(async (path) => (await fetch(path)).text(), href)
}

Deno.test("console: the Batches and Files pages show the user's own batches and files", async () => {
  const gateway = await startGateway({ store: "postgres", config })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: ALICE, maxRetries: 0 })
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: ALICE_SECOND, maxRetries: 0 })
    const lines = [0, 1, 2].map((index) => ({
      custom_id: `line-${index}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "gpt-cb", messages: [{ role: "user", content: `console batch ${index}` }] }
    }))
    const input = await openai.files.create({
      file: await toFile(new TextEncoder().encode(lines.map((line) => JSON.stringify(line)).join("\n")), "in.jsonl"),
      purpose: "batch"
    })
    const spare = await openai.files.create({
      file: await toFile(new TextEncoder().encode("spare notes"), "notes.txt"),
      purpose: "user_data"
    })
    const batch = await openai.batches.create({
      input_file_id: input.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    const messageBatch = await anthropic.messages.batches.create({
      requests: [0, 1].map((index) => ({
        custom_id: `m-${index}`,
        params: { model: "claude-cb", max_tokens: 16, messages: [{ role: "user", content: `message batch ${index}` }] }
      }))
    })
    let done = await openai.batches.retrieve(batch.id)
    let ended = await anthropic.messages.batches.retrieve(messageBatch.id)
    for (let tries = 0; tries < 200 && (done.status !== "completed" || ended.processing_status !== "ended"); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      done = await openai.batches.retrieve(batch.id)
      ended = await anthropic.messages.batches.retrieve(messageBatch.id)
    }
    strictEqual(done.status, "completed")
    strictEqual(ended.processing_status, "ended")

    const alice = await browser.newPage()
    const problems: Array<string> = []
    alice.on("pageerror", (error) => problems.push(error.message))
    await signIn(alice, gateway.url, "alice", "alice-password-1")
    await alice.getByRole("link", { name: "Batches" }).click()
    await alice.getByRole("heading", { name: "Batches", level: 1 }).waitFor()

    const openRow = alice.locator(`[data-batch-id="${batch.id}"]`)
    const messageRow = alice.locator(`[data-batch-id="${messageBatch.id}"]`)
    await openRow.waitFor()
    await messageRow.waitFor()
    strictEqual(await openRow.getByTestId("batch-status").textContent(), "completed")
    strictEqual(await openRow.getByTestId("batch-counts").textContent(), "total 3 · completed 3 · failed 0")
    strictEqual(await messageRow.getByTestId("batch-status").textContent(), "ended")
    strictEqual(
      await messageRow.getByTestId("batch-counts").textContent(),
      "processing 0 · succeeded 2 · errored 0 · canceled 0 · expired 0"
    )
    const openCharged = await chargedWhen(gateway, batch.id, 3)
    const messageCharged = await chargedWhen(gateway, messageBatch.id, 2)
    deepStrictEqual([openCharged.rows, messageCharged.rows], [3, 2], "one usage row per line")
    ok(openCharged.text !== "0.000000 USD" && messageCharged.text !== "0.000000 USD", "the lines cost something")
    // What the ledger charged is the usage the emulator reported, at gpt-cb's prices (1 and 2 units per token).
    const reported = [0, 1, 2].map((index) => {
      const calls = gateway.emulator.requests.filter((recorded) =>
        recorded.method === "POST" && JSON.stringify(recorded.body).includes(`console batch ${index}`)
      )
      strictEqual(calls.length, 1, `one upstream call for line ${index}`)
      const usage = calls[0].usage
      ok(usage !== undefined, `the emulator recorded line ${index}'s usage`)
      return usage.input + 2 * usage.output
    })
    strictEqual(openCharged.units, reported.reduce((sum, units) => sum + units, 0), "charged as the vendor reported")
    await openRow.getByTestId("batch-cost").filter({ hasText: openCharged.text }).waitFor()
    await messageRow.getByTestId("batch-cost").filter({ hasText: messageCharged.text }).waitFor()

    // The downloads are the bytes the SDKs read.
    strictEqual(
      await download(alice, `Output of ${batch.id}`),
      await (await openai.files.content(done.output_file_id!)).text()
    )
    const results = (await download(alice, `Results of ${messageBatch.id}`)).split("\n").filter((line) => line !== "")
    const sdkResults: Array<string> = []
    for await (const result of await anthropic.messages.batches.results(messageBatch.id)) {
      sdkResults.push(result.custom_id)
    }
    deepStrictEqual(results.map((line) => JSON.parse(line).custom_id), sdkResults)
    await scan(alice, "batches")
    await Deno.mkdir(new URL(".", SCREENSHOT), { recursive: true })
    await alice.screenshot({ path: SCREENSHOT.pathname, fullPage: true })

    // Cancel a running batch from the page: a batch of many lines that cannot all finish at once.
    const long = await anthropic.messages.batches.create({
      requests: Array.from({ length: 60 }, (_, index) => ({
        custom_id: `c-${index}`,
        params: { model: "claude-cb", max_tokens: 16, messages: [{ role: "user", content: `cancel ${index}` }] }
      }))
    })
    await alice.reload()
    const longRow = alice.locator(`[data-batch-id="${long.id}"]`)
    await longRow.getByRole("button", { name: `Cancel ${long.id}` }).click()
    await longRow.getByTestId("batch-status").filter({ hasText: /^(canceling|ended)$/ }).waitFor()
    let cancelled = await anthropic.messages.batches.retrieve(long.id)
    for (let tries = 0; tries < 200 && cancelled.processing_status !== "ended"; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      cancelled = await anthropic.messages.batches.retrieve(long.id)
    }
    ok(cancelled.cancel_initiated_at !== null, "the cancel reached the batch")
    ok(cancelled.request_counts.canceled > 0, "lines were canceled")
    await longRow.getByTestId("batch-status").filter({ hasText: "ended" }).waitFor()
    await longRow.getByTestId("batch-cost").filter({
      hasText: (await chargedWhen(gateway, long.id, cancelled.request_counts.succeeded)).text
    }).waitFor()

    // Files: listed, downloadable, deleted after a confirmation.
    await alice.getByRole("link", { name: "Files" }).click()
    await alice.getByRole("heading", { name: "Files", level: 1 }).waitFor()
    const spareRow = alice.locator(`[data-file-id="${spare.id}"]`)
    await spareRow.waitFor()
    ok((await spareRow.textContent())?.includes("notes.txt"), "the file's name")
    ok((await spareRow.textContent())?.includes("user_data"), "the file's purpose")
    ok((await alice.locator(`[data-file-id="${input.id}"]`).textContent())?.includes("batch"))
    strictEqual(await download(alice, `Download ${spare.id}`), "spare notes")
    await scan(alice, "files")
    await spareRow.getByRole("button", { name: `Delete ${spare.id}` }).click()
    await alice.getByRole("group", { name: `Confirm deleting ${spare.id}` }).getByRole("button", { name: "Delete" })
      .click()
    await alice.getByRole("status").filter({ hasText: `Deleted ${spare.id}.` }).waitFor()
    await alice.locator(`[data-file-id="${spare.id}"]`).waitFor({ state: "detached" })
    strictEqual((await openai.files.list()).data.some((file) => file.id === spare.id), false, "gone for the SDK too")
    deepStrictEqual(problems, [], "no script error")

    // The session alone, from outside the page: a read works; a change without same-origin proof is refused and
    // changes nothing; with neither key nor session, the route's 401.
    const cookie = (await alice.context().cookies()).map((found) => `${found.name}=${found.value}`).join("; ")
    const outside = (method: string, path: string, headers: Record<string, string> = {}) =>
      fetch(`${gateway.url}${path}`, { method, headers: { cookie, ...headers } })
    const read = await outside("GET", `/v1/files/${input.id}`)
    strictEqual(read.status, 200)
    strictEqual((await read.json()).id, input.id)
    const forged = await outside("POST", `/v1/batches/${batch.id}/cancel`, { origin: "https://evil.example" })
    strictEqual(forged.status, 403)
    await forged.body?.cancel()
    const unproven = await outside("DELETE", `/v1/files/${input.id}`)
    strictEqual(unproven.status, 403)
    await unproven.body?.cancel()
    strictEqual((await openai.files.retrieve(input.id)).id, input.id, "the file is still there")
    const anonymous = await fetch(`${gateway.url}/v1/messages/batches`)
    strictEqual(anonymous.status, 401)
    await anonymous.body?.cancel()

    // Bob sees none of it, and alice's ids answer 404 to his session.
    const bob = await browser.newPage()
    await signIn(bob, gateway.url, "bob", "bob-password-1")
    await bob.getByRole("link", { name: "Batches" }).click()
    await bob.getByRole("heading", { name: "OpenAI batches" }).waitFor()
    await bob.waitForLoadState("networkidle")
    strictEqual(await bob.getByTestId("batch-row").count(), 0)
    strictEqual((await pageCall(bob, "GET", `/v1/batches/${batch.id}`)).status, 404)
    strictEqual((await pageCall(bob, "GET", `/v1/messages/batches/${messageBatch.id}`)).status, 404)
    strictEqual((await pageCall(bob, "GET", `/v1/files/${input.id}`)).status, 404)
    strictEqual((await pageCall(bob, "POST", `/v1/messages/batches/${long.id}/cancel`)).status, 404)
    await bob.getByRole("link", { name: "Files" }).click()
    await bob.getByRole("heading", { name: "Files", level: 1 }).waitFor()
    await bob.waitForLoadState("networkidle")
    strictEqual(await bob.getByTestId("file-row").count(), 0)
  } finally {
    await browser.close()
    await gateway.close()
  }
})
