/**
 * The web console in a real headless Chromium (Debian's `chromium`, driven by
 * `playwright-core`), against the gateway, the emulator and a real OpenID
 * Provider (`oidc-provider`), with one gateway start: root signs in with the
 * first-start password and, in the pages, adds a group, prices a model, adds
 * two channels on the emulator and changes one, and opens a user; the user
 * signs in, creates a key with a rate limit, the key works with the `openai`
 * SDK at once, the dashboard and the usage logs show the exact cost the
 * ledger holds and the channel's name, and the playground streams an answer
 * with the cost the ledger charged. The user reaches no admin page or route
 * and no other user's keys or logs. Another person signs in through the
 * OpenID Provider in the browser. Root disables a channel and the next
 * request fails over at once; changes a user's role and group and tops one
 * up. Root then adds an image model and a video model on the emulator; in
 * the playground's image and video modes the user generates an image (shown,
 * with its cost as charged), submits an image task and a video task, and
 * sees both go to completed in the task list with a preview and the cost
 * the usage log holds. Every page passes an `axe-core` scan with no serious or critical
 * violation, loads with no CSP violation or script error, and is
 * screenshotted under `test/screenshots/` (git-ignored).
 *
 * Budgets and alerts: a user sets a daily budget (with its time zone) on a
 * key in the key's edit form, and root a monthly one on the user; the lists
 * show them and the API holds them. On the Webhooks page the user (offered
 * only the user's events; root also the operator's) adds an endpoint on a
 * local receiver, sees its signing secret once, sends a test event that the
 * receiver verifies with that secret (`standardwebhooks`), reads the
 * delivery in the endpoint's log (delivered, one attempt), and deletes the
 * endpoint after a confirmation.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { type Browser, chromium, type Page } from "playwright-core"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageCall, pageProblems } from "../support/Chromium.ts"
import { Webhook } from "standardwebhooks"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { startOpenIdProvider } from "../support/OpenIdProvider.ts"

/** Debian's chromium, or the one named by `SLUICE_CHROMIUM`. */
const SCREENSHOTS = new URL("../screenshots/", import.meta.url)

/** Quota units as the console writes them. */
const usd = (units: number) => `${Math.trunc(units / 1e6)}.${String(units % 1e6).padStart(6, "0")} USD`

/** A page that records script errors and CSP reports. */
const watched = async (browser: Browser) => {
  const page = await browser.newPage()
  const problems = pageProblems(page)
  return { page, problems }
}

/** Runs axe-core on the page and fails on a serious or critical violation. */
const scan = async (page: Page, name: string) => {
  await assertAxeClean(page, name)
  await Deno.mkdir(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: new URL(`console-${name}.png`, SCREENSHOTS).pathname, fullPage: true })
}

/** Signs in through the form. */
const signIn = async (page: Page, url: string, username: string, password: string) => {
  await page.goto(url)
  await page.getByLabel("Username").fill(username)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in", exact: true }).click()
  await page.getByRole("heading", { name: "Dashboard" }).waitFor()
}

