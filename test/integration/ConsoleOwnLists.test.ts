/**
 * The console's own lists at scale in Chromium, on PostgreSQL with 1,000 keys and 10,000 tasks seeded for one user
 * and 25 webhook endpoints made through the API: the API keys, Tasks and Webhooks pages list a server page each
 * (the test prints how long each took from the action to the rows, without asserting it), search, filter and sort
 * on the server, keep the view in the URL across a reload, and enable keys, revoke a key and disable endpoints in
 * bulk (the API agrees); the Tasks link is in the navigation, which keeps to one line at 1280×800 and is a menu at
 * 390×844, where each page does not scroll sideways; every state passes the axe-core scan with no serious or
 * critical violation and no script error, and is screenshotted (`docs/console/` with `SLUICE_SCREENSHOTS=docs`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { chromium, type Page } from "playwright-core"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageCall, pageProblems } from "../support/Chromium.ts"
import { basicConfig, startGateway } from "../support/Gateway.ts"
import { seedOwnAtScale } from "../support/SeedLists.ts"
import { docsScreenshots } from "../support/Screenshots.ts"

const DOCS = docsScreenshots()
const PASSWORD = "own-lists-password-1"

/** Scans the page with axe-core and screenshots it with `top` (the list's filters) scrolled to the top. */
const scan = async (page: Page, name: string, top: string) => {
  await page.getByRole("form", { name: top }).evaluate((form) => form.scrollIntoView({ block: "start" }))
  await assertAxeClean(page, name)
  await page.screenshot({ path: new URL(`${name}.png`, DOCS).pathname })
}

/** Runs `act`, waits for `done`, prints the time between (not asserted: the test machine is shared). */
const timed = async (label: string, act: () => Promise<unknown>, done: () => Promise<unknown>) => {
  const started = performance.now()
  await act()
  await done()
  // deno-lint-ignore no-console
  console.log(`console own lists: ${label} in ${(performance.now() - started).toFixed(0)} ms`)
}

