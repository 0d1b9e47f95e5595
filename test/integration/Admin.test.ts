/**
 * The admin API end to end: channels created, changed, tested and deleted at
 * run time with the routing index rebuilt at once here and within seconds on
 * another instance sharing the database; prices (with the two cache prices)
 * and group ratios applied to the next request; user management within the
 * role rules; quota top-ups as rows; the audit table for root; the status
 * detail for admins; a restart re-applying the file without undoing runtime
 * changes to users, keys or quota.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"

interface Page<A> {
  items: Array<A>
  total: number
}

const chat = (url: string, key: string, model = "gpt-test") =>
  new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({
    model,
    messages: [{ role: "user", content: "admin test" }]
  })

const statusOf = async (promise: Promise<unknown>): Promise<number> => {
  try {
    await promise
    return 200
  } catch (error) {
    return (error as { status: number }).status
  }
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 400))

/** Root, an admin (made by root) and a user with a key and quota. */
const cast = async (url: string) => {
  const root = browser(url)
  await root.login("root", ROOT_PASSWORD)
  const made = await root.call<{ id: number }>("POST", "/api/user/", {
    username: "ops",
    password: "ops-password-1",
    role: "admin"
  })
  strictEqual(made.success, true, made.message)
  const admin = browser(url)
  await admin.login("ops", "ops-password-1")
  const user = await admin.call<{ id: number }>("POST", "/api/user/", { username: "uma", password: "uma-password-1" })
  strictEqual(user.success, true, user.message)
  await admin.call("POST", "/api/user/topup", { id: user.data.id, amount: 2_000_000, note: "welcome" })
  const uma = browser(url)
  await uma.login("uma", "uma-password-1")
  const key = (await uma.call<{ key: string }>("POST", "/api/token/", { name: "k" })).data.key
  return { root, admin, uma, umaId: user.data.id, adminId: made.data.id, key }
}

