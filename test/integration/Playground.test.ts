/**
 * The console playground's way onto the public routes, over raw HTTP as the
 * page sends it: `POST /v1/chat/completions` and `GET /v1/models` with the
 * browser session and no key are billed to the user's playground token, made
 * on first use (named `Playground 2` when a key already has the name), listed
 * as `kind: "playground"` with no key text, limited and disabled like any key;
 * its stored digest is no key a caller can present; a cross-site request, a
 * request without the CSRF header or `Origin`, and a dead session are
 * refused, charging nothing. A key's rate limits are set, shown and cleared
 * through `/api/token/`, and enforced.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { type Browser, browser } from "../support/Browser.ts"

interface TokenView {
  readonly id: number
  readonly name: string
  readonly key: string
  readonly kind: string
  readonly status: string
  readonly limits: Record<string, number> | null
}

/** A chat request the way the playground sends it: the session cookie, no key. */
const sessionChat = (url: string, client: Browser, headers: Record<string, string>, content = "hello session") =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join("; "),
      ...headers
    },
    body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content }] })
  }).then(async (response) => ({
    status: response.status,
    requestId: response.headers.get("x-request-id"),
    body: await response.json()
  }))

Deno.test("playground: the session, with no key, is billed to a keyless playground token", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const made = await root.call<{ id: number }>("POST", "/api/user/", { username: "pat", password: "pat-password-1" })
    await root.call("POST", "/api/user/topup", { id: made.data.id, amount: 5_000_000 })
    const pat = browser(gateway.url)
    await pat.login("pat", "pat-password-1")
    // A key of the playground's name already: the playground token takes the next free one.
    strictEqual((await pat.call("POST", "/api/token/", { name: "Playground" })).success, true)

    const models = await fetch(`${gateway.url}/v1/models`, {
      headers: { cookie: `sluice_session=${pat.cookies.get("sluice_session")}` }
    })
    deepStrictEqual(((await models.json()).data as Array<{ id: string }>).map((model) => model.id).sort(), [
      "gpt-free",
      "gpt-test"
    ])

    const answered = await sessionChat(gateway.url, pat, { origin: gateway.url })
    strictEqual(answered.status, 200, JSON.stringify(answered.body))
    ok(answered.body.choices[0].message.content.includes("hello session"))
    const withHeader = await sessionChat(gateway.url, pat, { "x-sluice-csrf": "1" }, "again")
    strictEqual(withHeader.status, 200, JSON.stringify(withHeader.body))

    const listed = (await pat.call<{ items: Array<TokenView> }>("GET", "/api/token/")).data.items
    const playground = listed.find((token) => token.kind === "playground")!
    deepStrictEqual([playground.name, playground.key, playground.status], [
      "Playground 2",
      "no key: console only",
      "enabled"
    ])
    strictEqual(listed.length, 2, "one playground token, made once")
    await new Promise((resolve) => setTimeout(resolve, 400))
    const rows = await gateway.query<{ token_id: string; request_id: string; cost: string }>(
      "SELECT token_id::text, request_id, cost::text FROM usage_logs ORDER BY id"
    )
    deepStrictEqual(rows.map((row) => Number(row.token_id)), [playground.id, playground.id])
    ok(rows.every((row) => Number(row.cost) > 0))
    // The usage log row of one answer, by the id in its x-request-id header, as the playground reads its cost.
    const own = await pat.call<{ items: Array<{ quota: number; channel_name: string }> }>(
      "GET",
      `/api/log/self?request_id=${answered.requestId}`
    )
    deepStrictEqual(own.data.items.map((row) => [row.quota, row.channel_name]), [[Number(rows[0].cost), "emu-openai"]])

    // Refused, charging nothing: another site's page, no proof of this one, a dead session, the digest as a key.
    const before = (await pat.call<{ quota: number }>("GET", "/api/user/self")).data.quota
    const foreign = await sessionChat(gateway.url, pat, { origin: "http://evil.example", "x-sluice-csrf": "1" })
    deepStrictEqual([foreign.status, foreign.body.error.code], [403, "forbidden"])
    strictEqual((await sessionChat(gateway.url, pat, {})).status, 403)
    const dead = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: "sluice_session=gone", "x-sluice-csrf": "1" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x" }] })
    })
    strictEqual(dead.status, 401)
    await dead.body?.cancel()
    const digestAsKey = new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: `playground:${made.data.id}`,
      maxRetries: 0
    })
    const refused = await digestAsKey.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }]
    }).then(() => 200, (error: { status: number }) => error.status)
    strictEqual(refused, 401)
    await new Promise((resolve) => setTimeout(resolve, 200))
    strictEqual((await pat.call<{ quota: number }>("GET", "/api/user/self")).data.quota, before, "nothing charged")

    // Disabled like any key: the playground stops at once.
    strictEqual((await pat.call("PUT", "/api/token/", { id: playground.id, status: "disabled" })).success, true)
    const disabled = await sessionChat(gateway.url, pat, { "x-sluice-csrf": "1" })
    deepStrictEqual([disabled.status, disabled.body.error.code], [401, "invalid_api_key"])
  } finally {
    await gateway.close()
  }
})

Deno.test("keys: rate limits are set, listed, enforced and cleared through /api/token/", async () => {
  const gateway = await startGateway({ config: basicConfig })
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const bad = await root.call("POST", "/api/token/", { name: "limited", limits: { rpm: -1 } })
    strictEqual(bad.success, false)
    ok(bad.message.includes("rpm"), bad.message)
    const created = await root.call<TokenView & { key: string }>("POST", "/api/token/", {
      name: "limited",
      limits: { rpm: 1 }
    })
    deepStrictEqual(created.data.limits, { rpm: 1 })
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: created.data.key, maxRetries: 0 })
    const ask = () =>
      client.chat.completions.create({ model: "gpt-free", messages: [{ role: "user", content: "limits" }] }).then(
        () => 200,
        (error: { status: number }) => error.status
      )
    strictEqual(await ask(), 200)
    strictEqual(await ask(), 429, "the second request in the minute is over the key's limit")
    const cleared = await root.call<TokenView>("PUT", "/api/token/", { id: created.data.id, limits: null })
    strictEqual(cleared.data.limits, null)
    strictEqual(await ask(), 200, "no limit once cleared")
  } finally {
    await gateway.close()
  }
})