Deno.test("console own lists: 1,000 keys, 10,000 tasks and 25 endpoints paged, filtered, sorted, kept in the URL and changed in bulk", async () => {
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        users: [{
          username: "alice",
          password: PASSWORD,
          group: "default",
          quota: 10_000_000,
          tokens: [{ name: "main", key: "sk-test-console-own-lists-1" }]
        }]
      }),
    store: "postgres"
  })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    await seedOwnAtScale((text) => gateway.query(text, false), "alice")
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    const problems = pageProblems(page)
    await page.goto(gateway.url)
    await page.getByLabel("Username").fill("alice")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { name: "Dashboard" }).waitFor()
    for (let index = 0; index < 25; index++) {
      const made = await pageCall(page, "POST", "/api/webhook/", {
        url: `https://hooks${index % 3}.example.test/alice/${String(index).padStart(2, "0")}`,
        events: index % 2 === 0 ? ["budget.threshold"] : ["key.expiring"]
      })
      strictEqual(made.json.success, true, made.json.message)
    }
    const fits = await page.locator("header nav").evaluate((nav) => nav.scrollWidth <= nav.clientWidth)
    ok(fits, "the navigation with Tasks fits 1280 px")

    // API keys: 1,001, filtered to the disabled vip keys limited to gpt-test, sorted by name descending.
    const caption = page.getByRole("caption")
    await timed(
      "keys page 1 (1,001 keys)",
      () => page.getByRole("link", { name: "API keys" }).click(),
      () => caption.filter({ hasText: "Your keys (1001)" }).waitFor()
    )
    strictEqual(await page.locator("tbody tr").count(), 20)
    const keyFilters = page.getByRole("form", { name: "Filter keys" })
    await keyFilters.getByLabel("Status").selectOption("disabled")
    await keyFilters.getByLabel("Group").fill("vip")
    await keyFilters.getByLabel("Model on the key's list").fill("gpt-test")
    await timed(
      "keys filtered",
      () => keyFilters.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Your keys (17)" }).waitFor()
    )
    await timed(
      "keys sorted by name, descending",
      async () => {
        await page.getByRole("button", { name: "Sort by Name" }).click()
        await page.getByRole("button", { name: "Sort by Name, now ascending" }).click()
      },
      () => page.locator("tbody tr").first().getByRole("cell", { name: "seed-key-0960", exact: true }).waitFor()
    )
    // Descending is the keys' default order, so the URL holds only what differs from the defaults.
    ok(
      page.url().includes("status=disabled") && page.url().includes("sort=name") && !page.url().includes("order="),
      page.url()
    )
    await page.reload()
    await caption.filter({ hasText: "Your keys (17)" }).waitFor()
    await page.locator("tbody tr").first().getByRole("cell", { name: "seed-key-0960", exact: true }).waitFor()
    strictEqual(await keyFilters.getByLabel("Status").inputValue(), "disabled", "the reloaded page keeps the filters")
    await scan(page, "keys-filtered", "Filter keys")

    // Bulk: enable two, then revoke one after the confirmation.
    await page.getByLabel("Select seed-key-0960").check()
    await page.getByLabel("Select seed-key-0900").check()
    const keyBulk = page.getByRole("group", { name: "Selected keys" })
    await keyBulk.getByRole("button", { name: "Enable selected" }).click()
    await keyBulk.getByRole("status").filter({ hasText: "Done for 2 keys." }).waitFor()
    await caption.filter({ hasText: "Your keys (15)" }).waitFor()
    const enabled = (await pageCall(page, "GET", "/api/token/?keyword=seed-key-09&status=enabled&page_size=100"))
      .json.data as { items: Array<{ name: string }> }
    ok(["seed-key-0960", "seed-key-0900"].every((name) => enabled.items.some((item) => item.name === name)))
    await keyBulk.getByText("0 selected").waitFor()
    await page.getByLabel("Select seed-key-0840").check()
    await keyBulk.getByRole("button", { name: "Delete selected" }).click()
    await keyBulk.getByText(/^Revoke 1 key\?/).waitFor()
    await keyBulk.getByRole("button", { name: "Keep them" }).click()
    strictEqual(await caption.textContent(), "Your keys (15)", "kept: nothing revoked")
    await keyBulk.getByRole("button", { name: "Delete selected" }).click()
    await keyBulk.getByRole("button", { name: "Yes, delete them" }).click()
    await keyBulk.getByRole("status").filter({ hasText: "Done for 1 key." }).waitFor()
    await caption.filter({ hasText: "Your keys (14)" }).waitFor()
    strictEqual(
      ((await pageCall(page, "GET", "/api/token/?keyword=seed-key-0840")).json.data as { total: number }).total,
      0,
      "the revoked key is gone"
    )
    await keyFilters.getByRole("button", { name: "Clear filters" }).click()
    await caption.filter({ hasText: "Your keys (1000)" }).waitFor()
    await scan(page, "keys-list", "Filter keys")

    // Tasks: 10,000; the failed videos of one model, by cost, then one day of them, oldest first.
    await timed(
      "tasks page 1 (10,000 tasks)",
      () => page.getByRole("link", { name: "Tasks", exact: true }).click(),
      () => caption.filter({ hasText: "Tasks (10000)" }).waitFor()
    )
    await page.locator("tbody tr").first().getByText("task_seed09999").waitFor()
    const taskFilters = page.getByRole("form", { name: "Filter tasks" })
    await taskFilters.getByLabel("Status").selectOption("failed")
    await taskFilters.getByLabel("Kind").selectOption("video")
    await taskFilters.getByLabel("Model (its exact name)").fill("seed-model-3")
    await timed(
      "tasks filtered",
      () => taskFilters.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Tasks (120)" }).waitFor()
    )
    await timed(
      "tasks sorted by cost, descending",
      async () => {
        await page.getByRole("button", { name: "Sort by Cost (charged)" }).click()
        await page.getByRole("button", { name: "Sort by Cost (charged), now ascending" }).click()
      },
      () => page.locator("tbody tr").first().getByText("task_seed09999").waitFor()
    )
    await taskFilters.getByLabel("Created from (UTC date)").fill("2026-01-01")
    await taskFilters.getByLabel("Created until (UTC date, included)").fill("2026-01-01")
    await timed(
      "tasks in one day",
      () => taskFilters.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Tasks (18)" }).waitFor()
    )
    await page.getByRole("button", { name: "Sort by Created" }).click()
    await page.locator("tbody tr").first().getByText("task_seed00003").waitFor()
    ok(page.url().includes("kind=video") && page.url().includes("from=2026-01-01"), page.url())
    await page.reload()
    await caption.filter({ hasText: "Tasks (18)" }).waitFor()
    await page.locator("tbody tr").first().getByText("task_seed00003").waitFor()
    strictEqual(await taskFilters.getByLabel("Kind").inputValue(), "video", "the reloaded page keeps the filters")
    await scan(page, "tasks", "Filter tasks")

    // Webhooks: 25 endpoints; two disabled in bulk, then listed by status.
    await timed(
      "webhooks page 1",
      () => page.getByRole("link", { name: "Webhooks" }).click(),
      () => caption.filter({ hasText: "Your endpoints (25)" }).waitFor()
    )
    const hookFilters = page.getByRole("form", { name: "Filter endpoints" })
    await hookFilters.getByLabel("URL contains").fill("hooks1")
    await hookFilters.getByLabel("Event").selectOption("budget.threshold")
    await timed(
      "webhooks filtered",
      () => hookFilters.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Your endpoints (4)" }).waitFor()
    )
    await page.getByRole("button", { name: "Sort by URL" }).click()
    await page.getByRole("button", { name: "Sort by URL, now ascending" }).click()
    await page.locator("tbody tr").first().getByText("https://hooks1.example.test/alice/22").waitFor()
    await page.getByLabel("Select https://hooks1.example.test/alice/22").check()
    await page.getByLabel("Select https://hooks1.example.test/alice/16").check()
    const hookBulk = page.getByRole("group", { name: "Selected endpoints" })
    await hookBulk.getByRole("button", { name: "Disable selected" }).click()
    await hookBulk.getByRole("status").filter({ hasText: "Done for 2 endpoints." }).waitFor()
    await page.getByTestId("endpoint-status").filter({ hasText: "disabled" }).nth(1).waitFor()
    await hookFilters.getByLabel("Status").selectOption("disabled")
    await hookFilters.getByLabel("URL contains").fill("")
    await hookFilters.getByLabel("Event").selectOption("")
    await hookFilters.getByRole("button", { name: "Search" }).click()
    await caption.filter({ hasText: "Your endpoints (2)" }).waitFor()
    await page.reload()
    await caption.filter({ hasText: "Your endpoints (2)" }).waitFor()
    const disabled = (await pageCall(page, "GET", "/api/webhook/?status=disabled")).json.data as {
      items: Array<{ url: string }>
    }
    deepStrictEqual(disabled.items.map((item) => item.url).sort(), [
      "https://hooks1.example.test/alice/16",
      "https://hooks1.example.test/alice/22"
    ])
    await scan(page, "webhooks-list", "Filter endpoints")

    // 390 px: the Tasks link behind the menu; no page scrolls sideways.
    await page.setViewportSize({ width: 390, height: 844 })
    const menu = page.getByRole("button", { name: "Menu" })
    await menu.waitFor()
    strictEqual(await page.getByRole("link", { name: "Tasks", exact: true }).isVisible(), false)
    await menu.click()
    await page.getByRole("link", { name: "Tasks", exact: true }).click()
    for (
      const [link, name, shown] of [
        ["Tasks", "narrow-tasks", "Tasks (10000)"],
        ["API keys", "narrow-keys", "Your keys (1000)"],
        ["Webhooks", "narrow-webhooks", "Your endpoints (25)"]
      ]
    ) {
      if (link !== "Tasks") {
        await menu.click()
        await page.getByRole("link", { name: link, exact: true }).click()
      }
      await caption.filter({ hasText: shown }).waitFor()
      const width = await page.locator("html").evaluate((html) => html.scrollWidth)
      ok(width <= 390, `${link} does not scroll sideways: ${width} px`)
      await scan(
        page,
        name,
        link === "Tasks" ? "Filter tasks" : link === "API keys" ? "Filter keys" : "Filter endpoints"
      )
    }
    deepStrictEqual(problems, [])
  } finally {
    await browser.close()
    await gateway.close()
  }
})
