/**
 * A user's own keys through `/api/token/` and their usage through `/api/log/*`
 * and `/api/user/self/usage`: the full key is returned once and listed only
 * masked; a key made through the API works on `/v1/chat/completions` (the
 * `openai` SDK) at once, and a disabled or deleted one fails with 401 at once
 * (the key cache is cleared); another user neither sees nor changes it; logs
 * are filtered and paginated. On PGlite and PostgreSQL.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway, type Store } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"

interface TokenView {
  id: number
  name: string
  key: string
  status: string
  remain_quota: number | null
  used_quota: number
  models: Array<string> | null
  expires_at: number | null
}

interface Page<A> {
  items: Array<A>
  total: number
  page: number
  page_size: number
}

const chat = (url: string, key: string, content = "hello keys") =>
  new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content }]
  })

/** Waits for the usage log and the ledger to commit (every 50 ms in tests). */
const settled = () => new Promise((resolve) => setTimeout(resolve, 400))

const statusOf = async (promise: Promise<unknown>): Promise<number> => {
  try {
    await promise
    return 200
  } catch (error) {
    return (error as { status: number }).status
  }
}

const users = async (url: string) => {
  const root = browser(url)
  await root.login("root", ROOT_PASSWORD)
  const grant = async (username: string) => {
    await browser(url).call("POST", "/api/user/register", { username, password: `${username}-password-1` })
    const client = browser(url)
    const login = await client.login(username, `${username}-password-1`)
    await root.call("POST", "/api/user/topup", { id: (login.data as { id: number }).id, amount: 5_000_000 })
    return client
  }
  return { root, a: await grant("usera"), b: await grant("userb") }
}