Deno.test("admin: channels are created, masked, tested, disabled and deleted with the index rebuilt at once", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const { admin, uma, key } = await cast(gateway.url)
    strictEqual(await statusOf(chat(gateway.url, key, "gpt-new")), 503, "no channel serves gpt-new yet")

    const priced = await admin.call("PUT", "/api/pricing", { model: "gpt-new", input: 1, output: 2, cached_input: 0.1 })
    strictEqual(priced.success, true, priced.message)
    const upstreamKey = "sk-test-upstream-new-channel-0001"
    const created = await admin.call<{ id: number; keys: Array<{ key: string }> }>("POST", "/api/channel/", {
      name: "emu-new",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: [upstreamKey],
      models: ["gpt-new"],
      groups: ["default"]
    })
    strictEqual(created.success, true, created.message)
    ok(!JSON.stringify(created.data).includes(upstreamKey), "the key is not shown back")
    deepStrictEqual(created.data.keys.map((entry) => entry.key), ["sk-…0001"])
    const answer = await chat(gateway.url, key, "gpt-new")
    strictEqual(answer.choices[0].message.content, "Echo: admin test")

    const listed = await admin.call<Array<{ name: string }>>("GET", "/api/channel/")
    deepStrictEqual(listed.data.map((channel) => channel.name).sort(), ["emu-new", "emu-openai"])
    ok(!JSON.stringify(listed.data).includes("sk-test-upstream-1"), "no key in full in the listing")

    const tested = await admin.call<{ status: number; latency_ms: number }>(
      "POST",
      `/api/channel/test/${created.data.id}`
    )
    deepStrictEqual([tested.success, tested.data.status], [true, 200])
    ok(tested.data.latency_ms >= 0)
    const [row] = await gateway.query<{ tested_at: Date | null; test_latency_ms: number }>(
      `SELECT tested_at, test_latency_ms FROM channels WHERE id = ${created.data.id}`
    )
    ok(row.tested_at !== null && row.test_latency_ms === tested.data.latency_ms)

    const broken = await admin.call<{ id: number }>("POST", "/api/channel/", {
      name: "nowhere",
      type: "openai",
      base_url: "http://127.0.0.1:9",
      keys: ["sk-test-nowhere-00000001"],
      models: ["gpt-none"]
    })
    const failed = await admin.call<{ status: number }>("POST", `/api/channel/test/${broken.data.id}`)
    deepStrictEqual([failed.status, failed.success, failed.message], [
      200,
      false,
      "The upstream could not be reached."
    ])
    const detail = await admin.call<{ test_error: string }>("GET", `/api/channel/${broken.data.id}`)
    strictEqual(detail.data.test_error, "The upstream could not be reached.")

    const disabled = await admin.call("PUT", "/api/channel/", { id: created.data.id, enabled: false })
    strictEqual(disabled.success, true, disabled.message)
    strictEqual(await statusOf(chat(gateway.url, key, "gpt-new")), 503)
    await admin.call("PUT", "/api/channel/", { id: created.data.id, enabled: true, models: ["gpt-new", "gpt-test"] })
    strictEqual(await statusOf(chat(gateway.url, key, "gpt-new")), 200)

    const bad = await admin.call("POST", "/api/channel/", {
      name: "bad",
      type: "openai",
      base_url: "file:///etc/passwd",
      keys: ["k"],
      models: ["x"]
    })
    deepStrictEqual([bad.success, bad.message], [false, "base_url must be an http or https URL."])
    const nul = await admin.call("POST", "/api/channel/", {
      name: "bad",
      type: "openai",
      base_url: "http://127.0.0.1:9",
      keys: ["sk-test-bad-channel-0001"],
      models: ["x"],
      settings: { headers: { "x-team": "a\u0000b" } }
    })
    deepStrictEqual([nul.status, nul.success, nul.message], [
      200,
      false,
      "settings.headers.x-team holds a NUL character."
    ])
    const badType = await admin.call("POST", "/api/channel/", { name: "bad", type: "ftp", base_url: "http://x" })
    ok(!badType.success && badType.message.includes("type"), badType.message)

    const removed = await admin.call("DELETE", `/api/channel/${created.data.id}`)
    strictEqual(removed.success, true)
    strictEqual(await statusOf(chat(gateway.url, key, "gpt-new")), 503)
    strictEqual((await admin.call("GET", `/api/channel/${created.data.id}`)).success, false)
    strictEqual((await uma.call("GET", "/api/channel/")).status, 403, "users do not see channels")
  } finally {
    await gateway.close()
  }
})