Deno.test("console: root sets up a channel and a user; the user's key, playground and logs; OIDC; failover", async () => {
  const front = await startOpenIdProvider()
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      basicConfig(url, {
        oauth: {
          providers: {
            corp: {
              type: "oidc",
              issuer: front.issuer,
              client_id: front.clientId,
              client_secret: front.clientSecret,
              allow_insecure_http: true
            }
          }
        },
        // The playground's tasks: polled often, so a video is done in seconds.
        settings: { task_poll_interval_ms: 300 }
      })
  })
  const provider = await front.start([`${gateway.url}/api/oauth/corp`])
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    // The page and its headers.
    const first = await fetch(`${gateway.url}/`)
    const csp = first.headers.get("content-security-policy") ?? ""
    await first.body?.cancel()
    ok(csp.includes("script-src 'self'") && csp.includes("default-src 'self'"), csp)
    ok(!csp.includes("unsafe-inline") && !csp.includes("http"), csp)

    // Root: the sign-in page, then the first-start password.
    const root = await watched(browser)
    const started = Date.now()
    await root.page.goto(gateway.url)
    await root.page.getByRole("button", { name: "Sign in", exact: true }).waitFor()
    const firstLoad = Date.now() - started
    await root.page.getByRole("button", { name: "Sign in with corp" }).waitFor()
    await scan(root.page, "sign-in")
    await root.page.getByLabel("Username").fill("root")
    await root.page.getByLabel("Password").fill("not-the-password")
    await root.page.getByRole("button", { name: "Sign in", exact: true }).click()
    await root.page.getByRole("alert").waitFor()
    ok((await root.page.getByRole("alert").textContent())?.length, "a wrong password is said in words")
    await signIn(root.page, gateway.url, "root", ROOT_PASSWORD)

    // Root, in the pages: a group, a model's prices, two channels on the emulator (one changed), a user.
    await root.page.getByRole("link", { name: "Groups and pricing" }).click()
    const groupForm = root.page.getByRole("form", { name: "Group" })
    await groupForm.getByLabel("Group name").fill("vip")
    await groupForm.getByLabel("Price ratio (prices are multiplied by it)").fill("x")
    await groupForm.getByRole("button", { name: "Save group" }).click()
    ok((await groupForm.getByRole("alert").textContent())?.includes("ratio"), "a bad ratio is said next to the form")
    await groupForm.getByLabel("Price ratio (prices are multiplied by it)").fill("0.5")
    await groupForm.getByLabel("Requests per minute per user (empty: no limit)").fill("600")
    await groupForm.getByRole("button", { name: "Save group" }).click()
    await root.page.getByRole("status").filter({ hasText: "Saved group vip." }).waitFor()
    const priceForm = root.page.getByRole("form", { name: "Model prices" })
    await priceForm.getByLabel("Model", { exact: true }).fill("gpt-console")
    await priceForm.getByLabel("Input (USD per 1M tokens)", { exact: true }).fill("3")
    await priceForm.getByLabel("Output (USD per 1M tokens)").fill("12")
    await priceForm.getByLabel("Per 1M characters (USD, speech input)").fill("15")
    await priceForm.getByLabel("Per search unit (USD, rerank)").fill("0.002")
    await priceForm.getByRole("button", { name: "Save prices" }).click()
    await root.page.getByRole("cell", { name: "gpt-console", exact: true }).waitFor()
    deepStrictEqual(
      (await pageCall(root.page, "GET", "/api/group")).json.data.find((group: { name: string }) =>
        group.name === "vip"
      ),
      { name: "vip", ratio: 0.5, limits: { rpm: 600 } }
    )
    deepStrictEqual(
      (await pageCall(root.page, "GET", "/api/pricing")).json.data.find((price: { model: string }) =>
        price.model === "gpt-console"
      ),
      { model: "gpt-console", input: 3, output: 12, per_1m_characters: 15, per_search: 0.002, free: false }
    )
    await scan(root.page, "pricing")

    await root.page.getByRole("link", { name: "Channels" }).click()
    const addChannel = async (name: string, key: string, priority: number) => {
      const form = root.page.getByRole("form", { name: "Add a channel" })
      await form.getByLabel("Channel name").fill(name)
      await form.getByLabel("Type").selectOption("openai")
      await form.getByLabel("Base URL").fill(gateway.emulator.url)
      await form.getByLabel("Models, comma-separated").fill("gpt-console")
      await form.getByLabel("Groups, comma-separated").fill("default, vip")
      await form.getByLabel("Priority (higher is tried first)").fill(String(priority))
      await form.getByLabel("Keys, one a line").fill(key)
      await form.getByRole("button", { name: "Add channel" }).click()
      await root.page.getByRole("status").filter({ hasText: `Saved channel ${name}.` }).waitFor()
    }
    await addChannel("emu-console", "sk-test-upstream-console-0001", 10)
    await addChannel("emu-console-backup", "sk-test-upstream-console-0002", 0)
    // Change the backup: weight, mapping and settings; the keys field left empty keeps its key.
    await root.page.getByRole("button", { name: "Edit emu-console-backup", exact: true }).click()
    const change = root.page.getByRole("form", { name: "Change channel emu-console-backup" })
    strictEqual(await change.getByLabel(/^New keys/).inputValue(), "", "a saved key is never put back in the page")
    await change.getByLabel("Weight (share among channels of one priority)").fill("3")
    // The settings fields write the JSON (the advanced view), and the JSON's edit shows in the fields.
    await change.getByLabel("First byte timeout, ms (first_byte_timeout_ms)").fill("2500")
    await change.getByLabel("Strip params, comma-separated (strip_params)").fill("temperature, top_p")
    await change.locator("summary").click()
    deepStrictEqual(JSON.parse(await change.getByLabel(/^Settings/).inputValue()), {
      first_byte_timeout_ms: 2500,
      strip_params: ["temperature", "top_p"]
    })
    await change.getByLabel(/^Settings/).fill(`{"auto_disable": true, "idle_timeout_ms": 9000}`)
    // The fields follow the JSON once the page has read it (a render later).
    for (let tries = 0; tries < 40; tries++) {
      if (await change.getByLabel("Idle timeout, ms (idle_timeout_ms)").inputValue() === "9000") break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    strictEqual(await change.getByLabel("Idle timeout, ms (idle_timeout_ms)").inputValue(), "9000")
    strictEqual(await change.getByLabel("Auto-disable (auto_disable)").inputValue(), "true")
    strictEqual(await change.getByLabel("First byte timeout, ms (first_byte_timeout_ms)").inputValue(), "")
    await change.getByLabel("Idle timeout, ms (idle_timeout_ms)").fill("soon")
    await change.getByRole("alert").filter({ hasText: "whole number" }).waitFor()
    await change.getByLabel("Idle timeout, ms (idle_timeout_ms)").fill("")
    await change.getByLabel(/^Settings/).fill("{oops")
    await change.getByRole("button", { name: "Save channel" }).click()
    ok((await change.getByRole("alert").textContent())?.includes("JSON"), "bad settings are said next to the form")
    await change.getByLabel(/^Settings/).fill(`{"auto_disable": true}`)
    await change.getByLabel(/^Model mapping/).fill("gpt-console-alias=gpt-console")
    await change.getByRole("button", { name: "Save channel" }).click()
    await root.page.getByRole("status").filter({ hasText: "Saved channel emu-console-backup." }).waitFor()
    const listed = (await pageCall(root.page, "GET", "/api/channel/")).json.data as Array<
      {
        id: number
        name: string
        weight: number
        model_mapping: Record<string, string>
        settings: Record<string, unknown>
        keys: Array<{ key: string }>
        groups: Array<string>
        priority: number
        base_url: string
      }
    >
    const channel = { json: { data: listed.find((item) => item.name === "emu-console")! } }
    const backup = { json: { data: listed.find((item) => item.name === "emu-console-backup")! } }
    deepStrictEqual(
      [
        backup.json.data.weight,
        backup.json.data.model_mapping,
        backup.json.data.settings.auto_disable,
        backup.json.data.keys.length,
        backup.json.data.groups,
        channel.json.data.priority,
        channel.json.data.base_url
      ],
      [3, { "gpt-console-alias": "gpt-console" }, true, 1, ["default", "vip"], 10, gateway.emulator.url]
    )
    ok(!(await root.page.content()).includes("sk-test-upstream-console"), "no saved key in full in the page")
    const stored = await gateway.query<{ keys: string }>(
      "SELECT array_to_string(array_agg(key ORDER BY position), ',') AS keys FROM channel_keys " +
        `WHERE channel_id = ${backup.json.data.id}`
    )
    strictEqual(stored[0].keys, "sk-test-upstream-console-0002", "the key is kept")

    await root.page.getByRole("link", { name: "Users" }).click()
    const addUser = root.page.getByRole("form", { name: "Add a user" })
    await addUser.getByLabel("New user's username").fill("carol")
    await addUser.getByLabel("New user's password (8 characters or more)").fill("carol-password-1")
    await addUser.getByRole("button", { name: "Add user" }).click()
    await root.page.getByRole("status").filter({ hasText: "Added user carol." }).waitFor()
    const users = (await pageCall(root.page, "GET", "/api/user/?keyword=carol")).json.data.items
    const user = { json: { data: users[0] as { id: number; username: string } } }
    strictEqual(user.json.data.username, "carol")
    const topup = await pageCall(root.page, "POST", "/api/user/topup", { id: user.json.data.id, amount: 5_000_000 })
    strictEqual(topup.json.success, true, topup.json.message)
    const rootKey = await pageCall(root.page, "POST", "/api/token/", { name: "root-key" })
    strictEqual(rootKey.json.success, true, rootKey.json.message)
    deepStrictEqual(root.problems, [], "no script error or CSP violation for root")

    // The user: sign in, make a key, see it once.
    const carol = await watched(browser)
    await signIn(carol.page, gateway.url, "carol", "carol-password-1")
    await carol.page.getByRole("link", { name: "API keys" }).click()
    await carol.page.getByLabel("Name", { exact: true }).fill("laptop")
    await carol.page.getByLabel("Quota in USD (empty: no limit)").fill("x")
    await carol.page.getByRole("button", { name: "Create key" }).click()
    ok((await carol.page.getByRole("alert").textContent())?.includes("USD"), "a bad quota is said next to the form")
    await carol.page.getByLabel("Quota in USD (empty: no limit)").fill("2.5")
    await carol.page.getByLabel("Limit: requests per minute (empty: no limit)", { exact: true }).fill("1000")
    await carol.page.getByRole("button", { name: "Create key" }).click()
    const key = await carol.page.getByLabel("New key").inputValue()
    ok(/^sk-[A-Za-z0-9]{48}$/.test(key), `a full key: ${key.slice(0, 5)}…`)
    await carol.page.getByRole("cell", { name: "2.500000 USD" }).waitFor()
    strictEqual(await carol.page.getByTestId("key-limits").first().textContent(), "1000 requests/min")
    strictEqual(await carol.page.getByTestId("key-budgets").first().textContent(), "none")
    await scan(carol.page, "keys-new")
    await carol.page.getByRole("button", { name: "Done" }).click()
    await scan(carol.page, "keys")
    strictEqual(await carol.page.getByLabel("New key").count(), 0, "the key is gone from the page")
    ok(!(await carol.page.content()).includes(key), "nowhere in the page")
    strictEqual(
      await carol.page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie"),
      "{}{}",
      "the page stores nothing; the session cookie is HttpOnly"
    )

    // The key works with the openai SDK at once.
    const answer = await new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions
      .create({ model: "gpt-console", messages: [{ role: "user", content: "hello console" }] })
    ok(answer.choices[0].message.content?.includes("hello console"), answer.choices[0].message.content ?? "")

    // The ledger's cost, then the pages.
    let rows: ReadonlyArray<{ cost: string }> = []
    for (let tries = 0; rows.length === 0 && tries < 100; tries++) {
      rows = await gateway.query<{ cost: string }>(
        "SELECT l.cost::text AS cost FROM usage_logs l JOIN users u ON u.id = l.user_id WHERE u.username = 'carol'"
      )
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    strictEqual(rows.length, 1)
    const cost = Number(rows[0].cost)
    ok(cost > 0, "a priced model costs something")
    await carol.page.getByRole("link", { name: "Dashboard" }).click()
    await carol.page.getByTestId("spend-today").filter({ hasText: usd(cost) }).waitFor()
    strictEqual(await carol.page.getByTestId("spend-30").textContent(), usd(cost))
    strictEqual(await carol.page.getByTestId("balance").textContent(), usd(5_000_000 - cost))
    await scan(carol.page, "dashboard")
    await carol.page.getByRole("link", { name: "Usage logs" }).click()
    await carol.page.getByTestId("log-cost").first().waitFor()
    deepStrictEqual(await carol.page.getByTestId("log-cost").allTextContents(), [usd(cost)])
    deepStrictEqual(await carol.page.getByTestId("log-channel").allTextContents(), ["emu-console"], "by name")
    await carol.page.getByLabel("Model").fill("no-such-model")
    await carol.page.getByRole("button", { name: "Filter" }).click()
    await carol.page.getByRole("caption").filter({ hasText: "Requests (0)" }).waitFor()
    await carol.page.getByLabel("Model").fill("")
    await carol.page.getByRole("button", { name: "Filter" }).click()
    await carol.page.getByTestId("log-cost").first().waitFor()
    const download = carol.page.waitForEvent("download")
    await carol.page.getByRole("button", { name: "Export CSV" }).click()
    const csv = await Deno.readTextFile(await (await download).path())
    strictEqual(csv.split("\r\n").length, 3, csv)
    ok(csv.includes(`"gpt-console"`) && csv.includes(`"${usd(cost).replace(" USD", "")}"`), csv)
    await scan(carol.page, "logs")
    await carol.page.getByRole("link", { name: "Account" }).click()
    await carol.page.getByLabel("Current password").fill("wrong-password-1")
    await carol.page.getByLabel("New password (8 characters or more)").fill("carol-password-2")
    await carol.page.getByRole("button", { name: "Change password" }).click()
    await carol.page.getByRole("alert").waitFor()
    await scan(carol.page, "account")

    // The playground: a model of carol's group, an answer streamed with the session alone, its cost as charged.
    await carol.page.getByRole("link", { name: "Playground" }).click()
    await carol.page.getByLabel("Model").selectOption("gpt-console")
    await carol.page.getByLabel("Message").fill("hello playground")
    await carol.page.getByRole("button", { name: "Send" }).click()
    await carol.page.getByTestId("answer").filter({ hasText: "hello playground" }).waitFor()
    await carol.page.getByTestId("answer-usage").filter({ hasText: "USD" }).waitFor()
    const played = await gateway.query<{ cost: string; stream: boolean; prompt: number; completion: number }>(
      "SELECT l.cost::text AS cost, l.stream, l.prompt_tokens AS prompt, l.completion_tokens AS completion " +
        "FROM usage_logs l JOIN tokens t ON t.id = l.token_id JOIN users u ON u.id = l.user_id " +
        "WHERE u.username = 'carol' AND t.key_hash LIKE 'playground:%'"
    )
    strictEqual(played.length, 1, "one playground request, on carol's playground token")
    strictEqual(played[0].stream, true, "streamed")
    ok(Number(played[0].cost) > 0)
    strictEqual(
      await carol.page.getByTestId("answer-usage").textContent(),
      `${played[0].prompt} prompt + ${played[0].completion} completion tokens · cost ${
        usd(Number(played[0].cost))
      } (as charged) · channel emu-console`
    )
    await scan(carol.page, "playground")
    strictEqual(
      await carol.page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie"),
      "{}{}",
      "the playground stores nothing and holds no key"
    )
    // The session alone, from a page of another origin or with no proof of this one, is refused.
    const session = (await carol.page.context().cookies()).find((cookie) => cookie.name === "sluice_session")!
    const chat = (headers: Record<string, string>) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: `sluice_session=${session.value}`, ...headers },
        body: JSON.stringify({ model: "gpt-console", messages: [{ role: "user", content: "x" }] })
      }).then(async (response) => ({ status: response.status, body: await response.json() }))
    strictEqual((await chat({ origin: "http://evil.example", "x-sluice-csrf": "1" })).status, 403)
    strictEqual((await chat({})).status, 403, "no Origin and no CSRF header")
    strictEqual((await chat({ cookie: "sluice_session=not-a-session", "x-sluice-csrf": "1" })).status, 401)
    await carol.page.getByRole("link", { name: "API keys" }).click()
    await carol.page.getByText("no key: the playground's, used by your browser session").waitFor()
    // Change the key: a second limit, a model allow-list and an expiry.
    await carol.page.getByRole("button", { name: "Edit laptop", exact: true }).click()
    const editKey = carol.page.getByRole("form", { name: "Edit key laptop" })
    await editKey.getByLabel("laptop: Limit: tokens per minute (empty: no limit)").fill("many")
    await editKey.getByRole("button", { name: "Save" }).click()
    ok((await carol.page.getByRole("alert").textContent())?.includes("tokens per minute"), "a bad limit in words")
    await editKey.getByLabel("laptop: Limit: tokens per minute (empty: no limit)").fill("50000")
    await editKey.getByLabel("Models (empty: all)").fill("gpt-console")
    await editKey.getByLabel("Expires (UTC date)").fill("2099-12-31")
    await editKey.getByRole("button", { name: "Save" }).click()
    await carol.page.getByTestId("key-limits").filter({ hasText: "1000 requests/min, 50000 tokens/min" }).waitFor()
    const laptop = (await pageCall(carol.page, "GET", "/api/token/")).json.data.items.find((
      item: { name: string }
    ) => item.name === "laptop")
    deepStrictEqual([laptop.limits, laptop.models, laptop.expires_at], [
      { rpm: 1000, tpm: 50000 },
      ["gpt-console"],
      Date.parse("2099-12-31T23:59:59Z") / 1000
    ])

    // No other user's keys or logs: not listed, not reachable by id.
    const rootKeyId = rootKey.json.data.id
    for (
      const [method, path, body] of [
        ["PUT", "/api/token/", { id: rootKeyId, name: "mine" }],
        ["DELETE", `/api/token/${rootKeyId}`, undefined]
      ] as const
    ) {
      const refused = await pageCall(carol.page, method, path, body)
      strictEqual(refused.json.success, false, `${method} another user's key`)
      strictEqual(refused.json.message, `No token with id "${rootKeyId}".`)
    }
    strictEqual((await gateway.query(`SELECT 1 FROM tokens WHERE id = ${rootKeyId} AND name = 'root-key'`)).length, 1)
    strictEqual(await carol.page.getByText("root-key").count(), 0, "root's key is not in carol's page")
    const ownLogs = (await pageCall(carol.page, "GET", "/api/log/self?page_size=100")).json.data.items
    deepStrictEqual([...new Set(ownLogs.map((row: { user_id: number }) => row.user_id))], [user.json.data.id])

    // No admin page in the console, and the admin routes refuse the user's session.
    strictEqual(await carol.page.getByRole("link", { name: /channel|users|audit|all logs/i }).count(), 0)
    for (const hash of ["#/channels", "#/users", "#/pricing", "#/all-logs", "#/audit"]) {
      await carol.page.goto(`${gateway.url}/${hash}`)
      await carol.page.getByRole("heading", { name: "Not found" }).waitFor()
    }
    for (const path of ["/api/channel/", "/api/user/", "/api/log/", "/api/audit", "/api/group", "/api/pricing"]) {
      strictEqual((await pageCall(carol.page, "GET", path)).status, 403, path)
    }
    const keys = await pageCall(carol.page, "GET", "/api/token/")
    deepStrictEqual(
      keys.json.data.items.map((item: { name: string; kind: string }) => [item.name, item.kind]),
      [["Playground", "playground"], ["laptop", "api"]],
      "only carol's keys"
    )
    deepStrictEqual(carol.problems, [], "no script error or CSP violation for the user")

    // Root: the channels page tests a channel and disables it; the user's next request fails over at once.
    const channelOf = async () =>
      Number(
        (await gateway.query<{ channel_id: string }>(
          "SELECT l.channel_id::text AS channel_id FROM usage_logs l JOIN users u ON u.id = l.user_id " +
            "WHERE u.username = 'carol' ORDER BY l.id DESC LIMIT 1"
        ))[0].channel_id
      )
    // The last request of carol's went through the playground, to the higher priority.
    strictEqual(await channelOf(), channel.json.data.id, "the first requests went to the higher priority")
    await root.page.getByRole("link", { name: "Channels" }).click()
    await root.page.getByRole("button", { name: "Test emu-console", exact: true }).click()
    await root.page.getByRole("status").filter({ hasText: /Answered 200 in \d+ ms/ }).waitFor()
    await scan(root.page, "channels")
    await root.page.getByRole("button", { name: "Disable emu-console", exact: true }).click()
    await root.page.getByRole("button", { name: "Enable emu-console", exact: true }).waitFor()
    const second = await new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions
      .create({ model: "gpt-console", messages: [{ role: "user", content: "after the switch" }] })
    ok(second.choices[0].message.content?.includes("after the switch"))
    for (let tries = 0; tries < 100 && (await channelOf()) !== backup.json.data.id; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    strictEqual(await channelOf(), backup.json.data.id, "the disabled channel is skipped at once")

    // Root: the users page tops carol up by exactly 1 USD.
    const balance = async () => (await pageCall(root.page, "GET", `/api/user/${user.json.data.id}`)).json.data.quota
    const before = await balance()
    await root.page.getByRole("link", { name: "Users" }).click()
    await root.page.getByLabel("Top up carol (USD)").fill("1")
    await root.page.getByRole("form", { name: "Top up carol" }).getByRole("button", { name: "Top up" }).click()
    await root.page.getByTestId("user-balance").filter({ hasText: usd(before + 1_000_000) }).waitFor()
    strictEqual(await balance(), before + 1_000_000)
    const dave = await pageCall(root.page, "POST", "/api/user/", { username: "dave", password: "dave-password-1" })
    strictEqual(dave.json.success, true, dave.json.message)
    await root.page.getByLabel("Name contains").fill("dave")
    await root.page.getByRole("button", { name: "Search" }).click()
    await root.page.getByRole("caption").filter({ hasText: "Users (1)" }).waitFor()
    await root.page.getByRole("button", { name: "Edit dave", exact: true }).click()
    await root.page.getByLabel("Role of dave").selectOption("admin")
    await root.page.getByLabel("Group of dave").fill("vip")
    await root.page.getByRole("form", { name: "Edit dave" }).getByRole("button", { name: "Save" }).click()
    await root.page.getByTestId("user-group").filter({ hasText: "vip" }).waitFor()
    const daveNow = (await pageCall(root.page, "GET", `/api/user/${dave.json.data.id}`)).json.data
    deepStrictEqual([daveNow.role, daveNow.group], ["admin", "vip"])
    await root.page.getByRole("button", { name: "Disable dave", exact: true }).click()
    await root.page.getByRole("button", { name: "Enable dave", exact: true }).waitFor()
    strictEqual((await pageCall(root.page, "GET", `/api/user/${dave.json.data.id}`)).json.data.status, "disabled")
    await root.page.getByLabel("Name contains").fill("")
    await root.page.getByRole("button", { name: "Search" }).click()
    await scan(root.page, "users")

    // Root: all logs filtered by channel show the failed-over request on the backup, by name; the audit log lists the changes.
    await root.page.getByRole("link", { name: "All logs" }).click()
    await root.page.getByTestId("log-channel").first().waitFor()
    await root.page.getByRole("combobox", { name: /^Channel/ }).selectOption({ label: "emu-console-backup" })
    await root.page.getByRole("button", { name: "Filter" }).click()
    await root.page.getByRole("caption").filter({ hasText: "Requests (1)" }).waitFor()
    deepStrictEqual(await root.page.getByTestId("log-channel").allTextContents(), ["emu-console-backup"])
    await scan(root.page, "all-logs")
    await root.page.getByRole("link", { name: "Audit log" }).click()
    await root.page.getByTestId("audit-action").first().waitFor()
    ok((await root.page.getByTestId("audit-action").count()) >= 4, "the channels, the user and the top-ups")
    ok(!(await root.page.content()).includes("sk-test-upstream-console"), "no upstream key in the audit page")
    // A range of UTC dates, filtered on the server and kept in the URL: tomorrow holds nothing, yesterday to today
    // every change (two days, so a run across midnight still holds them).
    const auditFilters = root.page.getByRole("form", { name: "Filter changes" })
    const today = new Date().toISOString().slice(0, 10)
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    const changes = await root.page.getByTestId("audit-action").count()
    await auditFilters.getByLabel("From (UTC date)").fill(tomorrow)
    await auditFilters.getByRole("button", { name: "Search" }).click()
    await root.page.getByRole("caption").filter({ hasText: "Changes (0)" }).waitFor()
    ok(root.page.url().includes(`from=${tomorrow}`), root.page.url())
    await auditFilters.getByLabel("From (UTC date)").fill(yesterday)
    await auditFilters.getByLabel("Until (UTC date, included)").fill(today)
    await auditFilters.getByRole("button", { name: "Search" }).click()
    await root.page.getByTestId("audit-action").first().waitFor()
    strictEqual(await root.page.getByTestId("audit-action").count(), changes, "the two days hold every change")
    await scan(root.page, "audit")
    deepStrictEqual(root.problems, [], "no script error or CSP violation on the admin pages")

    // Sign-in through the OpenID Provider in the browser: the provider's login and consent pages, then the dashboard.
    const olivia = await watched(browser)
    await olivia.page.goto(gateway.url)
    await olivia.page.getByRole("button", { name: "Sign in with corp" }).click()
    await olivia.page.waitForURL((url) => url.href.startsWith(provider.issuer))
    await olivia.page.locator("input[name=login]").fill("olivia-sso")
    await olivia.page.locator("input[name=password]").fill("any")
    await olivia.page.locator("button[type=submit]").click()
    await olivia.page.locator("button[type=submit]", { hasText: "Continue" }).click()
    await olivia.page.getByRole("heading", { name: "Dashboard" }).waitFor()
    strictEqual(new URL(olivia.page.url()).hash, "#/dashboard")
    strictEqual(await olivia.page.locator(".who").textContent(), "User olivia-sso (user)")
    const self = (await pageCall(olivia.page, "GET", "/api/user/self")).json.data
    deepStrictEqual([self.username, self.oauth], ["olivia-sso", ["corp"]])
    // Her only way in cannot be unlinked from the account page; the page says why.
    await olivia.page.getByRole("link", { name: "Account" }).click()
    await olivia.page.getByRole("button", { name: "Unlink corp" }).click()
    await olivia.page.getByRole("alert").filter({ hasText: "set a password before unlinking" }).waitFor()
    deepStrictEqual((await pageCall(olivia.page, "GET", "/api/user/self")).json.data.oauth, ["corp"])
    // A callback the browser reaches with a state that was never issued: back on the sign-in page, in words.
    const stranger = await watched(browser)
    await stranger.page.goto(`${gateway.url}/api/oauth/corp?code=made-up&state=made-up`)
    await stranger.page.getByRole("alert").filter({ hasText: "The sign-in state is unknown, used or expired." })
      .waitFor()
    ok(new URL(stranger.page.url()).hash.startsWith("#/sign-in?error="))
    strictEqual(await stranger.page.getByRole("button", { name: "Sign in", exact: true }).count(), 1)
    deepStrictEqual(olivia.problems, [], "no script error or CSP violation in the OIDC sign-in")

    // Images and video in the playground: root adds the models on the emulator, priced per image and per second.
    const media = await pageCall(root.page, "POST", "/api/channel/", {
      name: "emu-media",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: ["sk-test-upstream-console-media"],
      models: ["gpt-image-1", "sora-2"],
      groups: ["default", "vip"]
    })
    strictEqual(media.json.success, true, media.json.message)
    for (const price of [{ model: "gpt-image-1", per_image: 0.04 }, { model: "sora-2", per_second: 0.1 }]) {
      const priced = await pageCall(root.page, "PUT", "/api/pricing", price)
      strictEqual(priced.json.success, true, priced.json.message)
    }
    await carol.page.getByRole("link", { name: "Playground" }).click()
    await carol.page.getByRole("radio", { name: "Image" }).check()
    const imageForm = carol.page.getByRole("form", { name: "Image" })
    await imageForm.getByLabel("Model").selectOption("gpt-image-1")
    await imageForm.getByLabel("Prompt").fill("a lighthouse at dusk")
    await imageForm.getByRole("button", { name: "Generate image" }).click()
    await carol.page.getByRole("img", { name: "Generated image 1" }).waitFor()
    ok(
      (await carol.page.getByRole("img", { name: "Generated image 1" }).getAttribute("src"))?.startsWith(
        "data:image/png;base64,"
      )
    )
    await carol.page.getByTestId("image-note").filter({ hasText: "(as charged)" }).waitFor()
    const imageCost = await gateway.query<{ cost: string }>(
      "SELECT SUM(l.cost)::text AS cost FROM usage_logs l JOIN users u ON u.id = l.user_id " +
        "WHERE u.username = 'carol' AND l.model = 'gpt-image-1'"
    )
    strictEqual(
      await carol.page.getByTestId("image-note").textContent(),
      `1 image(s) generated · cost ${usd(Number(imageCost[0].cost))} (as charged)`
    )
    await scan(carol.page, "playground-image")
    await imageForm.getByRole("button", { name: "Submit as a task" }).click()
    await carol.page.getByTestId("task-row").first().waitFor()

    await carol.page.getByRole("radio", { name: "Video" }).check()
    const videoForm = carol.page.getByRole("form", { name: "Video" })
    await videoForm.getByLabel("Model").selectOption("sora-2")
    await videoForm.getByLabel("Prompt").fill("waves on a pier")
    await videoForm.getByLabel("Seconds").fill("8")
    await videoForm.getByLabel("Size (optional, e.g. 1280x720)").fill("1280x720")
    await videoForm.getByRole("button", { name: "Submit video" }).click()
    await videoForm.getByRole("status").filter({ hasText: /^Task video_\w+ submitted/ }).waitFor()
    await carol.page.getByTestId("task-row").nth(1).waitFor()
    await scan(carol.page, "playground-tasks-running")
    // The list refreshes itself until both are final: the video's preview plays the content route.
    await carol.page.getByTestId("task-video").waitFor({ timeout: 30_000 })
    await carol.page.getByTestId("task-image").getByRole("img").waitFor({ timeout: 30_000 })
    deepStrictEqual(await carol.page.getByTestId("task-status").allTextContents(), ["completed", "completed"])
    const tasks = await gateway.query<{ id: string; kind: string; cost: string }>(
      "SELECT k.public_id AS id, k.kind, (SELECT SUM(l.cost) FROM usage_logs l WHERE l.request_id = k.request_id)::text " +
        "AS cost FROM tasks k JOIN users u ON u.id = k.user_id JOIN tokens t ON t.id = k.token_id " +
        "WHERE u.username = 'carol' AND t.key_hash LIKE 'playground:%' ORDER BY k.created_at DESC"
    )
    deepStrictEqual(tasks.map((task) => task.kind), ["video", "image"], "both on carol's playground token")
    strictEqual(Number(tasks[0].cost), 800_000, "8 seconds at 0.1 USD")
    deepStrictEqual(
      await carol.page.getByTestId("task-cost").allTextContents(),
      tasks.map((task) => usd(Number(task.cost))),
      "the cost the usage log holds"
    )
    const src = await carol.page.getByTestId("task-video").getAttribute("src")
    strictEqual(src, `/v1/videos/${tasks[0].id}/content`)
    const fetched = await carol.page.evaluate(async (path) => {
      const response = await fetch(path)
      return { status: response.status, type: response.headers.get("content-type"), size: (await response.blob()).size }
    }, src!)
    deepStrictEqual([fetched.status, fetched.type, fetched.size > 16], [200, "video/mp4", true], "the session reads it")
    await carol.page.getByText("Tasks are running").waitFor({ state: "detached" }).catch(() => undefined)
    strictEqual(await carol.page.getByText("Tasks are running").count(), 0, "no more polling once all are final")
    await scan(carol.page, "playground-tasks-done")
    deepStrictEqual(carol.problems, [], "no script error or CSP violation in the playground's modes")

    // deno-lint-ignore no-console
    console.log(`console: first page (sign-in form shown) loaded in ${firstLoad} ms on loopback`)
  } finally {
    await browser.close()
    await gateway.close()
    await provider.close()
  }
})

