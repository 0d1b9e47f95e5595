/**
 * The console tests' accessibility check: axe-core (`node_modules/axe-core/axe.min.js`) run in a Chromium page.
 * Evaluated over the DevTools protocol, which the page's Content-Security-Policy does not govern; the page itself runs
 * no inline code.
 */
import { deepStrictEqual } from "node:assert/strict"
import type { Page } from "playwright-core"

const AXE = await Deno.readTextFile(new URL("../../node_modules/axe-core/axe.min.js", import.meta.url))

/**
 * Runs axe-core on `page` as it is now and fails (an `AssertionError` naming `name`) on any serious or critical
 * violation, each listed as its rule, impact and the elements it found.
 */
export const assertAxeClean = async (page: Page, name: string): Promise<void> => {
  await page.evaluate(AXE)
  const violations = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const result = await (globalThis as any).axe.run()
    return (result.violations as Array<{ id: string; impact: string; nodes: Array<{ target: Array<string> }> }>)
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map((violation) => `${violation.id} (${violation.impact}) at ${violation.nodes.map((n) => n.target).join(" ")}`)
  })
  deepStrictEqual(violations, [], `axe on ${name}`)
}
