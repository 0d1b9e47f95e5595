/**
 * Driving Debian's Chromium from tests (`playwright-core` with an
 * `executablePath`, as Playwright's own browser download is unreachable):
 * where the browser is, and a same-origin JSON call made by a page with its
 * session cookie.
 *
 * @since 0.1.0
 */
import type { Page } from "playwright-core"

/** The Chromium binary: `SLUICE_CHROMIUM`, else Debian's `/usr/bin/chromium`. @category browser */
export const CHROMIUM = Deno.env.get("SLUICE_CHROMIUM") ?? "/usr/bin/chromium"

/**
 * A same-origin JSON call `page` makes itself (`fetch` in the page), so with
 * its session cookie and the CSRF header `/api/*` asks for: the status and the
 * parsed JSON answer (typed as the page's `response.json()` is).
 *
 * @category browser
 */
export const pageCall = (
  page: Page,
  method: string,
  path: string,
  body?: unknown
) =>
  page.evaluate(async ([method, path, body]) => {
    const response = await fetch(path as string, {
      method: method as string,
      headers: { "content-type": "application/json", "x-sluice-csrf": "1" },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    return { status: response.status, json: await response.json() }
  }, [method, path, body] as const)

/**
 * The script errors and console errors (a CSP violation among them) `page` shows from now on, gathered as it runs:
 * `page error: …` and `console error: …` lines. A refused API call (a 401 while signed out, a wrong password) is
 * logged by the browser as a failed load and is expected, so it is left out. Gathered into `into` (several pages may
 * share one list), which is answered.
 *
 * @category browser
 */
export const pageProblems = (page: Page, into: Array<string> = []): Array<string> => {
  const problems = into
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console error: ${message.text()}`)
    }
  })
  return problems
}