for (const store of ["pglite", "postgres"] as ReadonlyArray<Store>) {
  Deno.test(`tokens (${store}): made, used, masked, disabled and deleted with immediate effect`, async () => {
    // A long key cache: only the invalidation can make a change visible at once.
    const gateway = await startGateway({
      config: (url) => basicConfig(url, { settings: { key_cache_ttl_ms: 600_000 } }),
      store
    })
    try {
      const { a, b } = await users(gateway.url)
      const created = await a.call<TokenView & { key: string }>("POST", "/api/token/", { name: "laptop" })
      strictEqual(created.success, true, created.message)
      const key = created.data.key
      ok(/^sk-[A-Za-z0-9]{48}$/.test(key), key.slice(0, 8))
      deepStrictEqual([created.data.status, created.data.remain_quota], ["enabled", null])

      const completion = await chat(gateway.url, key)
      strictEqual(completion.choices[0].message.content, "Echo: hello keys")

      await settled()
      const listed = await a.call<Page<TokenView>>("GET", "/api/token/?page=1&page_size=10")
      deepStrictEqual([listed.data.total, listed.data.items.length], [1, 1])
      const shown = listed.data.items[0]
      ok(!JSON.stringify(listed.data).includes(key), "the full key is never listed")
      ok(key.startsWith(shown.key.replace("…", "")) && shown.key.endsWith("…"), shown.key)
      ok(shown.used_quota > 0, "the chat was charged to the key")

      // B sees none of A's keys and can neither change nor delete them.
      const bList = await b.call<Page<TokenView>>("GET", "/api/token/")
      deepStrictEqual([bList.data.total, bList.data.items], [0, []])
      const bPut = await b.call("PUT", "/api/token/", { id: shown.id, status: "disabled" })
      deepStrictEqual([bPut.success, bPut.message], [false, `No token with id "${shown.id}".`])
      const bDelete = await b.call("DELETE", `/api/token/${shown.id}`)
      strictEqual(bDelete.success, false)
      strictEqual(await statusOf(chat(gateway.url, key)), 200, "A's key still works")

      const disabled = await a.call<TokenView>("PUT", "/api/token/", { id: shown.id, status: "disabled" })
      strictEqual(disabled.data.status, "disabled")
      strictEqual(await statusOf(chat(gateway.url, key)), 401)
      await a.call("PUT", "/api/token/", { id: shown.id, status: "enabled", name: "renamed" })
      strictEqual(await statusOf(chat(gateway.url, key)), 200)

      // Charges are committed a moment after the answer (QuotaLedger); a quota set now is not lowered by them.
      await settled()
      const limited = await a.call<TokenView>("PUT", "/api/token/", {
        id: shown.id,
        models: ["gpt-free"],
        remain_quota: 1000,
        expires_at: Math.floor(Date.now() / 1000) + 3600
      })
      deepStrictEqual([limited.data.models, limited.data.remain_quota], [["gpt-free"], 1000])
      strictEqual(await statusOf(chat(gateway.url, key)), 503, "gpt-test is no longer on the key's list")

      // An IP allow-list: the tests reach the gateway from 127.0.0.1.
      await a.call("PUT", "/api/token/", { id: shown.id, models: null, remain_quota: null })
      const fenced = await a.call<TokenView & { allow_ips: Array<string> }>("PUT", "/api/token/", {
        id: shown.id,
        allow_ips: ["10.0.0.0/8", "2001:db8::/32"]
      })
      deepStrictEqual(fenced.data.allow_ips, ["10.0.0.0/8", "2001:db8::/32"])
      const outside = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      })
      deepStrictEqual([outside.status, (await outside.json()).error.code], [401, "invalid_api_key"])
      // Every key route checks the list, not only the text routes.
      for (const path of ["/v1/embeddings", "/v1/images/generations", "/v1/images/edits"]) {
        const fencedOut = await fetch(`${gateway.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-test", input: "hi", prompt: "hi" })
        })
        deepStrictEqual([path, fencedOut.status, (await fencedOut.json()).error.code], [path, 401, "invalid_api_key"])
      }
      await a.call("PUT", "/api/token/", { id: shown.id, allow_ips: ["127.0.0.0/8"] })
      strictEqual(await statusOf(chat(gateway.url, key)), 200, "inside the list")
      for (const path of ["/v1/embeddings", "/v1/images/generations"]) {
        const inside = await fetch(`${gateway.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-test", input: "hi", prompt: "hi" })
        })
        const code = inside.status === 401 ? (await inside.json()).error.code : (await inside.body?.cancel(), "")
        ok(code !== "invalid_api_key", `${path}: the key is accepted inside its list`)
      }
      await a.call("PUT", "/api/token/", { id: shown.id, allow_ips: null })
      strictEqual(await statusOf(chat(gateway.url, key)), 200, "no list: anywhere")

      const deleted = await a.call("DELETE", `/api/token/${shown.id}`)
      strictEqual(deleted.success, true)
      strictEqual(await statusOf(chat(gateway.url, key)), 401)
      strictEqual((await a.call<Page<TokenView>>("GET", "/api/token/")).data.total, 0)
    } finally {
      await gateway.close()
    }
  })
}