Deno.test("admin: another instance on the same database follows a channel change within seconds", async () => {
  const first = await startGateway({ config: basicConfig, store: "postgres" })
  const second = await startGateway({
    config: basicConfig,
    databaseUrl: first.databaseUrl,
    emulator: first.emulator
  })
  try {
    const { admin, key } = await cast(first.url)
    await admin.call("PUT", "/api/pricing", { model: "gpt-shared", input: 1, output: 1 })
    strictEqual(await statusOf(chat(second.url, key, "gpt-shared")), 503)
    await admin.call("POST", "/api/channel/", {
      name: "emu-shared",
      type: "openai",
      base_url: first.emulator.url,
      keys: ["sk-test-upstream-shared-01"],
      models: ["gpt-shared"]
    })
    strictEqual(await statusOf(chat(first.url, key, "gpt-shared")), 200, "at once here")
    const deadline = Date.now() + 8_000
    let status = 0
    while (Date.now() < deadline) {
      status = await statusOf(chat(second.url, key, "gpt-shared"))
      if (status === 200) break
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    strictEqual(status, 200, "the other instance picked the channel up")
  } finally {
    await second.stop()
    await first.close()
  }
})

Deno.test("admin: prices and group ratios apply to the next request; the bootstrap file's cache and batch prices show", async () => {
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        models: {
          "gpt-test": { input: 2, output: 8, cached_input: 0.5, cache_write: 2.5, batch_input: 1, batch_output: 4 },
          "gpt-free": { free: true }
        }
      })
  })
  try {
    const { admin, uma, key } = await cast(gateway.url)
    const prices = await admin.call<Array<Record<string, unknown>>>("GET", "/api/pricing")
    deepStrictEqual(prices.data.find((row) => row.model === "gpt-test"), {
      model: "gpt-test",
      input: 2,
      output: 8,
      cached_input: 0.5,
      cache_write: 2.5,
      batch_input: 1,
      batch_output: 4,
      free: false
    })
    const costOfLast = async () => {
      await settled()
      const logs = await uma.call<Page<{ quota: number; prompt_tokens: number; completion_tokens: number }>>(
        "GET",
        "/api/log/self?page_size=1"
      )
      return logs.data.items[0]
    }
    await chat(gateway.url, key)
    const before = await costOfLast()
    strictEqual(before.quota, Math.ceil(before.prompt_tokens * 2 + before.completion_tokens * 8))

    const group = await admin.call("PUT", "/api/group", { name: "default", ratio: 3 })
    strictEqual(group.success, true, group.message)
    await chat(gateway.url, key)
    const tripled = await costOfLast()
    strictEqual(tripled.quota, Math.ceil(3 * (tripled.prompt_tokens * 2 + tripled.completion_tokens * 8)))

    await admin.call("PUT", "/api/pricing", { model: "gpt-test", input: 10, output: 10 })
    await chat(gateway.url, key)
    const repriced = await costOfLast()
    strictEqual(repriced.quota, 3 * 10 * (repriced.prompt_tokens + repriced.completion_tokens))

    const batchPriced = await admin.call("PUT", "/api/pricing", {
      model: "gpt-batch",
      input: 2,
      output: 8,
      batch_input: 1,
      batch_output: 4
    })
    strictEqual(batchPriced.success, true, batchPriced.message)
    const withBatch = await admin.call<Array<Record<string, unknown>>>("GET", "/api/pricing")
    deepStrictEqual(withBatch.data.find((row) => row.model === "gpt-batch"), {
      model: "gpt-batch",
      input: 2,
      output: 8,
      batch_input: 1,
      batch_output: 4,
      free: false
    })
    const badBatch = await admin.call("PUT", "/api/pricing", { model: "gpt-batch", batch_output: -1 })
    ok(!badBatch.success && badBatch.message.includes("batch_output"), badBatch.message)

    const groups = await admin.call<Array<{ name: string; ratio: number }>>("GET", "/api/group")
    deepStrictEqual(groups.data, [{ name: "default", ratio: 3 }])
    const bad = await admin.call("PUT", "/api/pricing", { model: "gpt-test", input: -1 })
    ok(!bad.success && bad.message.includes("input"), bad.message)
    strictEqual((await uma.call("PUT", "/api/group", { name: "default", ratio: 0 })).status, 403)
  } finally {
    await gateway.close()
  }
})

