/**
 * The console's lists at scale in Chromium, on PostgreSQL with 1,000 channels
 * and 10,000 users seeded: the channels and users pages list a server page
 * each (the test prints how long each took from the action to the rows), search, filter and sort on the server, keep the view
 * in the URL across a reload, and disable selected channels in bulk (routing
 * and the API agree); the navigation fits one line at 1280×800 and is a menu
 * button at 390×844 that opens and closes from the keyboard; every state
 * passes the axe-core scan with no serious or critical violation and no
 * script error, and is screenshotted into `docs/console/`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { chromium, type Page } from "playwright-core"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageCall, pageProblems } from "../support/Chromium.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { seedAtScale } from "../support/SeedLists.ts"
import { docsScreenshots } from "../support/Screenshots.ts"

const DOCS = docsScreenshots()

const scan = async (page: Page, name: string) => {
  await assertAxeClean(page, name)
  await Deno.mkdir(DOCS, { recursive: true })
  await page.screenshot({ path: new URL(`${name}.png`, DOCS).pathname })
}

/** Runs `act`, waits for `done`, prints the time between (not asserted: the test machine is shared). */
const timed = async (label: string, act: () => Promise<unknown>, done: () => Promise<unknown>) => {
  const started = performance.now()
  await act()
  await done()
  const took = performance.now() - started
  // deno-lint-ignore no-console
  console.log(`console lists: ${label} in ${took.toFixed(0)} ms`)
}