Deno.test("console: budgets on a key and a user; the Webhooks page adds, tests, logs and deletes an endpoint", async () => {
  let secret = ""
  const received: Array<{ id: string; type: string }> = []
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = await request.text()
    try {
      const event = new Webhook(secret).verify(body, Object.fromEntries(request.headers)) as { type: string }
      received.push({ id: request.headers.get("webhook-id")!, type: event.type })
      return new Response(null, { status: 204 })
    } catch {
      return new Response("bad signature", { status: 400 })
    }
  })
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      basicConfig(url, {
        settings: { webhook_allow_hosts: ["127.0.0.1"] },
        users: [{
          username: "dana",
          password: "dana-password-1",
          group: "default",
          quota: 10_000_000,
          tokens: [{ name: "main", key: "sk-test-console-dana-0001" }]
        }]
      })
  })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    // Root: a monthly budget on the user, from the user's edit form; the list shows it. (A change to a user ends
    // the user's sessions, so root goes first.)
    const root = await watched(browser)
    await signIn(root.page, gateway.url, "root", ROOT_PASSWORD)
    await root.page.getByRole("link", { name: "Users" }).click()
    await root.page.getByRole("button", { name: "Edit dana", exact: true }).click()
    const userForm = root.page.getByRole("form", { name: "Edit dana" })
    await userForm.getByLabel("dana: per month budget (USD)").fill("20")
    await userForm.getByRole("button", { name: "Save" }).click()
    await root.page.getByTestId("user-budgets").filter({ hasText: "$0.00 of $20 per month, resets" }).waitFor()
    const users = (await pageCall(root.page, "GET", "/api/user/?keyword=dana")).json.data.items as Array<
      { budgets: Array<{ amount: number; period: string }> }
    >
    deepStrictEqual(users[0].budgets.map((budget) => [budget.amount, budget.period]), [[20, "month"]])
    await scan(root.page, "users-budgets")
    // Root is offered the operator's events too.
    await root.page.getByRole("link", { name: "Webhooks" }).click()
    await root.page.getByRole("checkbox", { name: "channel.unhealthy" }).waitFor()
    deepStrictEqual(root.problems, [], "no script error or CSP violation for root")

    // The user: a daily budget in Paris time on her key, from the key's edit form.
    const dana = await watched(browser)
    await signIn(dana.page, gateway.url, "dana", "dana-password-1")
    await dana.page.getByRole("link", { name: "API keys" }).click()
    await dana.page.getByRole("button", { name: "Edit main", exact: true }).click()
    const edit = dana.page.getByRole("form", { name: "Edit key main" })
    await edit.getByLabel("main: per day budget (USD)").fill("five")
    await edit.getByRole("button", { name: "Save" }).click()
    ok(
      (await dana.page.getByRole("alert").textContent())?.includes("day budget"),
      "a bad amount is said next to the form"
    )
    await edit.getByLabel("main: per day budget (USD)").fill("0.5")
    await edit.getByLabel("main: day budget's time zone (empty: UTC)").fill("Europe/Paris")
    await edit.getByRole("button", { name: "Save" }).click()
    await dana.page.getByTestId("key-budgets").filter({ hasText: "$0.00 of $0.5 per day, resets" }).waitFor()
    const keys = (await pageCall(dana.page, "GET", "/api/token/")).json.data.items as Array<
      { name: string; budgets: Array<{ amount: number; period: string; timezone: string }> }
    >
    deepStrictEqual(
      keys.find((item) => item.name === "main")?.budgets.map((
        budget
      ) => [budget.amount, budget.period, budget.timezone]),
      [[0.5, "day", "Europe/Paris"]]
    )
    await scan(dana.page, "keys-budgets")

    // The user's Webhooks page: only the user's events.
    await dana.page.getByRole("link", { name: "Webhooks" }).click()
    await dana.page.getByRole("heading", { name: "Webhooks" }).waitFor()
    strictEqual(
      await dana.page.getByRole("checkbox", { name: "channel.unhealthy" }).count(),
      0,
      "no operator event for a user"
    )
    const add = dana.page.getByRole("form", { name: "Add a webhook endpoint" })
    await add.getByLabel("Endpoint URL (http or https)").fill(`http://127.0.0.1:${receiver.addr.port}/alerts`)
    await add.getByRole("checkbox", { name: "balance.low" }).check()
    await add.getByRole("button", { name: "Add endpoint" }).click()
    const refusal = await add.getByRole("alert").textContent()
    ok(refusal?.includes("balance_below"), `the API's reason, naming the field: ${refusal}`)
    await add.getByLabel("balance.low fires under this balance (USD; required with balance.low)").fill("2")
    await add.getByLabel("Budget thresholds in percent, comma-separated (empty: 50, 80, 100)").fill("50, 90")
    await add.getByRole("button", { name: "Add endpoint" }).click()
    secret = await dana.page.getByLabel("Signing secret").inputValue()
    ok(secret.startsWith("whsec_"), "the secret is shown")
    await scan(dana.page, "webhooks-new")
    await dana.page.getByRole("button", { name: "Done" }).click()
    strictEqual(await dana.page.getByLabel("Signing secret").count(), 0, "the secret is gone from the page")
    ok(!(await dana.page.content()).includes(secret), "nowhere in the page")
    const endpoints = (await pageCall(dana.page, "GET", "/api/webhook/")).json.data as Array<
      { events: Array<string>; thresholds: Array<number>; balance_below: number }
    >
    deepStrictEqual(
      [endpoints.length, [...endpoints[0].events].sort(), endpoints[0].thresholds, endpoints[0].balance_below],
      [1, ["balance.low", "budget.threshold"], [0.5, 0.9], 2]
    )

    // Send a test event: the receiver verifies it; the log shows it delivered.
    await dana.page.getByRole("button", { name: "Send test event" }).click()
    const queued = await dana.page.getByRole("status").filter({ hasText: /^Test event msg_\w+ queued\.$/ })
      .textContent()
    const deadline = Date.now() + 30_000
    while (received.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
    strictEqual(received.length, 1, "the receiver verified one delivery")
    strictEqual(received[0].type, "webhook.test")
    ok(queued?.includes(received[0].id), "the webhook-id the page named")
    const delivered = dana.page.getByTestId("delivery").filter({ hasText: "delivered" })
    for (let tries = 0; tries < 50 && (await delivered.count()) === 0; tries++) {
      await dana.page.getByRole("button", { name: "Refresh deliveries" }).click()
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const cells = await delivered.first().getByRole("cell").allTextContents()
    deepStrictEqual(cells.slice(0, 4), ["webhook.test", "delivered", "1", "200"])
    strictEqual(cells[7], received[0].id)
    await scan(dana.page, "webhooks-log")

    // Delete after a confirmation.
    await dana.page.getByRole("button", { name: "Delete", exact: true }).click()
    await dana.page.getByRole("group", { name: /^Confirm deleting the endpoint/ }).getByRole("button", {
      name: "Delete"
    }).click()
    await dana.page.getByText("Your endpoints (0)").waitFor()
    strictEqual((await pageCall(dana.page, "GET", "/api/webhook/")).json.data.length, 0)
    deepStrictEqual(dana.problems, [], "no script error or CSP violation for the user")
  } finally {
    await browser.close()
    await gateway.close()
    await receiver.shutdown()
  }
})
