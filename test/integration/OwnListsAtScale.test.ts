/**
 * A user's own lists at scale on PostgreSQL: 1,000 keys and 10,000 tasks seeded in SQL, then `GET /api/token/`
 * and `GET /api/task/self` paged, searched, filtered and sorted on the server (each answer's time printed, not
 * bounded), and `GET /api/webhook/` paged and filtered with its array form kept for callers without parameters;
 * each sort, filter and page parameter's bad value refused in the api envelope with the field named, hostile
 * search text matched as text; the bulk enable / disable / delete of keys, with the `openai` SDK refused (401) by a
 * key disabled or deleted in bulk and served again once it is enabled, and of webhook endpoints, where a disabled
 * endpoint is written no `budget.threshold` event while an enabled one is; another user's ids are "not found" in
 * every bulk action and change nothing.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"
import { SEEDED_TASKS_FROM, seedOwnAtScale } from "../support/SeedLists.ts"

interface Page<A> {
  items: Array<A>
  total: number
  page: number
  page_size: number
}

interface KeyItem {
  id: number
  name: string
  key: string
  status: string
  remain_quota: number | null
  used_quota: number
  group: string | null
  models: Array<string> | null
  expires_at: number | null
}

interface TaskItem {
  id: string
  kind: string
  model: string
  status: string
  created_at: number
  quota: number
}

interface Outcome {
  id: number
  success: boolean
  status?: string
  message?: string
}

const ALICE_KEY = "sk-test-own-lists-alice-1"
const PASSWORD = "own-lists-password-1"

/** Runs `run`, prints how long it took (not asserted: the machine is shared), answers its result. */
const timed = async <A>(label: string, run: () => Promise<A>): Promise<A> => {
  const started = performance.now()
  const result = await run()
  // deno-lint-ignore no-console
  console.log(`own lists: ${label} answered in ${(performance.now() - started).toFixed(0)} ms`)
  return result
}

const config = (url: string) =>
  basicConfig(url, {
    users: [
      {
        username: "alice",
        password: PASSWORD,
        group: "default",
        quota: 10_000_000,
        tokens: [{ name: "main", key: ALICE_KEY, budgets: [{ amount: 0.002, period: "day" }] }]
      },
      { username: "bob", password: PASSWORD, group: "default", quota: 10_000_000 }
    ]
  })

/** The statuses of `promise` settled: 200 or the SDK error's HTTP status. */
const statusOf = (promise: Promise<unknown>): Promise<number> =>
  promise.then(() => 200, (error) => (error as { status: number }).status)

