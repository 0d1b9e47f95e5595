/**
 * A request's story: the primary channel answers 500, the secondary answers;
 * `GET /api/log/self/{request_id}` (the owner) and `GET /api/log/{request_id}`
 * (an admin) list both attempts in order — the failed one with its status,
 * the failure in words and no cost, the answering one with the tokens the
 * emulator reported and the cost `usage_logs` holds —, the failover path and
 * the total; another user's session, an unknown id and hostile ids are
 * refused in the envelope naming `request_id`. In Chromium, the all-logs
 * page opens the story from the row (axe-clean; screenshot in
 * `docs/console/`).
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { chromium } from "playwright-core"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { browser } from "../support/Browser.ts"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM } from "../support/Chromium.ts"
import { ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { docsScreenshots } from "../support/Screenshots.ts"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-test": { input: 2, output: 8 } },
      settings: { cooldown_failures: 1000, retry_times: 2 },
      channels: [
        {
          name: "primary",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-primary"],
          models: ["gpt-test"],
          priority: 10
        },
        { name: "secondary", type: "openai", base_url: emulatorUrl, keys: ["sk-test-second"], models: ["gpt-test"] }
      ]
    }),
    "story.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

interface Story {
  request_id: string
  model: string
  attempts: Array<{
    attempt: number
    channel_name: string | null
    channel_id?: number | null
    status: number
    error: string | null
    prompt_tokens: number
    completion_tokens: number
    cached_tokens: number
    latency_ms: number
    first_token_ms: number | null
    quota: number
  }>
  failover_path: Array<string | null>
  quota: number
  prices: { input: number | null; output: number | null } | null
}

Deno.test("request story: attempts, failover path, tokens and cost of one request, owner-checked", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  const chrome = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    for (const username of ["uma", "bob"]) {
      const made = await root.call<{ id: number }>("POST", "/api/user/", {
        username,
        password: `${username}-password-1`
      })
      strictEqual(made.success, true, made.message)
      await root.call("POST", "/api/user/topup", { id: made.data.id, amount: 5_000_000 })
    }
    const uma = browser(gateway.url)
    await uma.login("uma", "uma-password-1")
    const bob = browser(gateway.url)
    await bob.login("bob", "bob-password-1")
    const key = (await uma.call<{ key: string }>("POST", "/api/token/", { name: "story" })).data.key

    gateway.emulator.setFaults([{ match: { key: "sk-test-primary" }, status: 500 }])
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 })
    const { data: completion, response } = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "tell the story" }]
    }).withResponse()
    strictEqual(completion.choices[0].message.content, "Echo: tell the story")
    const requestId = response.headers.get("x-request-id") ?? ""
    ok(requestId !== "", "the answer names its request")

    const rows = await gateway.query<{ attempt: number; cost: string; prompt_tokens: number }>(
      `SELECT attempt, cost::text AS cost, prompt_tokens FROM usage_logs WHERE request_id = '${
        requestId.replaceAll("'", "''")
      }' ORDER BY attempt`
    )
    strictEqual(rows.length, 2, "one row per attempt")

    const own = await uma.call<Story>("GET", `/api/log/self/${encodeURIComponent(requestId)}`)
    strictEqual(own.success, true, own.message)
    const story = own.data
    strictEqual(story.request_id, requestId)
    strictEqual(story.model, "gpt-test")
    deepStrictEqual(story.failover_path, ["primary", "secondary"])
    deepStrictEqual(story.attempts.map((row) => [row.attempt, row.channel_name]), [[1, "primary"], [2, "secondary"]])
    const [failed, answered] = story.attempts
    strictEqual(failed.status, 500)
    ok(failed.error !== null && failed.error.length > 0, "the failure in words")
    strictEqual(failed.quota, 0, "a failed attempt costs nothing")
    strictEqual(answered.status, 200)
    strictEqual(answered.prompt_tokens, completion.usage?.prompt_tokens, "the tokens the vendor reported")
    strictEqual(answered.completion_tokens, completion.usage?.completion_tokens)
    const charged = rows.reduce((sum, row) => sum + Number(row.cost), 0)
    ok(charged > 0)
    strictEqual(story.quota, charged, "the total is what usage_logs charged")
    // 2 USD per 1M input and 8 per 1M output, in quota units (1 = 0.000001 USD), at ratio 1.
    strictEqual(
      charged,
      (completion.usage?.prompt_tokens ?? 0) * 2 + (completion.usage?.completion_tokens ?? 0) * 8,
      "the charge is the vendor's usage at the list prices"
    )
    deepStrictEqual([story.prices?.input, story.prices?.output], [2, 8])
    strictEqual("channel_id" in answered, false, "the user's view has no channel id")
    strictEqual(answered.first_token_ms, null, "an answer not streamed has no time to first token")

    // A streamed answer's story has its time to first token, within its latency.
    gateway.emulator.setFaults([])
    const streamed = await client.chat.completions.create({
      model: "gpt-test",
      stream: true,
      messages: [{ role: "user", content: "stream the story" }]
    }).withResponse()
    for await (const _chunk of streamed.data) {
      // Read to the end.
    }
    const streamId = streamed.response.headers.get("x-request-id") ?? ""
    let told = await uma.call<Story>("GET", `/api/log/self/${encodeURIComponent(streamId)}`)
    for (let tries = 0; tries < 50 && !told.success; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      told = await uma.call<Story>("GET", `/api/log/self/${encodeURIComponent(streamId)}`)
    }
    strictEqual(told.success, true, told.message)
    const [first] = told.data.attempts
    ok(first.first_token_ms !== null && first.first_token_ms >= 0, `first token ${first.first_token_ms} ms`)
    ok(first.first_token_ms <= first.latency_ms, "within the attempt's latency")

    const admin = await root.call<Story>("GET", `/api/log/${encodeURIComponent(requestId)}`)
    strictEqual(admin.success, true, admin.message)
    ok(typeof admin.data.attempts[1].channel_id === "number", "the admin view has the channel id")
    ok(!JSON.stringify(admin.data).includes("sk-test-"), "no upstream key in the story")

    const others = await bob.call("GET", `/api/log/self/${encodeURIComponent(requestId)}`)
    strictEqual(others.success, false, "another user's request is not found")
    ok(others.message.includes(requestId) || others.message.includes("request"), others.message)
    const forbidden = await uma.call("GET", `/api/log/${encodeURIComponent(requestId)}`)
    strictEqual(forbidden.status, 403, "the admin variant refuses a user")
    // Bytes that are not UTF-8 fail in the router's path decoding, before any route: a bare 400, nothing read.
    strictEqual((await uma.call("GET", "/api/log/self/%ED%A0%80x")).status, 400)
    // Over the router's 100 characters a path parameter matches no route.
    strictEqual((await uma.call("GET", `/api/log/self/${"a".repeat(200)}`)).status, 404)
    for (const hostile of ["%00", "%0Aid", "a".repeat(100), "nope"]) {
      const refused = await uma.call("GET", `/api/log/self/${hostile}`)
      strictEqual(refused.success, false, hostile.slice(0, 20))
      ok(/request/.test(refused.message), `${hostile.slice(0, 20)}: ${refused.status} ${refused.message}`)
    }

    // In the console: all logs, the row's details.
    const page = await chrome.newPage({ viewport: { width: 1280, height: 800 } })
    const problems: Array<string> = []
    page.on("pageerror", (error) => problems.push(error.message))
    await page.goto(gateway.url)
    await page.getByLabel("Username").fill("root")
    await page.getByLabel("Password").fill(ROOT_PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { name: "Dashboard" }).waitFor()
    await page.getByRole("link", { name: "All logs" }).click()
    await page.getByRole("button", { name: `Details of request ${requestId}` }).first().click()
    const panel = page.getByRole("region", { name: `Request ${requestId}` })
    await panel.getByTestId("story-path").filter({ hasText: "primary → secondary" }).waitFor()
    strictEqual(await panel.getByTestId("story-attempt").count(), 2)
    strictEqual(await panel.getByTestId("story-request-id").textContent(), requestId)
    await assertAxeClean(page, "the request story")
    await panel.scrollIntoViewIfNeeded()
    await page.screenshot({ path: new URL("request-story.png", docsScreenshots()).pathname })
    deepStrictEqual(problems, [])
  } finally {
    await chrome.close()
    await gateway.close()
  }
})
