/**
 * The web console in a real headless Chromium (Debian's `chromium`, driven by
 * `playwright-core`), against the gateway and the emulator: root signs in
 * with the first-start password and, with its browser session, prices a
 * model, adds a channel on the emulator and opens a user; the user signs in,
 * creates a key in the page, the key works with the `openai` SDK at once, and
 * the dashboard and the usage logs show the exact cost the ledger holds. The
 * user reaches no admin page or route. Every page passes an `axe-core` scan
 * with no serious or critical violation, loads with no CSP violation or
 * script error, and is screenshotted under `test/screenshots/` (git-ignored).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { type Browser, chromium, type Page } from "playwright-core"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"

/** Debian's chromium, or the one named by `SLUICE_CHROMIUM`. */
const CHROMIUM = Deno.env.get("SLUICE_CHROMIUM") ?? "/usr/bin/chromium"
const SCREENSHOTS = new URL("../screenshots/", import.meta.url)
const AXE = await Deno.readTextFile(new URL("../../node_modules/axe-core/axe.min.js", import.meta.url))

/** Quota units as the console writes them. */
const usd = (units: number) => `${Math.trunc(units / 1e6)}.${String(units % 1e6).padStart(6, "0")} USD`

/** A page that records script errors and CSP reports. */
const watched = async (browser: Browser) => {
  const page = await browser.newPage()
  const problems: Array<string> = []
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
  page.on("console", (message) => {
    // A refused API call (401 while signed out, a wrong password) is logged by the browser as a failed load: expected.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console error: ${message.text()}`)
    }
  })
  return { page, problems }
}

/** Runs axe-core on the page and fails on a serious or critical violation. */
const scan = async (page: Page, name: string) => {
  // Evaluated over the DevTools protocol, which the page's CSP does not govern; the page itself runs no inline code.
  await page.evaluate(AXE)
  const violations = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const result = await (globalThis as any).axe.run()
    return (result.violations as Array<{ id: string; impact: string; nodes: Array<{ target: Array<string> }> }>)
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map((violation) => `${violation.id} (${violation.impact}) at ${violation.nodes.map((n) => n.target).join(" ")}`)
  })
  deepStrictEqual(violations, [], `axe on ${name}`)
  await Deno.mkdir(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: new URL(`console-${name}.png`, SCREENSHOTS).pathname, fullPage: true })
}

/** Signs in through the form. */
const signIn = async (page: Page, url: string, username: string, password: string) => {
  await page.goto(url)
  await page.getByLabel("Username").fill(username)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { name: "Dashboard" }).waitFor()
}

/** An `/api/*` call made by the page itself, with its session cookie. */
const pageCall = (page: Page, method: string, path: string, body?: unknown) =>
  page.evaluate(async ([method, path, body]) => {
    const response = await fetch(path as string, {
      method: method as string,
      headers: { "content-type": "application/json", "x-sluice-csrf": "1" },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    return { status: response.status, json: await response.json() }
  }, [method, path, body] as const)

Deno.test("console: root opens a user; the user signs in, makes a key that works at once and sees the exact cost", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
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
    await root.page.getByRole("button", { name: "Sign in" }).waitFor()
    const firstLoad = Date.now() - started
    await scan(root.page, "sign-in")
    await root.page.getByLabel("Username").fill("root")
    await root.page.getByLabel("Password").fill("not-the-password")
    await root.page.getByRole("button", { name: "Sign in" }).click()
    await root.page.getByRole("alert").waitFor()
    ok((await root.page.getByRole("alert").textContent())?.length, "a wrong password is said in words")
    await signIn(root.page, gateway.url, "root", ROOT_PASSWORD)

    const priced = await pageCall(root.page, "PUT", "/api/pricing", { model: "gpt-console", input: 3, output: 12 })
    strictEqual(priced.json.success, true, priced.json.message)
    const channel = await pageCall(root.page, "POST", "/api/channel/", {
      name: "emu-console",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: ["sk-test-upstream-console-0001"],
      models: ["gpt-console"],
      groups: ["default"],
      priority: 10
    })
    strictEqual(channel.json.success, true, channel.json.message)
    const backup = await pageCall(root.page, "POST", "/api/channel/", {
      name: "emu-console-backup",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: ["sk-test-upstream-console-0002"],
      models: ["gpt-console"],
      groups: ["default"],
      priority: 0
    })
    strictEqual(backup.json.success, true, backup.json.message)
    const user = await pageCall(root.page, "POST", "/api/user/", { username: "carol", password: "carol-password-1" })
    strictEqual(user.json.success, true, user.json.message)
    const topup = await pageCall(root.page, "POST", "/api/user/topup", { id: user.json.data.id, amount: 5_000_000 })
    strictEqual(topup.json.success, true, topup.json.message)
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
    await carol.page.getByRole("button", { name: "Create key" }).click()
    const key = await carol.page.getByLabel("New key").inputValue()
    ok(/^sk-[A-Za-z0-9]{48}$/.test(key), `a full key: ${key.slice(0, 5)}…`)
    await carol.page.getByRole("cell", { name: "2.500000 USD" }).waitFor()
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

    // No admin page in the console, and the admin routes refuse the user's session.
    strictEqual(await carol.page.getByRole("link", { name: /channel|users|audit|all logs/i }).count(), 0)
    for (const hash of ["#/channels", "#/users", "#/all-logs", "#/audit"]) {
      await carol.page.goto(`${gateway.url}/${hash}`)
      await carol.page.getByRole("heading", { name: "Not found" }).waitFor()
    }
    for (const path of ["/api/channel/", "/api/user/", "/api/log/", "/api/audit"]) {
      strictEqual((await pageCall(carol.page, "GET", path)).status, 403, path)
    }
    const keys = await pageCall(carol.page, "GET", "/api/token/")
    deepStrictEqual(keys.json.data.items.map((item: { name: string }) => item.name), ["laptop"], "only carol's keys")
    deepStrictEqual(carol.problems, [], "no script error or CSP violation for the user")

    // Root: the channels page tests a channel and disables it; the user's next request fails over at once.
    const channelOf = async () =>
      Number(
        (await gateway.query<{ channel_id: string }>(
          "SELECT l.channel_id::text AS channel_id FROM usage_logs l JOIN users u ON u.id = l.user_id " +
            "WHERE u.username = 'carol' ORDER BY l.id DESC LIMIT 1"
        ))[0].channel_id
      )
    strictEqual(await channelOf(), channel.json.data.id, "the first request went to the higher priority")
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
    await scan(root.page, "audit")
    deepStrictEqual(root.problems, [], "no script error or CSP violation on the admin pages")

    // deno-lint-ignore no-console
    console.log(`console: first page (sign-in form shown) loaded in ${firstLoad} ms on loopback`)
  } finally {
    await browser.close()
    await gateway.close()
  }
})
