/**
 * The generate-content path carries a method after the model
 * (`models/{model}:{method}`): only `generateContent` and
 * `streamGenerateContent` generate and bill. `countTokens` counts for free
 * (through `@google/genai` `ai.models.countTokens`), from the vendor on a gemini
 * channel and from the gateway's estimate elsewhere; `embedContent` and
 * `batchEmbedContents` embed (see `Embeddings.test.ts`; a generate body sent to
 * them is a free 400); any other method is a 404 in the gateway envelope. Malformed percent-escapes in a path and over-long
 * keys are the caller's errors in the gateway envelope, never a 500 or an
 * empty body.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { GoogleGenAI } from "@google/genai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

/** The spec's error code of an error body: `error.code`, or in Google's shape the ErrorInfo's `metadata.code`. */
const specCode = (
  body: { error: { code: unknown; details?: Array<{ metadata?: { code?: string } }> } }
): string | undefined =>
  typeof body.error.code === "string"
    ? body.error.code
    : body.error.details?.find((detail) => detail.metadata?.code !== undefined)?.metadata?.code

const KEY = "sk-test-methods-0001"
const NARROW_KEY = "sk-test-methods-narrow"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "gemini-2.5-flash": { input: 1, output: 2 },
        "gpt-test": { input: 2, output: 8 },
        "gemini-mapped": { input: 1, output: 2 }
      },
      channels: [
        { name: "gemini", type: "gemini", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["gemini-2.5-flash"] },
        {
          name: "gemini-mapped",
          type: "gemini",
          base_url: emulatorUrl,
          keys: ["sk-test-up"],
          models: ["gemini-mapped"],
          model_mapping: { "gemini-mapped": "gemini-2.5-pro" }
        },
        { name: "openai", type: "openai", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["gpt-test"] }
      ],
      users: [
        { username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: KEY }] },
        {
          username: "bob",
          group: "default",
          quota: 10_000_000,
          tokens: [{ name: "narrow", key: NARROW_KEY, models: ["gpt-test"] }]
        }
      ]
    }),
    "methods.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** What the store says was charged: quotas, used quotas, request counts and usage rows. */
const ledger = (gateway: TestGateway) =>
  gateway.query<Record<string, unknown>>(
    `SELECT (SELECT json_agg(json_build_object('quota', quota::text, 'used', used_quota::text,
              'requests', request_count::text) ORDER BY id) FROM users) AS users,
            (SELECT json_agg(json_build_object('remain', remain_quota::text, 'used', used_quota::text) ORDER BY id)
               FROM tokens) AS tokens,
            (SELECT count(*)::int FROM usage_logs) AS logs`
  ).then((rows) => rows[0])

const genai = (gateway: TestGateway, apiKey = KEY) =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })

