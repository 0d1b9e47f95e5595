/**
 * The console's Health page and charts in Chromium (playwright-core), on PostgreSQL: real traffic through the
 * `openai` SDK (answers, then a failing upstream that cools the channel and raises `channel.unhealthy`) and an hour
 * of seeded usage rows; root opens Health at 1280×800 and 390×844: the channel table with its state and sparklines,
 * the channel's detail with charts that have axes, a unit, a legend whose values follow the cursor, the event
 * marked and listed, the model view, the empty state of a quiet window, the dark scheme, no Health for a user; the
 * dashboard's spend chart has axes and a legend with the model; the chart code is loaded only when a chart is
 * shown. Every view
 * passes axe-core with no serious or critical violation and has no script error or CSP violation; screenshots go to
 * `docs/console/health.png` (the detail), `docs/console-dashboard.png` and `test/screenshots/`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { type Browser as Chromium, chromium, type Page } from "playwright-core"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageProblems } from "../support/Chromium.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"
import { docsScreenshots } from "../support/Screenshots.ts"

const SCREENSHOTS = new URL("../screenshots/", import.meta.url)
const DOCS = docsScreenshots()

const watched = async (chrome: Chromium, size: { width: number; height: number }) => {
  const page = await chrome.newPage({ viewport: size })
  const problems = pageProblems(page)
  const loaded: Array<string> = []
  page.on("request", (request) => loaded.push(new URL(request.url()).pathname))
  return { page, problems, loaded }
}

/** axe-core on the page: no serious or critical violation; then a full-page screenshot. */
const scan = async (page: Page, name: string, into = SCREENSHOTS) => {
  await assertAxeClean(page, name)
  await Deno.mkdir(into, { recursive: true })
  await page.screenshot({ path: new URL(`${name}.png`, into).pathname, fullPage: true })
}

const signIn = async (page: Page, url: string) => {
  await page.goto(url)
  await page.getByLabel("Username").fill("root")
  await page.getByLabel("Password").fill(ROOT_PASSWORD)
  await page.getByRole("button", { name: "Sign in", exact: true }).click()
  await page.getByRole("heading", { name: "Dashboard" }).waitFor()
}