Deno.test("console lists: 1,000 channels and 10,000 users paged, filtered, sorted and kept in the URL", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    await seedAtScale((text) => gateway.query(text, false))
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    const problems = pageProblems(page)
    await page.goto(gateway.url)
    await page.getByLabel("Username").fill("root")
    await page.getByLabel("Password").fill(ROOT_PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { name: "Dashboard" }).waitFor()

    // The seeded channels' keys reach the catalog (a reload of every channel) before anything is timed.
    for (let tries = 0; tries < 60; tries++) {
      const seen = (await pageCall(page, "GET", "/api/channel/?keyword=bulk-0995")).json.data as {
        items: Array<{ keys: Array<unknown> }>
      }
      if (seen.items[0]?.keys.length === 1) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    // 1280 px: every link on one line, no menu button.
    const header = await page.locator("header").boundingBox()
    ok(header !== null && header.height < 60, `the header is one line: ${header?.height} px`)
    strictEqual(await page.getByRole("button", { name: "Menu" }).isVisible(), false)
    const fits = await page.locator("header nav").evaluate((nav) => nav.scrollWidth <= nav.clientWidth)
    ok(
      fits,
      `the navigation fits 1280 px: ${await page.locator("header nav").evaluate((nav) =>
        `${nav.scrollWidth} in ${nav.clientWidth}`
      )}`
    )

    const caption = page.getByRole("caption")
    await timed(
      "channels page 1 (1,001 channels)",
      () => page.getByRole("link", { name: "Channels" }).click(),
      () => caption.filter({ hasText: "Channels (1001)" }).waitFor()
    )
    strictEqual(await page.locator("tbody tr").count(), 20)

    const filters = page.getByRole("form", { name: "Filter channels" })
    await filters.getByLabel("Type").selectOption("anthropic")
    await filters.getByLabel("Status").selectOption("disabled")
    await filters.getByLabel("Group").fill("vip")
    await timed(
      "channels filtered",
      () => filters.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Channels (16)" }).waitFor()
    )
    await timed(
      "channels sorted by name, descending",
      async () => {
        await page.getByRole("button", { name: "Sort by Name" }).click()
        await page.getByRole("button", { name: "Sort by Name, now ascending" }).click()
      },
      () => page.locator("tbody tr").first().getByText("bulk-0945").waitFor()
    )
    ok(page.url().includes("type=anthropic") && page.url().includes("order=desc"), page.url())
    await page.reload()
    await caption.filter({ hasText: "Channels (16)" }).waitFor()
    await page.locator("tbody tr").first().getByText("bulk-0945").waitFor()
    strictEqual(await filters.getByLabel("Type").inputValue(), "anthropic", "the reloaded page keeps the filters")
    await scan(page, "channels-filtered")

    // Bulk: enable two disabled channels at once.
    await filters.getByLabel("Type").selectOption("")
    await filters.getByLabel("Status").selectOption("")
    await filters.getByLabel("Group").fill("")
    await filters.getByLabel("Name or base URL contains").fill("bulk-099")
    await timed(
      "channels searched",
      () => filters.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Channels (10)" }).waitFor()
    )
    await page.getByLabel("Select bulk-0995").check()
    await page.getByLabel("Select bulk-0990").check()
    await page.getByRole("button", { name: "Enable selected" }).click()
    await page.getByRole("status").filter({ hasText: "Done for 2 channels." }).waitFor()
    const listed = (await pageCall(page, "GET", "/api/channel/?keyword=bulk-099&status=enabled&page_size=100"))
      .json.data as { items: Array<{ name: string }> }
    ok(listed.items.some((item) => item.name === "bulk-0995"), "bulk-0995 is enabled")
    ok(listed.items.some((item) => item.name === "bulk-0990"), "bulk-0990 is enabled")
    await filters.getByRole("button", { name: "Clear filters" }).click()
    await caption.filter({ hasText: "Channels (1001)" }).waitFor()
    await scan(page, "channels")

    // Users: 10,000 of them, filtered by role and sorted by balance.
    await timed(
      "users page 1 (10,002 users)",
      () => page.getByRole("link", { name: "Users" }).click(),
      () => caption.filter({ hasText: "Users (10002)" }).waitFor()
    )
    const search = page.getByRole("form", { name: "Search users" })
    await search.getByLabel("Role").selectOption("admin")
    await timed(
      "users filtered by role",
      () => search.getByRole("button", { name: "Search" }).click(),
      () => caption.filter({ hasText: "Users (100)" }).waitFor()
    )
    await timed(
      "users sorted by balance",
      () => page.getByRole("button", { name: "Sort by Balance" }).click(),
      () => page.locator("tbody tr").first().getByRole("cell", { name: "member00000", exact: true }).waitFor()
    )
    await page.getByRole("button", { name: "Next" }).click()
    await page.locator("tbody tr").first().getByRole("cell", { name: "member02000", exact: true }).waitFor()
    ok(page.url().includes("page=2") && page.url().includes("role=admin"), page.url())
    await page.reload()
    await page.locator("tbody tr").first().getByRole("cell", { name: "member02000", exact: true }).waitFor()
    await scan(page, "users")

    // 390 px: the pages behind a menu button, reachable by the keyboard.
    await page.setViewportSize({ width: 390, height: 844 })
    const menu = page.getByRole("button", { name: "Menu" })
    await menu.waitFor()
    strictEqual(await page.getByRole("link", { name: "Channels" }).isVisible(), false, "the links are folded away")
    strictEqual(await menu.getAttribute("aria-expanded"), "false")
    await menu.focus()
    await page.keyboard.press("Enter")
    await page.getByRole("link", { name: "Channels" }).waitFor()
    strictEqual(await page.getByRole("button", { name: "Close menu" }).getAttribute("aria-expanded"), "true")
    await scan(page, "narrow-menu")
    await page.getByRole("link", { name: "Channels" }).click()
    await caption.filter({ hasText: "Channels (1001)" }).waitFor()
    strictEqual(await page.getByRole("link", { name: "Users" }).isVisible(), false, "choosing a page closes the menu")
    const width = await page.locator("html").evaluate((html) => html.scrollWidth)
    ok(width <= 390, `the page does not scroll sideways: ${width} px`)
    await scan(page, "narrow-channels")

    deepStrictEqual(problems, [])
  } finally {
    await browser.close()
    await gateway.close()
  }
})
