/**
 * The admin lists at scale on PostgreSQL: 1,000 channels and 10,000 users
 * seeded in SQL, then `GET /api/channel/` and `GET /api/user/` paged,
 * searched, filtered and sorted on the server (each answer's time printed,
 * not asserted: the test machine is shared), the sort and filter allow-lists refused in the envelope with
 * the field named, a hostile search string (NUL, a lone surrogate, SQL, `%`, 60 KB)
 * refused or matched as text, the array form of the channel list kept, and
 * the bulk enable / disable / test of channels (audited, routing following),
 * and the audit log filtered by action prefix, actor and target.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"
import { seedAtScale } from "../support/SeedLists.ts"

interface Page<A> {
  items: Array<A>
  total: number
  page: number
  page_size: number
}

interface ChannelItem {
  id: number
  name: string
  type: string
  priority: number
  status: string
  groups: Array<string>
  models: Array<string>
}

const timed = async <A>(label: string, run: () => Promise<A>): Promise<A> => {
  const started = performance.now()
  const result = await run()
  const took = performance.now() - started
  // deno-lint-ignore no-console
  console.log(`lists: ${label} answered in ${took.toFixed(0)} ms`)
  return result
}

Deno.test("lists at scale: channels and users paged, filtered, sorted and searched on PostgreSQL", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    await seedAtScale((text) => gateway.query(text, false))
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)

    const all = await root.call<Array<ChannelItem>>("GET", "/api/channel/")
    strictEqual(all.success, true, all.message)
    ok(Array.isArray(all.data) && all.data.length >= 1000, "without list parameters the answer is the whole array")

    const first = await timed("channels page 1", () => root.call<Page<ChannelItem>>("GET", "/api/channel/?page=1"))
    strictEqual(first.data.page_size, 20)
    strictEqual(first.data.items.length, 20)
    ok(first.data.total >= 1000)
    const third = await root.call<Page<ChannelItem>>("GET", "/api/channel/?page=3&page_size=50")
    strictEqual(third.data.items.length, 50)
    deepStrictEqual(
      third.data.items.map((item) => item.id),
      [...third.data.items.map((item) => item.id)].sort((a, b) => a - b)
    )

    const filtered = await timed("channels filtered", () =>
      root.call<Page<ChannelItem>>(
        "GET",
        "/api/channel/?type=anthropic&group=vip&status=disabled&model=bulk-model-5&page_size=100"
      ))
    strictEqual(filtered.success, true, filtered.message)
    // i % 4 = 1, i % 3 = 0, i % 5 = 0, i % 10 = 5: i ≡ 45 (mod 60): 16 of 0…999.
    strictEqual(filtered.data.total, 16)
    ok(
      filtered.data.items.every((item) =>
        item.type === "anthropic" && item.groups.includes("vip") && item.status === "disabled" &&
        item.models.includes("bulk-model-5")
      )
    )

    const searched = await timed(
      "channels searched",
      () => root.call<Page<ChannelItem>>("GET", "/api/channel/?keyword=BULK-099")
    )
    deepStrictEqual(searched.data.items.map((item) => item.name).sort(), [
      "bulk-0990",
      "bulk-0991",
      "bulk-0992",
      "bulk-0993",
      "bulk-0994",
      "bulk-0995",
      "bulk-0996",
      "bulk-0997",
      "bulk-0998",
      "bulk-0999"
    ])

    const byPriority = await timed(
      "channels sorted by priority",
      () => root.call<Page<ChannelItem>>("GET", "/api/channel/?sort=priority&order=desc&page_size=100")
    )
    ok(byPriority.data.items.every((item) => item.priority === 6), "the highest priority first")
    const byName = await root.call<Page<ChannelItem>>("GET", "/api/channel/?sort=name&order=desc&keyword=bulk")
    strictEqual(byName.data.items[0].name, "bulk-0999")

    for (
      const [query, param] of [
        ["sort=name;DROP TABLE channels", "sort"],
        ["sort=settings", "sort"],
        ["order=sideways", "order"],
        ["status=maybe", "status"],
        ["type=nope", "type"],
        ["page=0", "page"],
        ["page_size=101", "page_size"],
        ["keyword=%00", "keyword"],
        [`keyword=${"x".repeat(300)}`, "keyword"]
      ]
    ) {
      const refused = await root.call<null>("GET", `/api/channel/?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), `${query}: ${refused.message}`)
    }
    const lone = await root.call("GET", "/api/channel/?keyword=%ED%A0%80")
    strictEqual(lone.success, true, "a lone surrogate's bytes decode to U+FFFD: searched as text")
    const huge = await fetch(`${gateway.url}/api/channel/?keyword=${"y".repeat(60_000)}`, {
      headers: { cookie: [...root.cookies].map(([name, value]) => `${name}=${value}`).join("; ") }
    })
    const hugeAnswer = huge.status === 200 ? await huge.json() : (await huge.body?.cancel(), null)
    ok(
      hugeAnswer === null ? huge.status === 414 || huge.status === 431 : hugeAnswer.success === false &&
        String(hugeAnswer.message).includes("keyword"),
      `60 KB of query: ${huge.status}`
    )
    const sqlText = await root.call<Page<ChannelItem>>(
      "GET",
      `/api/channel/?keyword=${encodeURIComponent("' OR 1=1 --")}`
    )
    strictEqual(sqlText.success, true, sqlText.message)
    strictEqual(sqlText.data.total, 0, "SQL in a keyword is text")
    const percent = await root.call<Page<ChannelItem>>("GET", "/api/channel/?keyword=%25")
    strictEqual(percent.data.total, 0, "% is a character, not a pattern")
    strictEqual((await root.call("GET", "/api/channel/?page=1")).data !== null, true, "the table is intact")

    const users = await timed("users page 1", () => root.call<Page<{ username: string }>>("GET", "/api/user/?page=1"))
    strictEqual(users.success, true, users.message)
    ok(users.data.total >= 10_000)
    strictEqual(users.data.items[0].username, "member09999", "newest first by default")
    const admins = await timed(
      "users filtered",
      () =>
        root.call<Page<{ username: string; role: string; group: string }>>(
          "GET",
          "/api/user/?role=admin&group=default&sort=username&order=asc&page_size=100"
        )
    )
    strictEqual(admins.data.total, 100)
    strictEqual(admins.data.items[0].username, "member00000")
    ok(admins.data.items.every((user) => user.role === "admin" && user.group === "default"))
    const byMail = await timed(
      "users searched",
      () => root.call<Page<{ username: string }>>("GET", "/api/user/?keyword=m4242%40example")
    )
    deepStrictEqual(byMail.data.items.map((user) => user.username), ["member04242"])
    const richest = await timed(
      "users sorted by quota",
      () => root.call<Page<{ username: string }>>("GET", "/api/user/?keyword=member&sort=quota&order=desc&page_size=1")
    )
    strictEqual(richest.data.items[0].username, "member09999")
    // Usage logs: 60 rows of alice's, every fifth failed, sorted by cost, latency and tokens, filtered by outcome.
    await gateway.query(
      `INSERT INTO usage_logs (request_id, attempt, user_id, token_id, model, prompt_tokens, completion_tokens, cost,
                               latency_ms, status, error)
       SELECT 'seeded-' || i, 1, u.id, t.id, 'gpt-test', i, 100 - i, CASE WHEN i % 5 = 0 THEN 0 ELSE i * 7 END,
              (i * 37) % 1000, CASE WHEN i % 5 = 0 THEN 502 ELSE 200 END,
              CASE WHEN i % 5 = 0 THEN 'server: seeded' END
       FROM generate_series(1, 60) AS i, users u JOIN tokens t ON t.user_id = u.id WHERE u.username = 'alice'`,
      false
    )
    type Row = { request_id: string; quota: number; latency_ms: number; status: number; prompt_tokens: number }
    const failed = await timed(
      "logs filtered by outcome",
      () => root.call<Page<Row>>("GET", "/api/log/?status=failed&sort=latency&order=desc&page_size=100")
    )
    strictEqual(failed.data.total, 12)
    ok(failed.data.items.every((row) => row.status === 502))
    const latencies = failed.data.items.map((row) => row.latency_ms)
    deepStrictEqual(latencies, [...latencies].sort((a, b) => b - a))
    const dearest = await root.call<Page<Row>>("GET", "/api/log/?status=success&sort=quota&order=desc&page_size=1")
    strictEqual(dearest.data.items[0].request_id, "seeded-59")
    // Every seeded row has 100 tokens in all: the tie is broken by id, the same way.
    const byTokens = await root.call<Page<Row>>("GET", "/api/log/?sort=tokens&order=asc&page_size=2")
    deepStrictEqual(byTokens.data.items.map((row) => row.request_id), ["seeded-1", "seeded-2"])
    for (const [query, param] of [["sort=cost;--", "sort"], ["status=ok", "status"], ["order=x", "order"]]) {
      const refused = await root.call("GET", `/api/log/?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), refused.message)
    }
    for (const [query, param] of [["sort=password_hash", "sort"], ["role=god", "role"], ["status=x", "status"]]) {
      const refused = await root.call("GET", `/api/user/?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), refused.message)
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("lists at scale: channels are enabled, disabled and tested in bulk, audited, with routing following", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const list = await root.call<Page<ChannelItem>>("GET", "/api/channel/?page=1&sort=id")
    const ids = list.data.items.map((item) => item.id)
    ok(ids.length >= 1)
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
    const ask = () => client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })

    const disabled = await root.call<Array<{ id: number; success: boolean; status?: string }>>(
      "POST",
      "/api/channel/bulk",
      { ids, action: "disable" }
    )
    strictEqual(disabled.success, true, disabled.message)
    ok(disabled.data.every((entry) => entry.success && entry.status === "disabled"))
    const refusedStatus = await ask().then(() => 200, (error) => (error as { status: number }).status)
    strictEqual(refusedStatus, 503, "no channel serves once all are disabled")

    const enabled = await root.call<Array<{ success: boolean }>>("POST", "/api/channel/bulk", {
      ids: [...ids, 999_999],
      action: "enable"
    })
    deepStrictEqual(enabled.data.map((entry) => entry.success), [...ids.map(() => true), false])
    strictEqual((await ask()).choices[0].message.content, "Echo: hi")

    const tested = await root.call<Array<{ success: boolean; latency_ms: number }>>("POST", "/api/channel/bulk", {
      ids,
      action: "test"
    })
    ok(tested.data.every((entry) => entry.success && entry.latency_ms >= 0), JSON.stringify(tested.data))
    const audit = await gateway.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM audit_log WHERE action = 'channel.update'"
    )
    strictEqual(Number(audit[0].n), ids.length * 2, "one audit row per channel per change")

    // The audit log, filtered on the server: by an action's prefix, its actor, its target, oldest first.
    const changes = await root.call<Page<{ action: string; actor: string; target: string; id: number }>>(
      "GET",
      "/api/audit?action=channel.&actor=root&order=asc&page_size=100"
    )
    strictEqual(changes.success, true, changes.message)
    strictEqual(changes.data.total, ids.length * 2)
    ok(changes.data.items.every((row) => row.action === "channel.update" && row.actor === "root"))
    deepStrictEqual(
      changes.data.items.map((row) => row.id),
      [...changes.data.items.map((row) => row.id)].sort((a, b) => a - b)
    )
    const one = await root.call<Page<{ target: string }>>("GET", `/api/audit?target=channel:${ids[0]}`)
    ok(one.data.total >= 2 && one.data.items.every((row) => row.target.includes(`channel:${ids[0]}`)))
    strictEqual(
      (await root.call<Page<unknown>>("GET", "/api/audit?action=channel")).data.total,
      0,
      "no prefix without a dot"
    )
    for (
      const [query, param] of [["order=up", "order"], ["action=%00", "action"], [
        "start_timestamp=soon",
        "start_timestamp"
      ]]
    ) {
      const refused = await root.call("GET", `/api/audit?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), refused.message)
    }

    for (
      const body of [{ ids: [], action: "enable" }, { ids: [1], action: "drop" }, {
        ids: Array.from({ length: 101 }, (_, i) => i + 1),
        action: "test"
      }]
    ) {
      const refused = await root.call("POST", "/api/channel/bulk", body)
      strictEqual(refused.success, false, JSON.stringify(body).slice(0, 60))
      ok(/ids|action/.test(refused.message), refused.message)
    }
  } finally {
    await gateway.close()
  }
})