Deno.test("own lists at scale: 1,000 keys and 10,000 tasks paged, filtered, sorted and searched on PostgreSQL", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    await seedOwnAtScale((text) => gateway.query(text, false), "alice")
    const alice = browser(gateway.url)
    await alice.login("alice", PASSWORD)

    // Keys: 1,001 (the bootstrap file's and the seeded), newest first by default.
    const first = await timed("keys page 1", () => alice.call<Page<KeyItem>>("GET", "/api/token/?page=1"))
    strictEqual(first.success, true, first.message)
    strictEqual(first.data.total, 1001)
    strictEqual(first.data.items.length, 20)
    strictEqual(first.data.items[0].name, "seed-key-0999")
    const filtered = await timed(
      "keys filtered",
      () => alice.call<Page<KeyItem>>("GET", "/api/token/?status=disabled&group=vip&model=gpt-test&page_size=100")
    )
    strictEqual(filtered.success, true, filtered.message)
    // i % 4 = 0, i % 3 = 0, i % 5 = 0: i ≡ 0 (mod 60), 17 of 0…999.
    strictEqual(filtered.data.total, 17)
    ok(
      filtered.data.items.every((key) =>
        key.status === "disabled" && key.group === "vip" && key.models?.includes("gpt-test")
      )
    )
    const byName = await timed(
      "keys searched by name",
      () => alice.call<Page<KeyItem>>("GET", "/api/token/?keyword=SEED-KEY-099&sort=name&order=asc")
    )
    deepStrictEqual(
      byName.data.items.map((key) => key.name),
      Array.from({ length: 10 }, (_, i) => `seed-key-099${i}`)
    )
    const byPrefix = await timed(
      "keys searched by key prefix",
      () => alice.call<Page<KeyItem>>("GET", "/api/token/?keyword=sk-seed0042")
    )
    deepStrictEqual(byPrefix.data.items.map((key) => key.key), ["sk-seed0042"])
    const dearest = await timed(
      "keys sorted by quota",
      () => alice.call<Page<KeyItem>>("GET", "/api/token/?keyword=seed&sort=remain_quota&order=desc&page_size=1")
    )
    strictEqual(dearest.data.items[0].name, "seed-key-0999")
    const soonest = await alice.call<Page<KeyItem>>("GET", "/api/token/?sort=expires_at&order=asc&page_size=2")
    deepStrictEqual(soonest.data.items.map((key) => key.name), ["seed-key-0000", "seed-key-0010"])
    const third = await alice.call<Page<KeyItem>>("GET", "/api/token/?page=3&page_size=50&sort=id&order=asc")
    strictEqual(third.data.items.length, 50)
    strictEqual(third.data.items[0].name, "seed-key-0099", "the bootstrap key is id 1, the seeded follow")
    for (
      const [query, param] of [
        ["sort=key_hash", "sort"],
        ["sort=name;DROP TABLE tokens", "sort"],
        ["order=sideways", "order"],
        ["status=maybe", "status"],
        ["page=0", "page"],
        ["page_size=101", "page_size"],
        ["keyword=%00", "keyword"],
        [`keyword=${"k".repeat(65)}`, "keyword"],
        [`group=${"g".repeat(65)}`, "group"]
      ]
    ) {
      const refused = await alice.call<null>("GET", `/api/token/?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), `${query}: ${refused.message}`)
    }
    const sqlText = await alice.call<Page<KeyItem>>("GET", `/api/token/?keyword=${encodeURIComponent("' OR 1=1 --")}`)
    strictEqual(sqlText.success, true, sqlText.message)
    strictEqual(sqlText.data.total, 0, "SQL in a keyword is text")
    strictEqual((await alice.call<Page<KeyItem>>("GET", "/api/token/?keyword=%25")).data.total, 0, "% is a character")

    // Tasks: 10,000, newest first by default.
    const tasks = await timed("tasks page 1", () => alice.call<Page<TaskItem>>("GET", "/api/task/self?page=1"))
    strictEqual(tasks.success, true, tasks.message)
    strictEqual(tasks.data.total, 10_000)
    strictEqual(tasks.data.items[0].id, "task_seed09999")
    const failedVideos = await timed(
      "tasks filtered by status, kind and model",
      () =>
        alice.call<Page<TaskItem>>(
          "GET",
          "/api/task/self?status=failed&kind=video&model=seed-model-3&page_size=100"
        )
    )
    // i % 4 = 3, i % 3 = 0, i % 7 = 3: i ≡ 3 (mod 84): 120 of 0…9999 (3, 87, …, 9999).
    strictEqual(failedVideos.data.total, 120)
    ok(
      failedVideos.data.items.every((task) =>
        task.status === "failed" && task.kind === "video" && task.model === "seed-model-3"
      )
    )
    const window = await timed(
      "tasks in a time range",
      () =>
        alice.call<Page<TaskItem>>(
          "GET",
          `/api/task/self?start_timestamp=${SEEDED_TASKS_FROM + 600 * 60}&end_timestamp=${
            SEEDED_TASKS_FROM + 1200 * 60
          }&order=asc&sort=created_at`
        )
    )
    strictEqual(window.data.total, 600)
    strictEqual(window.data.items[0].id, "task_seed00600")
    strictEqual(window.data.items[0].created_at, SEEDED_TASKS_FROM + 600 * 60)
    const searched = await timed(
      "tasks searched by id",
      () => alice.call<Page<TaskItem>>("GET", "/api/task/self?keyword=task_seed0420")
    )
    strictEqual(searched.data.total, 10)
    ok(searched.data.items.every((task) => task.id.startsWith("task_seed0420")))
    const dearestTask = await timed(
      "tasks sorted by charge",
      () => alice.call<Page<TaskItem>>("GET", "/api/task/self?sort=quota&order=desc&page_size=1&status=completed")
    )
    strictEqual(dearestTask.data.items[0].id, "task_seed09998")
    strictEqual(dearestTask.data.items[0].quota, 9998)
    for (
      const [query, param] of [
        ["sort=upstream_id", "sort"],
        ["status=done", "status"],
        ["kind=audio", "kind"],
        ["order=x", "order"],
        ["start_timestamp=yesterday", "start_timestamp"],
        ["end_timestamp=-1", "end_timestamp"],
        ["keyword=%00", "keyword"],
        ["page_size=0", "page_size"]
      ]
    ) {
      const refused = await alice.call<null>("GET", `/api/task/self?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), `${query}: ${refused.message}`)
    }

    // Another user sees none of it.
    const bob = browser(gateway.url)
    await bob.login("bob", PASSWORD)
    strictEqual((await bob.call<Page<TaskItem>>("GET", "/api/task/self?keyword=task_seed")).data.total, 0)
    strictEqual((await bob.call<Page<KeyItem>>("GET", "/api/token/?keyword=seed")).data.total, 0)
  } finally {
    await gateway.close()
  }
})

