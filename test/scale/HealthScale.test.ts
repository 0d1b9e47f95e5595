/**
 * The health view at a million usage rows on PostgreSQL (`deno task test:scale`; not part of `deno task test`: the
 * seeding alone takes most of a minute). 1,000,000 rows over the last week (`test/support/HealthSeed.ts`: 50
 * channels, 20 models, 5 % failures), folded into the rollup, then every view the console asks for — every channel
 * and every model, one channel and one model, over the hour, the day and the week — timed over HTTP and printed
 * with the database's share (`query_ms`), never asserted: the figures go to docs/CONSOLE.md and bench/RESULTS.md.
 * Checked: each answer is bounded to its limit, the week holds every row exactly once.
 */
import { ok, strictEqual } from "node:assert/strict"
import type { HealthReport } from "../../src/accounts/HealthQueries.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"
import { seedUsage } from "../support/HealthSeed.ts"

const ROWS = 1_000_000

const config = (url: string) =>
  basicConfig(url, {
    settings: {
      cooldown_failures: 1,
      cooldown_seconds: 600,
      probe_interval_seconds: 0,
      health_rollup_interval_seconds: 5
    }
  })

Deno.test({
  name: "health at scale: a million usage rows, every view timed (printed, not bounded)",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateway = await startGateway({ config, store: "postgres" })
    try {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const [{ id: channelId }] = await gateway.query<{ id: string }>(`SELECT min(id)::text AS id FROM channels`)
      const seeded = await seedUsage(gateway, ROWS, channelId)
      const [{ count, rollup }] = await gateway.query<{ count: string; rollup: string }>(
        "SELECT (SELECT count(*) FROM usage_logs)::text AS count, (SELECT count(*) FROM health_rollup)::text AS rollup",
        false
      )
      strictEqual(Number(count), ROWS)
      const lines: Array<string> = [
        `health: ${ROWS.toLocaleString("en")} usage rows written in ${seeded.writeMs} ms; the rollup's first pass ` +
        `over the week (${Number(rollup).toLocaleString("en")} rollup rows) took ${seeded.foldMs} ms`
      ]
      const timed = async (label: string, path: string) => {
        // Warm the database's cache once with another limit (the same query again is the report computed already).
        await root.call("GET", `${path}&limit=19`)
        const elapsed: Array<number> = []
        let answer: HealthReport | undefined
        for (const limit of [20, 18, 17]) {
          const started = performance.now()
          const response = await root.call<HealthReport>("GET", `${path}&limit=${limit}`)
          elapsed.push(Math.round(performance.now() - started))
          strictEqual(response.success, true, response.message)
          answer = response.data
        }
        ok(answer!.series.length > 0 && answer!.series.length <= 20, path)
        lines.push(
          `  ${label.padEnd(28)} ${elapsed.map((ms) => `${ms} ms`).join(", ")} (query ${answer!.query_ms} ms)`
        )
      }
      for (const window of ["hour", "day", "week"]) {
        await timed(`every channel, ${window}`, `/api/health/channels?window=${window}`)
        await timed(`one channel, ${window}`, `/api/health/channels?window=${window}&channel=${channelId}`)
        await timed(`every model, ${window}`, `/api/health/models?window=${window}`)
        await timed(`one model, ${window}`, `/api/health/models?window=${window}&model=model-3`)
      }
      const week = await root.call<HealthReport>("GET", "/api/health/channels?window=week&limit=100")
      strictEqual(week.data.series.length, 50)
      strictEqual(week.data.series.reduce((sum, entry) => sum + entry.totals.requests, 0), ROWS)
      ok(week.data.rollup_until !== null)
      // deno-lint-ignore no-console
      console.log(lines.join("\n"))
    } finally {
      await gateway.close()
    }
  }
})