Deno.test({
  name: "console health: the channel table, a channel's charts with axes, legend and events, in light and dark",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({
      store: "postgres",
      config: (url) =>
        basicConfig(url, { settings: { cooldown_failures: 1, cooldown_seconds: 600, probe_interval_seconds: 0 } })
    })
    const chrome = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
    try {
      // Root's own key, so the dashboard has spend to chart.
      const api = browser(gateway.url)
      await api.login("root", ROOT_PASSWORD)
      const self = await api.call<{ id: number }>("GET", "/api/user/self")
      const topped = await api.call("POST", "/api/user/topup", { id: self.data.id, amount: 5_000_000, note: "test" })
      strictEqual(topped.success, true, topped.message)
      const made = await api.call<{ key: string }>("POST", "/api/token/", { name: "ops" })
      strictEqual(made.success, true, made.message)
      const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: made.data.key, maxRetries: 0 })
      for (const text of ["one", "two"]) {
        await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: text }] })
      }
      // One streamed, so the detail has a time to first token.
      const streamed = await openai.chat.completions.create({
        model: "gpt-test",
        stream: true,
        messages: [{ role: "user", content: "three" }]
      })
      for await (const _chunk of streamed) {
        // Read to the end.
      }
      gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-1" }, status: 500, message: "upstream down" }])
      await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] })
        .catch(() => undefined)
      gateway.emulator.clearFaults()
      const [{ id: channelId }] = await gateway.query<{ id: string }>(
        "SELECT id::text AS id FROM channels WHERE name = 'emu-openai'"
      )
      // An hour of traffic on the channel: one row every 10 s, latency with a daily-ish wave, some timeouts.
      await gateway.query(
        `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, channel_id, model, prompt_tokens,
           completion_tokens, cost, latency_ms, first_token_ms, status, error, created_at)
         SELECT 'seed-' || n, 1, 1, 1, ${channelId}, CASE WHEN n % 3 = 0 THEN 'gpt-free' ELSE 'gpt-test' END,
                40 + n % 60, 10 + n % 30, 300 + n % 200, 200 + round(150 * sin(n / 40.0))::int + (n * 37) % 120,
                CASE WHEN n % 2 = 0 THEN 60 + (n * 13) % 90 END,
                CASE WHEN n % 29 = 0 THEN 504 ELSE 200 END,
                CASE WHEN n % 29 = 0 THEN 'timeout: no answer in time' END,
                now() - (n * 10 + 30) * interval '1 second'
         FROM generate_series(1, 350) AS n`,
        false
      )

      // The first page loads no chart code; the dashboard's chart does, with axes and a legend.
      const root = await watched(chrome, { width: 1280, height: 800 })
      await signIn(root.page, gateway.url)
      const figure = root.page.getByRole("group", { name: /Spend per day by model/ })
      await figure.locator(".u-legend").waitFor()
      ok(root.loaded.includes("/console/charts.js"), "the chart code is loaded for the dashboard's chart")
      strictEqual(await figure.locator(".u-axis").count(), 2, "a time axis and a value axis")
      ok((await figure.locator(".u-legend").innerText()).includes("gpt-test"), "the legend names the model")
      ok((await figure.locator(".u-legend").innerText()).includes("Day (UTC)"))
      await scan(root.page, "console-dashboard", new URL("../", docsScreenshots()))

      // Health: the channel table.
      await root.page.getByRole("link", { name: "Health" }).click()
      await root.page.getByRole("heading", { name: "Health" }).waitFor()
      const row = root.page.getByRole("row", { name: /emu-openai/ })
      await row.waitFor()
      ok((await row.innerText()).includes("cooling until"), await row.innerText())
      await row.locator(".spark canvas").waitFor()
      await scan(root.page, "console-health-channels")

      // The channel's detail: charts with axes, units, legends; hover values; the event marked and listed.
      await row.getByRole("link", { name: "emu-openai" }).click()
      await root.page.getByRole("heading", { name: "emu-openai" }).waitFor()
      const firstToken = root.page.getByRole("group", { name: "Time to first token of streamed answers" })
      await firstToken.locator(".u-legend").waitFor()
      strictEqual(await firstToken.locator(".u-axis").count(), 2, "the first-token chart has its axes")
      ok((await firstToken.locator(".u-legend").innerText()).includes("p95"), "and its legend")
      const latency = root.page.getByRole("group", { name: "Latency of successful attempts" })
      await latency.locator(".u-legend").waitFor()
      strictEqual(await latency.locator(".u-axis").count(), 2)
      strictEqual(await latency.locator(".unit").innerText(), "(ms)", "the unit (also the value axis' label)")
      const legend = latency.locator(".u-legend")
      ok((await legend.innerText()).includes("p50") && (await legend.innerText()).includes("p95"))
      const before = await legend.innerText()
      const over = latency.locator(".u-over")
      await over.scrollIntoViewIfNeeded()
      const box = (await over.boundingBox())!
      await root.page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 })
      for (let tries = 0; tries < 50 && (await legend.innerText()) === before; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      ok(/\d+ ms/.test(await legend.innerText()), `hover values: ${await legend.innerText()}`)
      const attempts = root.page.getByRole("group", { name: "Attempts and failures by kind" })
      ok((await attempts.locator(".u-legend").innerText()).includes("Failed: timeout"))
      ok((await attempts.locator(".u-legend").innerText()).includes("Failed: server"))
      const events = root.page.getByRole("table", { name: /Channel events/ })
      ok((await events.innerText()).includes("unhealthy: server"), await events.innerText())
      ok((await root.page.locator(".health-state").innerText()).includes("key 0: enabled"))
      await root.page.mouse.move(0, 0)
      await scan(root.page, "health", DOCS)

      // A quiet window's empty state, and the model view.
      await root.page.goto(`${gateway.url}/#/health?by=channel&window=hour&channel=999999`)
      await root.page.getByText("No requests in the last hour.").first().waitFor()
      await root.page.goto(`${gateway.url}/#/health?by=model&window=day`)
      await root.page.getByRole("row", { name: /gpt-free/ }).waitFor()
      await root.page.getByRole("link", { name: "gpt-test" }).click()
      await root.page.getByRole("heading", { name: "gpt-test" }).waitFor()
      await root.page.getByRole("group", { name: "Tokens" }).locator(".u-legend").waitFor()
      await scan(root.page, "console-health-model")
      deepStrictEqual(root.problems, [], "no script error or CSP violation")

      // Dark scheme: the charts take the dark colours.
      await root.page.emulateMedia({ colorScheme: "dark" })
      await root.page.waitForTimeout(200)
      const background = await root.page.getByRole("group", { name: "Tokens" }).evaluate((element) =>
        (globalThis as unknown as { getComputedStyle: (of: unknown) => { backgroundColor: string } })
          .getComputedStyle(element).backgroundColor
      )
      strictEqual(background, "rgb(13, 17, 23)")
      await scan(root.page, "console-health-dark")

      // A phone: the table and the charts fit and stay usable.
      const phone = await watched(chrome, { width: 390, height: 844 })
      await signIn(phone.page, gateway.url)
      await phone.page.goto(`${gateway.url}/#/health?by=channel&window=hour&channel=${channelId}`)
      const narrow = phone.page.getByRole("group", { name: "Error rate" })
      await narrow.locator(".u-legend").waitFor()
      const width = await narrow.evaluate((element) => element.getBoundingClientRect().width)
      ok(width <= 390, `the chart fits the screen (${width} px)`)
      await scan(phone.page, "console-health-phone")
      await phone.page.goto(`${gateway.url}/#/health`)
      await phone.page.getByRole("row", { name: /emu-openai/ }).waitFor()
      await scan(phone.page, "console-health-channels-phone")
      deepStrictEqual(phone.problems, [], "no script error or CSP violation on the phone")

      // A user has no Health link, and its address is "Not found" (the API refuses the session anyway).
      const user = await api.call("POST", "/api/user/", { username: "uma", password: "uma-password-1" })
      strictEqual(user.success, true, user.message)
      const uma = await watched(chrome, { width: 1280, height: 800 })
      await uma.page.goto(gateway.url)
      await uma.page.getByLabel("Username").fill("uma")
      await uma.page.getByLabel("Password").fill("uma-password-1")
      await uma.page.getByRole("button", { name: "Sign in", exact: true }).click()
      await uma.page.getByRole("heading", { name: "Dashboard" }).waitFor()
      strictEqual(await uma.page.getByRole("link", { name: "Health" }).count(), 0)
      await uma.page.goto(`${gateway.url}/#/health`)
      await uma.page.getByRole("heading", { name: "Not found" }).waitFor()
      deepStrictEqual(uma.problems, [], "no script error or CSP violation for the user")
    } finally {
      await chrome.close()
      await gateway.close()
    }
  }
})
