/// <reference lib="dom" />
/**
 * The console in two languages, in Chromium (playwright-core): a browser whose locale is `zh-CN` gets the console in
 * Simplified Chinese — `<html lang="zh-CN">`, the sign-in form, the navigation and every page's heading in the
 * Chinese catalogue's words, no control, heading, caption or accessible name left in English, the navigation on one
 * line at 1280 px (and a menu button in Chinese at 390 px), and the axe-core scan clean on each page. Switching to English in the header changes the page at
 * once, and the choice outlives a reload and a new tab of a Chinese-locale browser (it is kept in `localStorage`);
 * an English-locale browser gets English. No script error or CSP violation on the way. Screenshots of the Chinese
 * Health detail and channel form go to `docs/console/zh-CN-health.png` and `docs/console/zh-CN-channels.png`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { en } from "../../console/src/i18n/en.ts"
import { zhCN } from "../../console/src/i18n/zhCN.ts"
import { assertAxeClean } from "../support/Axe.ts"
import { CHROMIUM, pageProblems } from "../support/Chromium.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { docsScreenshots } from "../support/Screenshots.ts"

const DOCS = docsScreenshots()

/** axe-core on the page: no serious or critical violation. */
const scan = async (page: Page, name: string) => {
  await assertAxeClean(page, name)
}

/** The English catalogue's fixed words that Chinese says otherwise: none of them may show on a Chinese page. */
const englishOnly = (() => {
  const out = new Set<string>()
  const walk = (english: unknown, chinese: unknown) => {
    if (typeof english === "string") {
      if (english !== chinese && /[A-Za-z]{2}/.test(english)) out.add(english)
    } else if (typeof english === "object" && english !== null) {
      for (const [key, value] of Object.entries(english)) walk(value, (chinese as Record<string, unknown>)[key])
    }
  }
  walk(en, zhCN)
  return out
})()

/** The words of the page's controls, headings, captions, labels and accessible names (not the data in cells). */
const chrome = (page: Page) =>
  page.evaluate(() => {
    const texts = [
      ...document.querySelectorAll(
        "h1, h2, h3, th, caption, legend, label > span, button, summary, dt, option, nav a, figcaption, .hint, .empty"
      )
    ].map((element) => (element as HTMLElement).innerText.trim())
    const names = [...document.querySelectorAll("[aria-label], [title], img[alt]")]
      .flatMap((
        element
      ) => [element.getAttribute("aria-label"), element.getAttribute("title"), element.getAttribute("alt")])
      .filter((text): text is string => text !== null)
    return [...texts, ...names, document.title].filter((text) => text !== "")
  })

/** Watches `page` for script errors and CSP violations. */
const watch = (page: Page, problems: Array<string>) => {
  pageProblems(page, problems)
  return page
}

/** The navigation on one line at 1280 px: the header one line high, every link inside the nav's width. */
const navigationFits = async (page: Page, language: string) => {
  const header = await page.locator("header").boundingBox()
  ok(header !== null && header.height < 60, `${language}: the header is one line: ${header?.height} px`)
  const widths = await page.locator("header nav").evaluate((nav) => [nav.scrollWidth, nav.clientWidth])
  ok(widths[0] <= widths[1], `${language}: the navigation fits 1280 px: ${widths[0]} in ${widths[1]}`)
}

/** The words of `page` that are the English catalogue's and not the Chinese one's (none on a Chinese page). */
const leftInEnglish = async (page: Page) => (await chrome(page)).filter((text) => englishOnly.has(text))

/** What more each page shows once opened further (a row's details, a form, a mode, a chart), checked the same way. */
const further = (requestId: string): Partial<Record<string, (page: Page) => Promise<void>>> => ({
  "all-logs": async (page) => {
    await page.getByRole("button", { name: zhCN.STORY.open(requestId) }).click()
    await page.getByRole("table", { name: zhCN.STORY.attempts }).waitFor()
  },
  playground: async (page) => {
    await page.getByLabel(zhCN.PLAYGROUND.modes.image).check()
    await page.getByRole("heading", { name: zhCN.TASKS.title }).waitFor()
  },
  channels: async (page) => {
    await page.getByRole("button", { name: zhCN.CHANNELS.named(zhCN.CHANNELS.edit, "emu-openai") }).click()
    await page.getByRole("heading", { name: zhCN.CHANNEL_FORM.change("emu-openai") }).waitFor()
    await page.getByText(zhCN.SETTINGS.advanced).click()
  },
  users: async (page) => {
    await page.getByRole("button", { name: zhCN.USERS.named(zhCN.USERS.editShort, "alice") }).click()
    await page.getByRole("form", { name: zhCN.USERS.edit("alice") }).waitFor()
  },
  health: async (page) => {
    await page.getByRole("link", { name: "emu-openai" }).click()
    await page.getByRole("group", { name: zhCN.HEALTH.chartAttempts }).locator("canvas").waitFor()
    await page.locator(".u-legend").first().waitFor()
  }
})