Deno.test("admin: role rules, top-ups as rows, the audit table for root, status detail for admins", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const { root, admin, uma, umaId, adminId } = await cast(gateway.url)
    const [rootRow] = await gateway.query<{ id: string }>("SELECT id FROM users WHERE username = 'root'")
    const rootId = Number(rootRow.id)

    // An admin manages users only, and grants no role above user.
    for (const role of ["admin", "root"]) {
      const raised = await admin.call("PUT", "/api/user/", { id: umaId, role })
      deepStrictEqual([raised.status, raised.message], [403, `A admin cannot grant the role ${role}.`])
      const made = await admin.call("POST", "/api/user/", { username: `x${role}`, password: "x-password-1", role })
      strictEqual(made.status, 403)
    }
    for (const target of [rootId, adminId]) {
      strictEqual((await admin.call("PUT", "/api/user/", { id: target, display_name: "pwned" })).status, 403)
      strictEqual((await admin.call("DELETE", `/api/user/${target}`)).status, 403)
      strictEqual((await admin.call("POST", "/api/user/topup", { id: target, amount: 1 })).status, 403)
    }
    strictEqual((await root.call("PUT", "/api/user/", { id: rootId, role: "user" })).status, 403, "root stays root")

    const renamed = await admin.call<{ display_name: string; group: string }>("PUT", "/api/user/", {
      id: umaId,
      display_name: "Uma",
      group: "default"
    })
    strictEqual(renamed.data.display_name, "Uma")
    const disabled = await admin.call("PUT", "/api/user/", { id: umaId, status: "disabled" })
    strictEqual(disabled.success, true)
    strictEqual((await uma.call("GET", "/api/user/self")).status, 401, "a disabled user's session ends")
    await admin.call("PUT", "/api/user/", { id: umaId, status: "enabled" })

    const topped = await admin.call<{ quota: number }>("POST", "/api/user/topup", { id: umaId, amount: 500 })
    strictEqual(topped.data.quota, 2_000_500)
    const topups = await gateway.query<{ amount: string; note: string }>(
      `SELECT amount, note FROM quota_topups WHERE user_id = ${umaId} ORDER BY id`
    )
    deepStrictEqual(topups.map((row) => [Number(row.amount), row.note]), [[2_000_000, "welcome"], [500, ""]])

    const listed = await admin.call<Page<{ username: string }>>("GET", "/api/user/?keyword=um")
    deepStrictEqual(listed.data.items.map((row) => row.username), ["uma"])

    strictEqual((await admin.call("GET", "/api/audit")).status, 403)
    const audit = await root.call<Page<{ actor: string; action: string; target: string; after: unknown }>>(
      "GET",
      "/api/audit?page_size=100"
    )
    const actions = audit.data.items.map((row) => `${row.actor} ${row.action} ${row.target}`)
    ok(actions.includes(`root user.create user:${adminId}`), actions.join("\n"))
    ok(actions.includes(`ops user.topup user:${umaId}`))
    ok(actions.includes(`ops user.update user:${umaId}`))
    ok(!JSON.stringify(audit.data).includes("password-1"), "no password in the audit table")

    const anonymous = await browser(gateway.url).call<Record<string, unknown>>("GET", "/api/status")
    ok(!("channels" in anonymous.data))
    ok(!("channels" in (await uma.call<Record<string, unknown>>("GET", "/api/status")).data))
    const detail = await admin.call<{ channels: Array<{ name: string }> }>("GET", "/api/status")
    deepStrictEqual(detail.data.channels.map((channel) => channel.name), ["emu-openai"])

    const deleted = await admin.call("DELETE", `/api/user/${umaId}`)
    strictEqual(deleted.success, true)
    strictEqual((await admin.call("GET", `/api/user/${umaId}`)).success, false)
  } finally {
    await gateway.close()
  }
})

Deno.test("admin: a restart re-applies the file's channels and prices, keeps runtime users, keys and quota", async () => {
  const first = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const { admin, key, umaId } = await cast(first.url)
    await admin.call("PUT", "/api/pricing", { model: "gpt-test", input: 100, output: 100 })
    await chat(first.url, key)
    await settled()
    await first.stop()
    const second = await startGateway({ config: basicConfig, databaseUrl: first.databaseUrl, emulator: first.emulator })
    try {
      const ops = browser(second.url)
      await ops.login("ops", "ops-password-1")
      const prices = await ops.call<Array<{ model: string; input: number }>>("GET", "/api/pricing")
      strictEqual(prices.data.find((row) => row.model === "gpt-test")?.input, 2, "the file's price is back")
      const uma = await ops.call<{ quota: number; used_quota: number }>("GET", `/api/user/${umaId}`)
      ok(uma.data.used_quota > 0 && uma.data.quota === 2_000_000 - uma.data.used_quota, JSON.stringify(uma.data))
      strictEqual(await statusOf(chat(second.url, key)), 200, "the key made at run time still works")
    } finally {
      await second.stop()
    }
  } finally {
    await first.close()
  }
})
