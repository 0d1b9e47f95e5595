/**
 * The spec's "Errors" table through the official `openai` SDK (raw `fetch`
 * where the SDK cannot send the request): status, gateway envelope
 * `{error: {message, type, param, code}}` with a string `param`, and no
 * failed request changing a balance.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI, { type APIError } from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const EXPIRED_KEY = "sk-test-alice-expired"
const DISABLED_KEY = "sk-test-alice-disable"
const POOR_KEY = "sk-test-bob-0001"
const UPSTREAM_KEY = "sk-test-upstream-1"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    groups: { default: { ratio: 1 }, vip: { ratio: 2 } },
    models: { "gpt-test": { input: 2, output: 8 }, "gpt-vip": { input: 1, output: 1 } },
    channels: [
      {
        name: "emu-openai",
        type: "openai",
        base_url: emulatorUrl,
        keys: [UPSTREAM_KEY],
        models: ["gpt-test", "gpt-unpriced"],
        groups: ["default"]
      },
      {
        name: "emu-vip",
        type: "openai",
        base_url: emulatorUrl,
        keys: [UPSTREAM_KEY],
        models: ["gpt-vip"],
        groups: ["vip"]
      }
    ],
    users: [
      {
        username: "alice",
        group: "default",
        quota: 10_000_000,
        tokens: [
          { name: "main", key: KEY },
          { name: "old", key: EXPIRED_KEY, expires_at: "2020-01-01T00:00:00Z" },
          { name: "flipped", key: DISABLED_KEY }
        ]
      },
      { username: "bob", group: "default", quota: 5, tokens: [{ name: "main", key: POOR_KEY }] }
    ],
    settings: { key_cache_ttl_ms: 100, retry_times: 0 }
  })

interface Envelope {
  readonly error: { readonly message: string; readonly type: string; readonly param: string; readonly code: string }
}

/** Asserts the gateway envelope: exactly four fields, every one a string. */
const assertEnvelope = (body: unknown, code: string): Envelope => {
  const envelope = body as Envelope
  deepStrictEqual(Object.keys(envelope).sort(), ["error"])
  deepStrictEqual(Object.keys(envelope.error).sort(), ["code", "message", "param", "type"])
  for (const field of ["message", "type", "param", "code"] as const) {
    strictEqual(typeof envelope.error[field], "string", `error.${field} is a string`)
  }
  strictEqual(envelope.error.code, code)
  ok(envelope.error.message.length > 0)
  return envelope
}

/** Runs `call`, which must fail with an SDK `APIError` of class `kind`; returns the error. */
const expectApiError = async <E extends APIError>(
  call: () => Promise<unknown>,
  kind: abstract new (...args: never) => E,
  status: number,
  code: string
): Promise<E> => {
  try {
    await call()
  } catch (error) {
    ok(error instanceof kind, `expected ${kind.name}, got ${(error as Error).constructor.name}: ${error}`)
    strictEqual(error.status, status)
    strictEqual(error.code, code)
    strictEqual(typeof error.param, "string")
    strictEqual(typeof error.type, "string")
    return error
  }
  throw new Error(`expected ${kind.name} (${status} ${code}), but the call succeeded`)
}

