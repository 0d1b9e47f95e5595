/**
 * The health API's views timed over HTTP at scale (`test/scale/ConsolePagesAtScale.test.ts`, after `seedUsage`):
 * every channel and every model, one channel and one model, over the hour, the day and the week, each asked three
 * times after a warming call (another `limit`, so the report cache answers none), printed with the database's share
 * (`query_ms`), never asserted (the machine is shared). Checked: each answer is bounded to its limit, and the week by
 * channel holds every usage row of the week once.
 */
import { ok, strictEqual } from "node:assert/strict"
import type { HealthReport } from "../../src/accounts/HealthQueries.ts"
import type { Browser } from "./Browser.ts"
import type { TestGateway } from "./Gateway.ts"

/** Times the views as `root` (signed in, an admin) and answers the printed lines. */
export const timeHealthViews = async (
  gateway: TestGateway,
  root: Browser,
  channelId: string
): Promise<ReadonlyArray<string>> => {
  const lines: Array<string> = []
  const timed = async (label: string, path: string) => {
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
    lines.push(`  ${label.padEnd(28)} ${elapsed.map((ms) => `${ms} ms`).join(", ")} (query ${answer!.query_ms} ms)`)
  }
  for (const window of ["hour", "day", "week"]) {
    await timed(`every channel, ${window}`, `/api/health/channels?window=${window}`)
    await timed(`one channel, ${window}`, `/api/health/channels?window=${window}&channel=${channelId}`)
    await timed(`every model, ${window}`, `/api/health/models?window=${window}`)
    await timed(`one model, ${window}`, `/api/health/models?window=${window}&model=model-3`)
  }
  const week = await root.call<HealthReport>("GET", "/api/health/channels?window=week&limit=100")
  const [{ count }] = await gateway.query<{ count: string }>(
    `SELECT count(*)::text AS count FROM usage_logs
     WHERE attempt >= 1 AND channel_id IS NOT NULL AND created_at >= to_timestamp(${week.data.start})`,
    false
  )
  strictEqual(week.data.series.reduce((sum, entry) => sum + entry.totals.requests, 0), Number(count))
  ok(week.data.series.length >= 50, `${week.data.series.length} channels over the week`)
  ok(week.data.rollup_until !== null, "the week read the rollup")
  return lines
}
