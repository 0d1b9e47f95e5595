/// <reference lib="dom" />
/**
 * Every page of the console at scale, in Chromium (playwright-core; `deno task test:scale`, outside `deno task test`:
 * the seeding alone takes most of a minute). On PostgreSQL, seeded in SQL: 1,000 channels and 10,000 users
 * (`seedAtScale`), 1,000,000 usage rows over the last week folded into the health rollup (`seedUsage`), and root's own
 * 1,000 keys and 10,000 tasks (`seedOwnAtScale`); through the API, as root: a real key, a few webhook endpoints, a
 * price, a group's ratio and a top-up (audit rows), a file and a batch (the `openai` SDK). Then root opens the
 * sign-in page, every page of the navigation, a usage-log row's story, a channel's form and Health's one-channel
 * detail, at 1280×800 and at 390×844: each is timed from the navigation (or the click) to a sign that its data
 * arrived (a table's first row, a chart's canvas, the page's words once loaded) and the times are printed as a table,
 * never asserted (the machine is shared); each passes the axe-core scan with no serious or critical violation, no
 * page shows a script error, none scrolls sideways at 390 px, and each is screenshotted at the viewport's size to
 * `pages/<name>-wide.png` and `pages/<name>-narrow.png` (`docs/console/` with `SLUICE_SCREENSHOTS=docs`). Then the
 * health API's views on the same rows are timed over HTTP and printed (`test/support/HealthTimings.ts`).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import OpenAI, { toFile } from "openai"
import { type Browser as Chromium, chromium, type Locator, type Page } from "playwright-core"
import { browser as apiClient } from "../support/Browser.ts"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageProblems } from "../support/Chromium.ts"
import { basicConfig, ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"
import { seedUsage } from "../support/HealthSeed.ts"
import { timeHealthViews } from "../support/HealthTimings.ts"
import { seedAtScale, seedOwnAtScale } from "../support/SeedLists.ts"
import { docsScreenshots } from "../support/Screenshots.ts"

const PICTURES = new URL("pages/", docsScreenshots())
Deno.mkdirSync(PICTURES, { recursive: true })
const USAGE_ROWS = 1_000_000

const VIEWPORTS = [
  { label: "1280×800", suffix: "wide", width: 1280, height: 800 },
  { label: "390×844", suffix: "narrow", width: 390, height: 844 }
] as const

const config = (url: string) =>
  basicConfig(url, {
    // No bootstrap user: root is user 1, whom `seedUsage` writes its rows for.
    users: [],
    settings: {
      cooldown_failures: 1,
      cooldown_seconds: 600,
      probe_interval_seconds: 0,
      health_rollup_interval_seconds: 5,
      batch_concurrency: 2,
      batch_poll_ms: 50
    }
  })

/** The first data row of the table whose caption starts with `caption`. */
const firstRow = (page: Page, caption: string | RegExp): Locator =>
  page.locator("main table", { has: page.locator("caption", { hasText: caption }) }).locator("tbody tr").first()

/** One state to open: how to get there (a hash, or a click on the page before), and what proves its data arrived. */
interface State {
  readonly name: string
  /** The page's `<h1>` once it is shown (the previous page is gone). */
  readonly heading?: string
  /** The hash to navigate to; without one, `open` is the action timed. */
  readonly hash?: string
  readonly open?: (page: Page) => Promise<unknown>
  readonly ready: (page: Page) => Locator
  /** What to scroll to the top before the screenshot (default: the page's top). */
  readonly top?: (page: Page) => Locator
}