Deno.test("own lists: keys and webhook endpoints enabled, disabled and deleted in bulk, own only", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    const alice = browser(gateway.url)
    await alice.login("alice", PASSWORD)
    const bob = browser(gateway.url)
    await bob.login("bob", PASSWORD)

    // Three keys made through the API, each used through the openai SDK.
    const made: Array<{ id: number; key: string }> = []
    for (const name of ["bulk-a", "bulk-b", "bulk-c"]) {
      const created = await alice.call<{ id: number; key: string }>("POST", "/api/token/", { name })
      strictEqual(created.success, true, created.message)
      made.push(created.data)
    }
    const ask = (key: string) =>
      new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "bulk" }],
        max_tokens: 8
      })
    strictEqual((await ask(made[0].key)).choices[0].message.content, "Echo: bulk")

    const ids = made.map((key) => key.id)
    const stolen = await bob.call<Array<Outcome>>("POST", "/api/token/bulk", { ids, action: "disable" })
    strictEqual(stolen.success, true, stolen.message)
    ok(
      stolen.data.every((entry) => !entry.success && /^No token with id/.test(entry.message ?? "")),
      JSON.stringify(stolen)
    )
    strictEqual(await statusOf(ask(made[0].key)), 200, "another user's bulk action changed nothing")

    const disabled = await alice.call<Array<Outcome>>("POST", "/api/token/bulk", {
      ids: [...ids, ids[0], 999_999],
      action: "disable"
    })
    deepStrictEqual(
      disabled.data.map((entry) => [entry.id, entry.success, entry.status ?? null]),
      [...ids.map((id) => [id, true, "disabled"]), [999_999, false, null]],
      "each id once, an unknown one not found"
    )
    for (const key of made) strictEqual(await statusOf(ask(key.key)), 401, "a key disabled in bulk is refused at once")
    const listedDisabled = await alice.call<Page<KeyItem>>("GET", "/api/token/?status=disabled&keyword=bulk-")
    strictEqual(listedDisabled.data.total, 3)

    const enabled = await alice.call<Array<Outcome>>("POST", "/api/token/bulk", {
      ids: ids.slice(0, 2),
      action: "enable"
    })
    ok(enabled.data.every((entry) => entry.success && entry.status === "enabled"), JSON.stringify(enabled.data))
    strictEqual((await ask(made[1].key)).choices[0].message.content, "Echo: bulk")

    const deleted = await alice.call<Array<Outcome>>("POST", "/api/token/bulk", { ids: [ids[1]], action: "delete" })
    deepStrictEqual(deleted.data, [{ id: ids[1], success: true }])
    strictEqual(await statusOf(ask(made[1].key)), 401, "a key deleted in bulk is refused at once")
    strictEqual((await alice.call<Page<KeyItem>>("GET", "/api/token/?keyword=bulk-")).data.total, 2)

    for (
      const body of [
        { ids: [], action: "enable" },
        { ids: [1], action: "drop" },
        { ids: Array.from({ length: 101 }, (_, i) => i + 1), action: "delete" },
        { ids: ["1; DROP TABLE tokens"], action: "delete" }
      ]
    ) {
      const refused = await alice.call("POST", "/api/token/bulk", body)
      strictEqual(refused.success, false, JSON.stringify(body).slice(0, 60))
      ok(/ids|action/.test(refused.message), refused.message)
    }

    // Webhook endpoints: 30 of alice's; the array form stays for callers without list parameters.
    const endpoints: Array<number> = []
    for (let index = 0; index < 30; index++) {
      const created = await alice.call<{ id: number }>("POST", "/api/webhook/", {
        url: `https://hooks${index % 3}.example.test/alice/${index}`,
        events: index % 2 === 0 ? ["budget.threshold"] : ["key.expiring"]
      })
      strictEqual(created.success, true, created.message)
      endpoints.push(created.data.id)
    }
    const array = await alice.call<Array<{ id: number; status: string }>>("GET", "/api/webhook/")
    ok(Array.isArray(array.data) && array.data.length === 30, "without list parameters the answer is the array")
    ok(array.data.every((endpoint) => endpoint.status === "enabled"))
    const paged = await timed(
      "webhooks page",
      () =>
        alice.call<Page<{ id: number; url: string }>>(
          "GET",
          "/api/webhook/?keyword=HOOKS1&event=key.expiring&sort=url&order=desc&page_size=3"
        )
    )
    strictEqual(paged.success, true, paged.message)
    // index % 3 = 1 and odd: 1, 7, 13, 19, 25.
    strictEqual(paged.data.total, 5)
    deepStrictEqual(paged.data.items.map((endpoint) => endpoint.url), [
      "https://hooks1.example.test/alice/7",
      "https://hooks1.example.test/alice/25",
      "https://hooks1.example.test/alice/19"
    ])
    for (
      const [query, param] of [["sort=secret", "sort"], ["status=on", "status"], ["order=up", "order"], [
        "event=%00",
        "event"
      ], ["page=0", "page"]]
    ) {
      const refused = await alice.call("GET", `/api/webhook/?${query}`)
      strictEqual(refused.success, false, query)
      ok(refused.message.includes(param), `${query}: ${refused.message}`)
    }

    // The first two budget.threshold endpoints: one disabled in bulk, one left enabled.
    const [kept, silenced] = [endpoints[0], endpoints[2]]
    const bobs = await bob.call<Array<Outcome>>("POST", "/api/webhook/bulk", { ids: [silenced], action: "delete" })
    deepStrictEqual(bobs.data.map((entry) => entry.success), [false])
    const off = await alice.call<Array<Outcome>>("POST", "/api/webhook/bulk", { ids: [silenced], action: "disable" })
    deepStrictEqual(off.data, [{ id: silenced, success: true, status: "disabled" }])
    const listedOff = await alice.call<Page<{ id: number }>>("GET", "/api/webhook/?status=disabled")
    deepStrictEqual(listedOff.data.items.map((endpoint) => endpoint.id), [silenced])
    // Every other budget.threshold endpoint deleted in bulk, so two remain subscribed.
    const others = endpoints.filter((id, index) => index % 2 === 0 && id !== kept && id !== silenced)
    const removed = await alice.call<Array<Outcome>>("POST", "/api/webhook/bulk", { ids: others, action: "delete" })
    ok(removed.data.every((entry) => entry.success), JSON.stringify(removed.data))
    strictEqual((await alice.call<Page<unknown>>("GET", "/api/webhook/?event=budget.threshold")).data.total, 2)

    // Spend the main key's daily budget (0.002 USD) through the SDK until it refuses: thresholds are crossed.
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: ALICE_KEY, maxRetries: 0 })
    let refused = false
    for (let index = 0; index < 100 && !refused; index++) {
      await openai.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: `spend ${index}` }],
        max_tokens: 16
      }).catch((error) => {
        refused = error instanceof OpenAI.RateLimitError
        if (!refused) throw error
      })
    }
    ok(refused, "the budget ran out")
    await gateway.settled()
    const written = await gateway.query<{ endpoint_id: bigint; n: bigint }>(
      `SELECT endpoint_id, count(*) AS n FROM webhook_outbox WHERE event_type = 'budget.threshold'
       GROUP BY endpoint_id`
    )
    deepStrictEqual(
      written.map((row) => Number(row.endpoint_id)),
      [kept],
      `only the enabled endpoint is written events: ${JSON.stringify(written.map((row) => Number(row.n)))}`
    )
    ok(Number(written[0].n) >= 2, "the 50% and 80% thresholds at least")
  } finally {
    await gateway.close()
  }
})