/** The pages root sees, in the navigation's order. */
const PAGES = [
  "dashboard",
  "keys",
  "logs",
  "tasks",
  "playground",
  "batches",
  "files",
  "webhooks",
  "account",
  "channels",
  "health",
  "users",
  "pricing",
  "all-logs",
  "audit"
] as const

Deno.test("console languages: zh-CN from the browser on every page, switched to English and kept", async () => {
  const gateway = await startGateway({ config: basicConfig })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  const problems: Array<string> = []
  let context: BrowserContext | undefined
  try {
    // One answered request of alice's, so the logs, a request's story and Health have a row to show.
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test-alice-0001", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "Hello" }] })
    })
    strictEqual(answer.status, 200, await answer.text())
    const requestId = answer.headers.get("x-request-id") ?? ""
    ok(requestId !== "", "the answer names its request")
    const FURTHER = further(requestId)
    await gateway.settled()

    context = await browser.newContext({ locale: "zh-CN", viewport: { width: 1280, height: 800 } })
    const page = watch(await context.newPage(), problems)
    await page.goto(gateway.url)

    // Signed out: the sign-in page in Chinese, with the language control.
    await page.getByRole("button", { name: zhCN.SIGNIN.signIn, exact: true }).waitFor()
    strictEqual(await page.evaluate(() => document.documentElement.lang), "zh-CN")
    strictEqual(await page.evaluate(() => navigator.language), "zh-CN", "the browser's locale is Chinese")
    strictEqual(await page.getByRole("combobox", { name: zhCN.APP.language }).inputValue(), "zh-CN")
    strictEqual(await page.title(), "登录 · Sluice")
    await scan(page, "sign-in, zh-CN")
    await page.getByLabel(zhCN.SIGNIN.username).fill("root")
    await page.getByLabel(zhCN.SIGNIN.password).fill(ROOT_PASSWORD)
    await page.getByRole("button", { name: zhCN.SIGNIN.signIn, exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "仪表盘" }).waitFor()
    await navigationFits(page, "zh-CN")
    strictEqual(await page.getByRole("button", { name: zhCN.APP.signOut }).isVisible(), true)

    // Every page: its link and heading in Chinese, no English control left, axe clean.
    await page.getByRole("navigation", { name: zhCN.NAV.pages, exact: true }).waitFor()
    const navigation = page.locator("header nav")
    for (const name of PAGES) {
      const title = zhCN.APP.pages[name]
      await navigation.getByRole("link", { name: title, exact: true }).click()
      await page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor()
      await page.waitForFunction((expected) => document.title === expected, `${title} · Sluice`)
      // The page has read its data (no "loading" left), then its words are checked.
      await page.waitForFunction((loading) => !document.body.innerText.includes(loading), zhCN.APP.loading)
      deepStrictEqual(await leftInEnglish(page), [], `no English words on ${name} in zh-CN`)
      await scan(page, `${name}, zh-CN`)
      const open = FURTHER[name]
      if (open !== undefined) {
        await open(page)
        deepStrictEqual(await leftInEnglish(page), [], `no English words on ${name}, opened further, in zh-CN`)
        await scan(page, `${name} opened further, zh-CN`)
        if (name === "health" || name === "channels") {
          if (name === "channels") {
            await page.evaluate(() => document.querySelector("form.panel h2")?.scrollIntoView({ block: "start" }))
          }
          await page.screenshot({ path: new URL(`zh-CN-${name}.png`, DOCS).pathname })
        }
      }
    }
    const links = await navigation.getByRole("link").allInnerTexts()
    deepStrictEqual(links, PAGES.map((name) => zhCN.APP.pages[name]), "the whole navigation is Chinese")

    // Switch to English in the header: the same page, at once, in English.
    await page.getByRole("combobox", { name: zhCN.APP.language }).selectOption("en")
    await page.getByRole("heading", { level: 1, name: en.APP.pages.audit, exact: true }).waitFor()
    strictEqual(await page.evaluate(() => document.documentElement.lang), "en")
    await page.waitForFunction(() => document.title === "Audit log · Sluice")
    await page.getByRole("navigation", { name: en.NAV.pages, exact: true }).waitFor()
    // The check for English words finds them now (so it finds them when they are left on a Chinese page).
    const shown = await leftInEnglish(page)
    ok(shown.includes(en.AUDIT.columns.before) && shown.includes(en.AUDIT.filters), shown.join(" | "))
    deepStrictEqual(await navigation.getByRole("link").allInnerTexts(), PAGES.map((name) => en.APP.pages[name]))
    await navigationFits(page, "en")
    await scan(page, "audit, en")

    // Kept: a reload, and a new tab of the same Chinese-locale browser, stay English.
    await page.reload()
    await page.getByRole("heading", { level: 1, name: en.APP.pages.audit, exact: true }).waitFor()
    strictEqual(await page.evaluate(() => document.documentElement.lang), "en")
    strictEqual(await page.evaluate(() => localStorage.getItem("sluice.language")), "en")
    const tab = watch(await context.newPage(), problems)
    await tab.goto(`${gateway.url}/#/channels`)
    await tab.getByRole("heading", { level: 1, name: en.APP.pages.channels, exact: true }).waitFor()
    strictEqual(await tab.getByRole("combobox", { name: en.APP.language }).inputValue(), "en")
    await scan(tab, "channels, en")

    // And back to Chinese from the header.
    await tab.getByRole("combobox", { name: en.APP.language }).selectOption("zh-CN")
    await tab.getByRole("heading", { level: 1, name: "渠道", exact: true }).waitFor()
    strictEqual(await tab.evaluate(() => document.documentElement.lang), "zh-CN")
    await context.close()
    context = undefined

    // 390 px in Chinese: the menu button and the folded navigation in Chinese, from the keyboard, axe clean.
    context = await browser.newContext({ locale: "zh-CN", viewport: { width: 390, height: 844 } })
    const narrow = watch(await context.newPage(), problems)
    await narrow.goto(gateway.url)
    await narrow.getByLabel(zhCN.SIGNIN.username).fill("root")
    await narrow.getByLabel(zhCN.SIGNIN.password).fill(ROOT_PASSWORD)
    await narrow.getByRole("button", { name: zhCN.SIGNIN.signIn, exact: true }).click()
    await narrow.getByRole("heading", { level: 1, name: zhCN.APP.pages.dashboard }).waitFor()
    const menu = narrow.getByRole("button", { name: zhCN.NAV.menu, exact: true })
    await menu.focus()
    await narrow.keyboard.press("Enter")
    await narrow.getByRole("button", { name: zhCN.NAV.closeMenu, exact: true }).waitFor()
    await narrow.getByRole("link", { name: zhCN.APP.pages.health, exact: true }).click()
    await narrow.getByRole("heading", { level: 1, name: zhCN.APP.pages.health, exact: true }).waitFor()
    strictEqual(await narrow.getByRole("button", { name: zhCN.NAV.menu, exact: true }).isVisible(), true)
    deepStrictEqual(await leftInEnglish(narrow), [], "no English words at 390 px in zh-CN")
    await scan(narrow, "health at 390 px, zh-CN")
    await context.close()
    context = undefined

    // A browser in English gets English.
    context = await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 800 } })
    const english = watch(await context.newPage(), problems)
    await english.goto(gateway.url)
    await english.getByRole("button", { name: "Sign in", exact: true }).waitFor()
    strictEqual(await english.evaluate(() => document.documentElement.lang), "en")
    strictEqual(await english.getByRole("combobox", { name: "Language" }).inputValue(), "en")
    deepStrictEqual(problems, [], "no script error or CSP violation")
  } finally {
    await context?.close()
    await browser.close()
    await gateway.close()
  }
})
