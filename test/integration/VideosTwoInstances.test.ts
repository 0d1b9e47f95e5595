/**
 * Two gateway instances on one PostgreSQL database polling the same tasks:
 * an upstream task is never polled by both at once (a proxy in front of the
 * emulator slows every poll down and records how many polls of one upstream
 * task are in flight together), every task ends, and each failed task is
 * refunded exactly once (one adjustment row per task, the balances back to
 * the cost of the completed tasks alone).
 */
import { ok, strictEqual } from "node:assert/strict"
import { startEmulator } from "../../emulator/Emulator.ts"
import { ALICE, eventually, startVideoGateway, usageOf, videoCostOf } from "../support/VideoGateway.ts"

/** A proxy that delays task polls by `delayMs` and records the most polls of one upstream id in flight at once. */
const pollWatcher = (target: string, delayMs: number) => {
  const inFlight = new Map<string, number>()
  let worst = 0
  let polls = 0
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const url = new URL(request.url)
    const poll = request.method === "GET" ? /^\/v1\/videos\/([^/]+)$/.exec(url.pathname)?.[1] : undefined
    if (poll !== undefined) {
      polls++
      const now = (inFlight.get(poll) ?? 0) + 1
      inFlight.set(poll, now)
      worst = Math.max(worst, now)
      await new Promise((resolve) => setTimeout(resolve, delayMs))
    }
    try {
      const headers = new Headers(request.headers)
      headers.delete("host")
      const answer = await fetch(target + url.pathname + url.search, {
        method: request.method,
        headers,
        body: request.body === null ? undefined : await request.arrayBuffer()
      })
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answer.headers })
    } finally {
      if (poll !== undefined) inFlight.set(poll, (inFlight.get(poll) ?? 1) - 1)
    }
  })
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    worst: () => worst,
    polls: () => polls,
    close: () => server.shutdown()
  }
}

Deno.test("two instances on PostgreSQL: each upstream task polled by one at a time, each failure refunded once", async () => {
  const emulator = startEmulator({ videoStepMs: 150 })
  const proxy = pollWatcher(emulator.url, 120)
  const upstream = { ...emulator, url: proxy.url, close: () => Promise.resolve() }
  const first = await startVideoGateway({ store: "postgres", emulator: upstream })
  const second = await startVideoGateway({ databaseUrl: first.databaseUrl, emulator: upstream })
  try {
    const submit = (gateway: typeof first, prompt: string) =>
      fetch(`${gateway.url}/v1/videos`, {
        method: "POST",
        headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "sora-2", prompt, seconds: "4" })
      }).then(async (response) => {
        strictEqual(response.status, 200)
        return (await response.json()).id as string
      })
    const ids: Array<string> = []
    for (let index = 0; index < 12; index++) {
      const gateway = index % 2 === 0 ? first : second
      ids.push(await submit(gateway, index % 3 === 0 ? `clip ${index}, unsafe` : `clip ${index}`))
    }
    const failing = ids.filter((_, index) => index % 3 === 0).length
    await eventually(async () => {
      const rows = await first.query<{ open: bigint }>(
        "SELECT count(*) AS open FROM tasks WHERE NOT settled"
      )
      return Number(rows[0].open) === 0
    }, 30_000)
    ok(proxy.polls() >= ids.length, `polls: ${proxy.polls()}`)
    strictEqual(proxy.worst(), 1, "an upstream task was polled by two instances at once")

    const statuses = await first.query<{ status: string; n: bigint }>(
      "SELECT status, count(*) AS n FROM tasks GROUP BY status ORDER BY status"
    )
    const count = (status: string) => Number(statuses.find((row) => row.status === status)?.n ?? 0)
    strictEqual(count("failed"), failing)
    strictEqual(count("completed"), ids.length - failing)
    const doubled = await first.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM (SELECT request_id FROM usage_logs WHERE attempt = 0 GROUP BY request_id HAVING count(*) > 1) d"
    )
    strictEqual(Number(doubled[0].n), 0)
    const refunds = await first.query<{ n: bigint; total: bigint }>(
      "SELECT count(*) AS n, COALESCE(SUM(-cost), 0) AS total FROM usage_logs WHERE attempt = 0"
    )
    strictEqual(Number(refunds[0].n), failing)
    strictEqual(Number(refunds[0].total), failing * videoCostOf(4))
    const instances = await first.query<{ n: bigint }>("SELECT count(DISTINCT claimed_by) AS n FROM tasks")
    strictEqual(Number(instances[0].n), 2, "both instances polled")
    await eventually(async () => (await usageOf(first)).used === (ids.length - failing) * videoCostOf(4))
    strictEqual((await usageOf(second)).used, (ids.length - failing) * videoCostOf(4))
    const sums = await first.query<{ used: bigint; logged: bigint }>(
      `SELECT u.used_quota AS used, (SELECT COALESCE(SUM(cost), 0) FROM usage_logs l WHERE l.user_id = u.id) AS logged
       FROM users u WHERE u.username = 'alice'`
    )
    strictEqual(BigInt(sums[0].used), BigInt(sums[0].logged), "logged costs sum to used_quota")
  } finally {
    await second.stop()
    await first.close()
    await proxy.close()
    await emulator.close()
  }
})