const states = (channelId: string): ReadonlyArray<State> => [
  {
    name: "dashboard",
    heading: "Dashboard",
    hash: "#/dashboard",
    ready: (page) => page.getByRole("group", { name: /Spend per day by model/ }).locator("canvas").first()
  },
  { name: "keys", heading: "API keys", hash: "#/keys", ready: (page) => firstRow(page, "Your keys (") },
  { name: "logs", heading: "Usage logs", hash: "#/logs", ready: (page) => firstRow(page, "Requests (") },
  {
    name: "request-story",
    open: (page) => firstRow(page, "Requests (").getByRole("button", { name: /^Details of request / }).click(),
    ready: (page) => page.getByRole("table", { name: "Attempts" }).locator("tbody tr").first(),
    top: (page) => page.getByRole("heading", { name: /^Request / })
  },
  { name: "tasks", heading: "Tasks", hash: "#/tasks", ready: (page) => firstRow(page, "Tasks (") },
  {
    name: "playground",
    heading: "Playground",
    hash: "#/playground",
    ready: (page) => page.locator("main select[name=model]:enabled")
  },
  { name: "batches", heading: "Batches", hash: "#/batches", ready: (page) => page.locator("main tbody tr").first() },
  { name: "files", heading: "Files", hash: "#/files", ready: (page) => firstRow(page, "Files (") },
  { name: "webhooks", heading: "Webhooks", hash: "#/webhooks", ready: (page) => firstRow(page, "Your endpoints (") },
  { name: "account", heading: "Account", hash: "#/account", ready: (page) => page.getByText("No linked identity.") },
  { name: "channels", heading: "Channels", hash: "#/channels", ready: (page) => firstRow(page, "Channels (") },
  {
    name: "channel-form",
    open: (page) => firstRow(page, "Channels (").getByRole("button", { name: /^Edit / }).click(),
    ready: (page) => page.getByRole("heading", { name: /^Change channel / }),
    top: (page) => page.locator("form.panel h2")
  },
  { name: "health", heading: "Health", hash: "#/health", ready: (page) => firstRow(page, /busiest first/) },
  {
    name: "health-channel",
    heading: "Health",
    hash: `#/health?by=channel&window=week&channel=${channelId}`,
    ready: (page) => page.getByRole("group", { name: "Attempts and failures by kind" }).locator("canvas").first()
  },
  { name: "users", heading: "Users", hash: "#/users", ready: (page) => firstRow(page, "Users (") },
  {
    name: "pricing",
    heading: "Groups and pricing",
    hash: "#/pricing",
    ready: (page) => firstRow(page, "Model prices (")
  },
  { name: "all-logs", heading: "All logs", hash: "#/all-logs", ready: (page) => firstRow(page, "Requests (") },
  { name: "audit", heading: "Audit log", hash: "#/audit", ready: (page) => firstRow(page, "Changes (") }
]

/** The checks every state gets once shown: axe, no sideways scroll when narrow, the screenshot. */
const check = async (page: Page, name: string, viewport: (typeof VIEWPORTS)[number], top?: Locator) => {
  await assertAxeClean(page, `${name} at ${viewport.label}`)
  const sideways = await page.evaluate(() => {
    const width = globalThis.innerWidth
    if (document.documentElement.scrollWidth <= width) return null
    // The outermost elements past the right edge, to say what pushes the page wider.
    const past = [...document.querySelectorAll("body *")].filter((element) =>
      element.getBoundingClientRect().right > width + 1 && !element.parentElement?.closest(".scroll")
    )
    const outermost = past.filter((element) => !past.includes(element.parentElement!)).slice(0, 3)
    return `${document.documentElement.scrollWidth} px in ${width}, past the edge: ${
      outermost.map((element) =>
        `${element.tagName.toLowerCase()}.${element.className} "${(element.textContent ?? "").slice(0, 40)}"`
      ).join(", ")
    }`
  })
  strictEqual(sideways, null, `${name} at ${viewport.label} scrolls sideways`)
  if (top === undefined) await page.evaluate(() => globalThis.scrollTo(0, 0))
  else await top.evaluate((element) => element.scrollIntoView({ block: "start" }))
  await page.screenshot({ path: new URL(`${name}-${viewport.suffix}.png`, PICTURES).pathname })
}

/** Real content for the pages the seeding leaves empty, made through the API as root. */
const giveContent = async (gateway: TestGateway) => {
  const [{ id: memberId }] = await gateway.query<{ id: number }>(
    "SELECT id::int AS id FROM users WHERE username = 'member00001'",
    false
  )
  const root = apiClient(gateway.url)
  await root.login("root", ROOT_PASSWORD)
  const made = await root.call<{ key: string }>("POST", "/api/token/", { name: "batch-key" })
  strictEqual(made.success, true, made.message)
  for (let index = 0; index < 5; index++) {
    const hook = await root.call("POST", "/api/webhook/", {
      url: `https://hooks.example.test/root/${index}`,
      events: index % 2 === 0 ? ["budget.threshold"] : ["key.expiring"]
    })
    strictEqual(hook.success, true, hook.message)
  }
  for (
    const [method, path, body] of [
      ["PUT", "/api/pricing", { model: "gpt-scale", input: 1.5, output: 6, cached_input: 0.15 }],
      ["PUT", "/api/group", { name: "vip", ratio: 0.8 }],
      ["POST", "/api/user/topup", { id: memberId, amount: 5_000_000, note: "scale test" }],
      // Root's own balance, so its batch's lines are answered rather than refused for quota.
      ["POST", "/api/user/topup", { id: 1, amount: 100_000_000, note: "scale test" }]
    ] as const
  ) {
    const answer = await root.call(method, path, body)
    strictEqual(answer.success, true, `${path}: ${answer.message}`)
  }
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: made.data.key, maxRetries: 0 })
  const lines = [0, 1, 2].map((index) => ({
    custom_id: `line-${index}`,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "gpt-test", messages: [{ role: "user", content: `scale batch ${index}` }] }
  }))
  const input = await openai.files.create({
    file: await toFile(new TextEncoder().encode(lines.map((line) => JSON.stringify(line)).join("\n")), "in.jsonl"),
    purpose: "batch"
  })
  await openai.files.create({
    file: await toFile(new TextEncoder().encode("notes"), "notes.txt"),
    purpose: "user_data"
  })
  await openai.batches.create({ input_file_id: input.id, endpoint: "/v1/chat/completions", completion_window: "24h" })
}