Deno.test("tokens: bad input names the field; names are unique per user", async () => {
  const gateway = await startGateway({ config: basicConfig })
  try {
    const { a, b } = await users(gateway.url)
    await a.call("POST", "/api/token/", { name: "ci" })
    const dup = await a.call("POST", "/api/token/", { name: "ci" })
    deepStrictEqual([dup.status, dup.success, dup.message], [200, false, "You already have a key with this name."])
    strictEqual((await b.call("POST", "/api/token/", { name: "ci" })).success, true, "another user may use it")
    const cases: Array<[string, string, unknown, string]> = [
      ["POST", "/api/token/", { name: "" }, "name"],
      ["POST", "/api/token/", { name: "x\u0000" }, "name"],
      ["POST", "/api/token/", { name: "ok", remain_quota: -1 }, "remain_quota"],
      ["POST", "/api/token/", { name: "ok", models: "gpt-test" }, "models"],
      ["PUT", "/api/token/", { name: "no id" }, "id"],
      ["PUT", "/api/token/", { id: 1, status: "paused" }, "status"],
      ["PUT", "/api/token/", { id: 1, allow_ips: ["300.1.1.1"] }, "allow_ips[0]"],
      ["DELETE", "/api/token/abc", undefined, "id"],
      ["POST", "/api/token/", { name: "ok", models: ["gpt\u0000"] }, "models[0]"],
      ["GET", "/api/log/self?model_name=%00", undefined, "model_name"],
      ["GET", "/api/log/self?token_name=%E2%80%AE%01", undefined, "token_name"],
      ["GET", "/api/token/?page=0", undefined, "page"],
      ["GET", "/api/token/?page_size=1000", undefined, "page_size"]
    ]
    for (const [method, path, body, field] of cases) {
      const answer = await a.call(method, path, body)
      deepStrictEqual([answer.status, answer.success], [200, false], `${method} ${path}`)
      ok(answer.message.includes(field), `${method} ${path}: ${answer.message}`)
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("logs: own rows with filters and pages; daily usage; B never sees A's rows", async () => {
  const gateway = await startGateway({ config: basicConfig })
  try {
    const { root, a, b } = await users(gateway.url)
    const first = (await a.call<{ key: string; id: number }>("POST", "/api/token/", { name: "one" })).data
    const second = (await a.call<{ key: string }>("POST", "/api/token/", { name: "two" })).data
    await chat(gateway.url, first.key, "first")
    await chat(gateway.url, first.key, "second")
    await chat(gateway.url, second.key, "third")
    const bKey = (await b.call<{ key: string }>("POST", "/api/token/", { name: "bkey" })).data.key
    await chat(gateway.url, bKey, "b's own")
    await new Promise((resolve) => setTimeout(resolve, 300)) // the usage log flushes every 50 ms in tests

    const all = await a.call<Page<Record<string, unknown>>>("GET", "/api/log/self")
    strictEqual(all.data.total, 3)
    ok(all.data.items.every((row) => row.model === "gpt-test" && (row.quota as number) > 0))
    ok(all.data.items.every((row) => !("channel_id" in row)), "users do not see channels")
    const byToken = await a.call<Page<unknown>>("GET", "/api/log/self?token_name=one")
    strictEqual(byToken.data.total, 2)
    const byId = await a.call<Page<unknown>>(`GET`, `/api/log/self?token_id=${first.id}&page=2&page_size=1`)
    deepStrictEqual([byId.data.total, byId.data.items.length, byId.data.page], [2, 1, 2])
    const future = Math.floor(Date.now() / 1000) + 3600
    strictEqual((await a.call<Page<unknown>>("GET", `/api/log/self?start_timestamp=${future}`)).data.total, 0)
    strictEqual((await a.call<Page<unknown>>("GET", "/api/log/self?model_name=other")).data.total, 0)
    const badTime = await a.call("GET", "/api/log/self?start_timestamp=yesterday")
    deepStrictEqual([badTime.success, badTime.message], [false, "start_timestamp must be epoch seconds."])

    const bRows = await b.call<Page<{ token_name: string }>>("GET", "/api/log/self")
    deepStrictEqual(bRows.data.items.map((row) => row.token_name), ["bkey"])
    const bOnA = await b.call<Page<unknown>>("GET", `/api/log/self?token_id=${first.id}`)
    strictEqual(bOnA.data.total, 0)
    strictEqual((await b.call("GET", "/api/log/")).status, 403)

    const everyone = await root.call<Page<{ username: string; channel_id: number }>>("GET", "/api/log/")
    strictEqual(everyone.data.total, 4)
    ok(everyone.data.items.every((row) => typeof row.channel_id === "number"))
    const onlyB = await root.call<Page<unknown>>("GET", "/api/log/?username=userb")
    strictEqual(onlyB.data.total, 1)
    const channel = everyone.data.items[0].channel_id
    strictEqual((await root.call<Page<unknown>>("GET", `/api/log/?channel=${channel}`)).data.total, 4)
    strictEqual((await root.call<Page<unknown>>("GET", `/api/log/?channel=${channel + 1}`)).data.total, 0)

    const daily = await a.call<Array<{ date: string; model: string; requests: number; quota: number }>>(
      "GET",
      "/api/user/self/usage?days=7"
    )
    deepStrictEqual(daily.data.map((row) => [row.date, row.model, row.requests]), [
      [new Date().toISOString().slice(0, 10), "gpt-test", 3]
    ])
    const badDays = await a.call("GET", "/api/user/self/usage?days=0")
    deepStrictEqual([badDays.success, badDays.message], [false, "days must be between 1 and 366."])
  } finally {
    await gateway.close()
  }
})