/** Waits past the usage log's flush interval, so a row written by mistake would be seen. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 200))

const post = (gateway: TestGateway, path: string, body: unknown = { contents: [{ parts: [{ text: "hi" }] }] }) =>
  fetch(gateway.url + path, {
    method: "POST",
    headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

Deno.test("countTokens: free, from the vendor on a gemini channel and estimated elsewhere", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    const before = await ledger(gateway)

    await t.step("gemini channel: the vendor's count, at its :countTokens URL with the mapped model", async () => {
      const counted = await genai(gateway).models.countTokens({ model: "gemini-2.5-flash", contents: "Hello Gemini" })
      const direct = await genai({ url: gateway.emulator.url } as TestGateway, "sk-test-up").models.countTokens({
        model: "gemini-2.5-flash",
        contents: "Hello Gemini"
      })
      strictEqual(counted.totalTokens, direct.totalTokens)
      ok(gateway.emulator.requests.some((request) => request.path === "/v1beta/models/gemini-2.5-flash:countTokens"))
      const mapped = await genai(gateway).models.countTokens({ model: "gemini-mapped", contents: "Hello Gemini" })
      strictEqual(mapped.totalTokens, direct.totalTokens)
      strictEqual(gateway.emulator.requests.at(-1)!.path, "/v1beta/models/gemini-2.5-pro:countTokens")
    })

    await t.step("a generateContentRequest body names the channel's model", async () => {
      const response = await post(gateway, "/v1beta/models/gemini-mapped:countTokens", {
        generateContentRequest: { model: "models/gemini-mapped", contents: [{ parts: [{ text: "Hello Gemini" }] }] }
      })
      strictEqual(response.status, 200)
      ok(Number.isInteger((await response.json()).totalTokens))
      const sent = gateway.emulator.requests.at(-1)!.body as { generateContentRequest: { model: string } }
      strictEqual(sent.generateContentRequest.model, "models/gemini-2.5-pro")
    })

    await t.step("openai channel: the gateway's estimate, no upstream call", async () => {
      const calls = gateway.emulator.requests.length
      const counted = await genai(gateway).models.countTokens({ model: "gpt-test", contents: "Hello Gemini" })
      ok(Number.isInteger(counted.totalTokens) && counted.totalTokens! > 0, `estimate ${counted.totalTokens}`)
      strictEqual(gateway.emulator.requests.length, calls, "nothing was sent upstream")
    })

    await t.step("a model outside the caller's group or token is model_not_found", async () => {
      const response = await fetch(gateway.url + "/v1beta/models/gemini-2.5-flash:countTokens", {
        method: "POST",
        headers: { "x-goog-api-key": NARROW_KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] })
      })
      strictEqual(response.status, 503)
      strictEqual(specCode(await response.json()), "model_not_found")
      const unknown = await post(gateway, "/v1beta/models/no-such-model:countTokens")
      strictEqual(unknown.status, 503)
      strictEqual(specCode(await unknown.json()), "model_not_found")
    })

    await t.step("authenticated like generateContent", async () => {
      const response = await fetch(gateway.url + "/v1beta/models/gemini-2.5-flash:countTokens", {
        method: "POST",
        headers: { "x-goog-api-key": "sk-test-nobody", "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] })
      })
      strictEqual(response.status, 401, `${response.url}: ${(await response.clone().text()).slice(0, 200)}`)
      strictEqual(specCode(await response.json()), "invalid_api_key")
    })

    await settle()
    deepStrictEqual(await ledger(gateway), before, "nothing was charged and no usage row was written")
  } finally {
    await gateway.close()
  }
})

Deno.test("generate-content: any method but the generation, countTokens and embed methods is a 404", async () => {
  const gateway = await startGateway({ config, store: "postgres" })
  try {
    const before = await ledger(gateway)
    for (const model of ["gemini-2.5-flash", "gpt-test"]) {
      for (const suffix of [":embedContent", ":batchEmbedContents"]) {
        for (const prefix of ["/v1beta/models/", "/v1/models/"]) {
          // A generate body (`contents`) is not an embed request: the caller's 400, before any upstream call.
          const response = await post(gateway, prefix + model + suffix)
          strictEqual(response.status, 400, `${prefix}${model}${suffix}`)
          const body = await response.json()
          strictEqual(body.error.status, "INVALID_ARGUMENT")
          strictEqual(specCode(body), "invalid_request")
        }
      }
      for (const suffix of [":foo", "", ":", ":generateContentX", ":embedContents", ":batchEmbedContent"]) {
        for (const prefix of ["/v1beta/models/", "/v1/models/"]) {
          const response = await post(gateway, prefix + model + suffix)
          strictEqual(response.status, 404, `${prefix}${model}${suffix}`)
          const body = await response.json()
          strictEqual(body.error.code, 404)
          strictEqual(body.error.status, "NOT_FOUND")
          strictEqual(specCode(body), "not_found")
          strictEqual(typeof body.error.message, "string")
        }
      }
    }
    strictEqual(gateway.emulator.requests.length, 0, "nothing reached an upstream")
    await settle()
    deepStrictEqual(await ledger(gateway), before, "nothing was charged and no usage row was written")
  } finally {
    await gateway.close()
  }
})

Deno.test("malformed percent-escapes in a path are a 400 in the gateway envelope", async () => {
  const gateway = await startGateway({ config })
  try {
    for (
      const [method, path] of [
        ["POST", "/v1beta/models/%E0%A4%A:generateContent"],
        ["POST", "/v1beta/models/gemini-2.5-flash%:generateContent"],
        ["POST", "/v1beta/models/%ZZ:countTokens"],
        ["POST", "/v1/%zz"],
        ["GET", "/v1/%zz"],
        ["GET", "/v1beta/models/%E0%A4%A"],
        ["POST", "/v1/chat/completions%"]
      ]
    ) {
      const response = await fetch(gateway.url + path, {
        method,
        headers: { "x-goog-api-key": KEY, authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: method === "GET" ? undefined : JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] })
      })
      strictEqual(response.status, 400, `${method} ${path}`)
      const body = await response.json()
      strictEqual(body.error.code, "invalid_request", `${method} ${path}`)
      strictEqual(body.error.type, "invalid_request_error")
    }
    const unknown = await fetch(gateway.url + "/v1/no-such-route%20here", { method: "POST" })
    strictEqual(unknown.status, 404)
    strictEqual((await unknown.json()).error.code, "not_found")
    strictEqual(gateway.emulator.requests.length, 0)
  } finally {
    await gateway.close()
  }
})

Deno.test("an over-long key is invalid_api_key on every carrier", async () => {
  const gateway = await startGateway({ config })
  try {
    const long = "sk-test-" + "k".repeat(4096)
    const calls = [
      fetch(gateway.url + "/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${long}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      }),
      fetch(gateway.url + "/v1beta/models/gemini-2.5-flash:generateContent", {
        method: "POST",
        headers: { "x-goog-api-key": long, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] })
      }),
      fetch(gateway.url + "/v1beta/models/gemini-2.5-flash:countTokens?key=" + long, {
        method: "POST",
        body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] })
      })
    ]
    for (const response of await Promise.all(calls)) {
      strictEqual(response.status, 401, `${response.url}: ${(await response.clone().text()).slice(0, 200)}`)
      strictEqual(specCode(await response.json()), "invalid_api_key")
    }
    strictEqual(gateway.emulator.requests.length, 0)
  } finally {
    await gateway.close()
  }
})