/** Opens every state at `viewport` in a new context: timed, scanned, screenshotted; the times go to `times`. */
const visit = async (
  chrome: Chromium,
  gateway: TestGateway,
  channelId: string,
  viewport: (typeof VIEWPORTS)[number],
  times: Array<{ name: string; viewport: string; ms: number }>
) => {
  const context = await chrome.newContext({ viewport: { width: viewport.width, height: viewport.height } })
  try {
    const page = await context.newPage()
    const problems = pageProblems(page)
    const timed = async (name: string, act: () => Promise<unknown>, ready: Locator) => {
      const started = performance.now()
      await act()
      await ready.waitFor()
      times.push({ name, viewport: viewport.label, ms: Math.round(performance.now() - started) })
    }

    await timed(
      "sign-in",
      () => page.goto(gateway.url),
      page.getByRole("button", { name: "Sign in", exact: true })
    )
    await check(page, "sign-in", viewport)
    await page.getByLabel("Username").fill("root")
    await page.getByLabel("Password").fill(ROOT_PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()
    strictEqual(
      await page.getByRole("button", { name: "Menu" }).isVisible(),
      viewport.width < 1100,
      "the navigation is a menu button only when narrow"
    )

    for (const state of states(channelId)) {
      const ready = state.ready(page)
      await timed(
        state.name,
        async () => {
          if (state.hash !== undefined) await page.goto(`${gateway.url}/${state.hash}`)
          else await state.open!(page)
          if (state.heading !== undefined) {
            await page.getByRole("heading", { level: 1, name: state.heading, exact: true }).waitFor()
          }
        },
        ready
      )
      await check(page, state.name, viewport, state.top?.(page))
    }
    deepStrictEqual(problems, [], `no script error at ${viewport.label}`)
  } finally {
    await context.close()
  }
}

Deno.test({
  name: "console pages at scale: every page at 1280×800 and 390×844 on a million usage rows, timed, axe clean",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const started = performance.now()
    const gateway = await startGateway({ config, store: "postgres" })
    const chrome = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
    try {
      // The usage rows are written as user 1 with key 1: root and its first seeded key, so its own Dashboard and
      // Usage logs show them.
      const [first] = await gateway.query<{ username: string }>("SELECT username FROM users WHERE id = 1", false)
      strictEqual(first?.username, "root", "seedUsage's user 1 is root")
      const [{ id: channelId }] = await gateway.query<{ id: string }>(`SELECT min(id)::text AS id FROM channels`, false)
      const seedStarted = performance.now()
      await seedAtScale((text) => gateway.query(text, false))
      await seedOwnAtScale((text) => gateway.query(text, false), "root")
      const listsMs = Math.round(performance.now() - seedStarted)
      const [key] = await gateway.query<{ name: string; user: string }>(
        "SELECT t.name, u.username AS user FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = 1",
        false
      )
      deepStrictEqual({ ...key }, { name: "seed-key-0000", user: "root" }, "seedUsage's key 1 is root's")
      await giveContent(gateway)
      const usage = await seedUsage(gateway, USAGE_ROWS, channelId)
      const seededMs = Math.round(performance.now() - seedStarted)

      const times: Array<{ name: string; viewport: string; ms: number }> = []
      for (const viewport of VIEWPORTS) await visit(chrome, gateway, channelId, viewport, times)

      // The health API's views on the same rows, timed over HTTP (the figures in docs/CONSOLE.md's Health section).
      const root = apiClient(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const healthLines = await timeHealthViews(gateway, root, channelId)

      const names = [...new Set(times.map((time) => time.name))]
      const msOf = (name: string, viewport: string) => times.find((t) => t.name === name && t.viewport === viewport)?.ms
      // deno-lint-ignore no-console
      console.log(
        [
          `console pages at scale: seeded in ${seededMs} ms (channels, users, keys and tasks ${listsMs} ms; ` +
          `${USAGE_ROWS.toLocaleString("en")} usage rows ${usage.writeMs} ms, the rollup's fold ${usage.foldMs} ms)`,
          `  ${"page".padEnd(16)} ${"1280×800".padStart(9)} ${"390×844".padStart(9)}`,
          ...names.map((name) =>
            `  ${name.padEnd(16)} ${`${msOf(name, "1280×800")} ms`.padStart(9)} ${
              `${msOf(name, "390×844")} ms`.padStart(9)
            }`
          ),
          `health views at ${USAGE_ROWS.toLocaleString("en")} usage rows (three asks each, after a warming one):`,
          ...healthLines,
          `  whole test ${Math.round(performance.now() - started)} ms`
        ].join("\n")
      )
    } finally {
      await chrome.close()
      await gateway.close()
    }
  }
})