Deno.test("errors: statuses, codes and the gateway envelope; failed requests cost nothing", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  const clientFor = (apiKey: string) => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0 })
  const client = clientFor(KEY)
  const chat = (model = "gpt-test", key = KEY) =>
    clientFor(key).chat.completions.create({ model, messages: [{ role: "user", content: "hello" }], max_tokens: 20 })
  const post = (path: string, body: string, key: string | null = KEY) =>
    fetch(`${gateway.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
      body
    })
  const totalUsed = async (key: string): Promise<number> => {
    const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${key}` } })
    const body = await response.json()
    strictEqual(body.success, true)
    return body.data.total_used
  }
  const balances = () =>
    gateway.query<{ username: string; quota: string; used_quota: string; request_count: string }>(
      "SELECT username, quota::text, used_quota::text, request_count::text FROM users ORDER BY username"
    )
  try {
    // Paid requests first, so "before" is not trivially zero (and the key flipped below is in the key cache).
    await chat()
    await chat("gpt-test", DISABLED_KEY)
    const usedBefore = await totalUsed(KEY)
    ok(usedBefore > 0)
    // Both paid requests are alice's. Their charges reach the table with the usage log's batches (every 50 ms
    // here), not always the same one: wait for both before taking "before".
    const aliceUsed = usedBefore + await totalUsed(DISABLED_KEY)
    for (let tries = 0; tries < 100; tries += 1) {
      const alice = (await balances()).find((row) => row.username === "alice")
      if (Number(alice?.used_quota) === aliceUsed) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const balancesBefore = await balances()

    await t.step("invalid JSON: 400 invalid_request (raw fetch)", async () => {
      const response = await post("/v1/chat/completions", `{"model": "gpt-test", "messages": [`)
      strictEqual(response.status, 400)
      assertEnvelope(await response.json(), "invalid_request")
    })

    await t.step("missing model: 400 invalid_request, param model", async () => {
      const error = await expectApiError(
        () => client.chat.completions.create({ messages: [{ role: "user", content: "x" }] } as never),
        OpenAI.BadRequestError,
        400,
        "invalid_request"
      )
      strictEqual(error.param, "model")
      const response = await post("/v1/chat/completions", JSON.stringify({ messages: [] }))
      strictEqual(assertEnvelope(await response.json(), "invalid_request").error.param, "model")
    })

    await t.step("missing messages: 400 invalid_request, param messages", async () => {
      const error = await expectApiError(
        () => client.chat.completions.create({ model: "gpt-test" } as never),
        OpenAI.BadRequestError,
        400,
        "invalid_request"
      )
      strictEqual(error.param, "messages")
    })

    await t.step("missing key: 401 invalid_api_key (raw fetch: the SDK refuses to send no key)", async () => {
      const response = await post(
        "/v1/chat/completions",
        JSON.stringify({ model: "gpt-test", messages: [] }),
        null
      )
      strictEqual(response.status, 401)
      assertEnvelope(await response.json(), "invalid_api_key")
    })

    await t.step("unknown key: 401 invalid_api_key", async () => {
      await expectApiError(
        () => chat("gpt-test", "sk-test-nobody-0001"),
        OpenAI.AuthenticationError,
        401,
        "invalid_api_key"
      )
    })

    await t.step("expired key (expires_at in the past in the file): 401 invalid_api_key", async () => {
      const error = await expectApiError(
        () => chat("gpt-test", EXPIRED_KEY),
        OpenAI.AuthenticationError,
        401,
        "invalid_api_key"
      )
      ok(/expired/i.test(error.message))
    })

    await t.step("disabled key (tokens.enabled flipped in SQL, after the key cache ttl): 401", async () => {
      await gateway.query("UPDATE tokens SET enabled = FALSE WHERE name = 'flipped'")
      await new Promise((resolve) => setTimeout(resolve, 250))
      const error = await expectApiError(
        () => chat("gpt-test", DISABLED_KEY),
        OpenAI.AuthenticationError,
        401,
        "invalid_api_key"
      )
      ok(/disabled/i.test(error.message))
    })

    await t.step("user quota too small: 402 insufficient_user_quota", async () => {
      const error = await expectApiError(
        () => chat("gpt-test", POOR_KEY),
        OpenAI.APIError,
        402,
        "insufficient_user_quota"
      )
      strictEqual(error.type, "platform_api_error")
    })

    await t.step("model outside the key's group: 503 model_not_found", async () => {
      await expectApiError(() => chat("gpt-vip"), OpenAI.InternalServerError, 503, "model_not_found")
      await expectApiError(() => chat("gpt-nowhere"), OpenAI.InternalServerError, 503, "model_not_found")
    })

    await t.step("model without a price: 400 with a clear message", async () => {
      const error = await expectApiError(() => chat("gpt-unpriced"), OpenAI.BadRequestError, 400, "model_price_not_set")
      ok(error.message.includes(`Model "gpt-unpriced" has no price configured`), error.message)
      strictEqual(error.param, "model")
    })

    await t.step("upstream 429: 429 too_many_requests", async () => {
      gateway.emulator.setFaults([{ status: 429, times: 1 }])
      await expectApiError(() => chat(), OpenAI.RateLimitError, 429, "too_many_requests")
    })

    await t.step("upstream malformed body: 500 bad_response_body", async () => {
      gateway.emulator.setFaults([{ malformed: true, times: 1 }])
      await expectApiError(() => chat(), OpenAI.InternalServerError, 500, "bad_response_body")
    })

    await t.step("upstream 400: passes through with its message, never the upstream key", async () => {
      gateway.emulator.setFaults([{ status: 400, message: "bad sampling parameter", times: 2 }])
      const error = await expectApiError(() => chat(), OpenAI.BadRequestError, 400, "invalid_request")
      ok(error.message.includes("bad sampling parameter"), error.message)
      const response = await post(
        "/v1/chat/completions",
        JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x" }] })
      )
      strictEqual(response.status, 400)
      const text = await response.text()
      ok(!text.includes(UPSTREAM_KEY))
      ok(assertEnvelope(JSON.parse(text), "invalid_request").error.message.includes("bad sampling parameter"))
      gateway.emulator.clearFaults()
    })

    await t.step("unknown route: 404 in the gateway envelope", async () => {
      const response = await fetch(`${gateway.url}/v1/nowhere`, { headers: { authorization: `Bearer ${KEY}` } })
      strictEqual(response.status, 404)
      assertEnvelope(await response.json(), "not_found")
    })

    await t.step("no failed request changed a balance", async () => {
      strictEqual(await totalUsed(KEY), usedBefore)
      deepStrictEqual(await balances(), balancesBefore)
    })
  } finally {
    await gateway.close()
  }
})
