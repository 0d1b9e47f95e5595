/**
 * Rerank end to end on the emulator's Cohere (`/v2/rerank`) and Jina
 * (`/v1/rerank`) wires: the AI SDK's `rerank` with its Cohere provider
 * pointed at the gateway's `/v2` (Cohere's own shape), and plain HTTP at
 * `/v1/rerank` with object documents, `top_n` and `return_documents`. The
 * order and scores are the emulator's `relevanceScore`; billing is checked
 * against `/api/usage/token`: `per_search` × the search units Cohere
 * reported (and shown in `meta.billed_units`), one unit per 100 documents on
 * Jina, or a token-priced Jina model billed the tokens Jina counted. Bad
 * input is a 400 naming the field; an upstream refusal and bad input cost
 * nothing. A jina channel in cooldown, and a jina key the vendor refused,
 * come back through the health prober's rerank of one tiny document; a
 * chat-only cohere channel is tested with a chat call, not a rerank.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { rerank } from "ai"
import { createCohere } from "@ai-sdk/cohere"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { cohereSearchUnits, relevanceScore } from "../../emulator/Rerank.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"
;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false

const KEY = "sk-test-rerank-0001"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1.5 } },
      models: {
        "rerank-v3.5": { per_search: 0.002 },
        "jina-reranker-v2-base-multilingual": { per_search: 0.001 },
        "jina-by-tokens": { input: 0.02 },
        "cohere-missing": { per_search: 0.002 },
        "command-a-03-2025": { input: 2.5, output: 10 }
      },
      channels: [
        {
          name: "cohere",
          type: "cohere",
          base_url: `${emulatorUrl}/v2`,
          keys: ["sk-test-co"],
          models: ["rerank-v3.5"]
        },
        {
          name: "jina",
          type: "jina",
          base_url: emulatorUrl,
          keys: ["sk-test-jina"],
          models: ["jina-reranker-v2-base-multilingual", "jina-by-tokens"],
          model_mapping: { "jina-by-tokens": "jina-reranker-v2-base-multilingual" }
        },
        // A model name the emulator's Cohere does not know: its 404 must reach the caller and cost nothing.
        { name: "cohere-2", type: "cohere", base_url: emulatorUrl, keys: ["sk-test-co"], models: ["cohere-missing"] },
        // A chat-only cohere channel (its compatibility API): probed and tested with chat, never a rerank.
        {
          name: "cohere-chat",
          type: "cohere",
          base_url: `${emulatorUrl}/v2`,
          keys: ["sk-test-co-chat"],
          models: ["command-a-03-2025"]
        }
      ],
      users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "rerank.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const totalUsed = async (gateway: TestGateway): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  return (await response.json()).data.total_used
}

const charged = async <A>(gateway: TestGateway, expected: number, send: () => Promise<A>): Promise<A> => {
  const before = await totalUsed(gateway)
  const result = await send()
  strictEqual((await totalUsed(gateway)) - before, expected, "quota charged")
  return result
}

const post = (gateway: TestGateway, path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body)
  })

const QUERY = "capital of the united states"
const DOCUMENTS = [
  "Carson City is the capital city of Nevada.",
  "Washington, D.C. is the capital of the United States.",
  "The capital city of France is Paris.",
  "Rivers flow downhill."
]

/** The emulator's ranking of `documents` for `query`: indices by falling score. */
const expectedOrder = (query: string, documents: ReadonlyArray<string>) =>
  documents.map((document, index) => ({ index, score: relevanceScore(query, document) }))
    .sort((a, b) => b.score - a.score || a.index - b.index)

Deno.test("rerank: the AI SDK on a cohere channel, /v1/rerank on jina, billed per search unit or token", async (t) => {
  const gateway = await startGateway({ config })
  try {
    await t.step("AI SDK rerank through /v2 (cohere wire): order, scores, per_search × reported units", async () => {
      const cohere = createCohere({ baseURL: `${gateway.url}/v2`, apiKey: KEY })
      const units = cohereSearchUnits(QUERY, DOCUMENTS)
      const result = await charged(
        gateway,
        Math.ceil(1.5 * units * 0.002 * 1e6),
        () => rerank({ model: cohere.reranking("rerank-v3.5"), query: QUERY, documents: DOCUMENTS, topN: 2 })
      )
      const expected = expectedOrder(QUERY, DOCUMENTS).slice(0, 2)
      deepStrictEqual(result.ranking.map((item) => item.originalIndex), expected.map((item) => item.index))
      deepStrictEqual(result.ranking.map((item) => item.score), expected.map((item) => item.score))
      strictEqual(result.rerankedDocuments[0], DOCUMENTS[1])
      const upstream = gateway.emulator.requests.at(-1)!
      strictEqual(upstream.path, "/v2/rerank")
      strictEqual(upstream.key, "sk-test-co")
    })

    await t.step("/v1/rerank on jina: object documents, return_documents, meta.billed_units", async () => {
      const documents = [{ text: DOCUMENTS[2], id: "fr" }, DOCUMENTS[1], { text: DOCUMENTS[0] }]
      const response = await charged(gateway, Math.ceil(1.5 * 1 * 0.001 * 1e6), () =>
        post(gateway, "/v1/rerank", {
          model: "jina-reranker-v2-base-multilingual",
          query: QUERY,
          documents,
          return_documents: true
        }))
      strictEqual(response.status, 200)
      strictEqual(response.headers.get("x-sluice-cost"), (Math.ceil(1.5 * 1000) / 1e6).toFixed(6))
      const body = await response.json()
      const texts = [DOCUMENTS[2], DOCUMENTS[1], DOCUMENTS[0]]
      deepStrictEqual(
        body.results.map((result: { index: number }) => result.index),
        expectedOrder(QUERY, texts).map((item) => item.index)
      )
      deepStrictEqual(body.results.find((result: { index: number }) => result.index === 0).document, documents[0])
      deepStrictEqual(body.results.find((result: { index: number }) => result.index === 1).document, {
        text: DOCUMENTS[1]
      })
      deepStrictEqual(body.meta.billed_units, { search_units: 1 })
      const upstream = gateway.emulator.requests.at(-1)!
      strictEqual(upstream.path, "/v1/rerank")
      deepStrictEqual((upstream.body as { documents: unknown }).documents, texts)
    })

    await t.step("a token-priced jina model is billed the tokens Jina counted", async () => {
      const tokens = DOCUMENTS.reduce((sum, document) => sum + Math.ceil((QUERY.length + document.length) / 4), 0)
      const response = await charged(
        gateway,
        Math.ceil(1.5 * tokens * 0.02),
        () => post(gateway, "/v2/rerank", { model: "jina-by-tokens", query: QUERY, documents: DOCUMENTS, top_n: 1 })
      )
      const body = await response.json()
      strictEqual(body.results.length, 1)
      strictEqual(body.results[0].index, 1)
      strictEqual(body.results[0].document, undefined)
    })

    await t.step("bad input: a 400 naming the field, nothing charged", async () => {
      const cases: ReadonlyArray<{ body: Record<string, unknown>; param: string }> = [
        { body: { query: QUERY, documents: DOCUMENTS }, param: "model" },
        { body: { model: "rerank-v3.5", documents: DOCUMENTS }, param: "query" },
        { body: { model: "rerank-v3.5", query: QUERY, documents: [] }, param: "documents" },
        { body: { model: "rerank-v3.5", query: QUERY, documents: ["a", 7] }, param: "documents[1]" },
        { body: { model: "rerank-v3.5", query: QUERY, documents: DOCUMENTS, top_n: 0 }, param: "top_n" },
        {
          body: { model: "rerank-v3.5", query: QUERY, documents: DOCUMENTS, return_documents: "yes" },
          param: "return_documents"
        }
      ]
      for (const item of cases) {
        const response = await charged(gateway, 0, () => post(gateway, "/v1/rerank", item.body))
        strictEqual(response.status, 400, item.param)
        strictEqual((await response.json()).error.param, item.param)
      }
    })

    await t.step("an upstream refusal (unknown model at Cohere) reaches the caller and costs nothing", async () => {
      const response = await charged(
        gateway,
        0,
        () => post(gateway, "/v2/rerank", { model: "cohere-missing", query: QUERY, documents: DOCUMENTS })
      )
      ok(response.status >= 400, `status ${response.status}`)
      const body = await response.json()
      ok(typeof body.error.message === "string")
      ok(!JSON.stringify(body).includes("sk-test-co"))
    })

    await t.step("admin pricing: per_search and per_1m_characters are stored, shown and bill at once", async () => {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const put = await root.call("PUT", "/api/pricing", {
        model: "rerank-v3.5",
        per_search: 0.004,
        per_1m_characters: 1
      })
      strictEqual(put.success, true, put.message)
      const prices = (await root.call<Array<Record<string, unknown>>>("GET", "/api/pricing")).data
      const row = prices.find((price) => price.model === "rerank-v3.5")
      strictEqual(row?.per_search, 0.004)
      strictEqual(row?.per_1m_characters, 1)
      const units = cohereSearchUnits(QUERY, DOCUMENTS)
      const response = await charged(
        gateway,
        Math.ceil(1.5 * units * 0.004 * 1e6),
        () => post(gateway, "/v1/rerank", { model: "rerank-v3.5", query: QUERY, documents: DOCUMENTS })
      )
      strictEqual(response.status, 200)
      await response.body?.cancel()
    })

    await t.step("a model no rerank channel serves is refused", async () => {
      const response = await charged(
        gateway,
        0,
        () => post(gateway, "/v1/rerank", { model: "gpt-unknown", query: QUERY, documents: DOCUMENTS })
      )
      ok(response.status === 503 || response.status === 404, `status ${response.status}`)
      await response.body?.cancel()
    })
  } finally {
    await gateway.close()
  }
})

const STATUS_TOKEN = "sk-test-status-rerank"

/** The health view of channel `name` from `/api/status` (its state and its keys' flags). */
const healthOf = async (gateway: TestGateway, name: string) => {
  const status = await (await fetch(`${gateway.url}/api/status`, {
    headers: { authorization: `Bearer ${STATUS_TOKEN}` }
  })).json()
  return status.data.channels.find((channel: { name: string }) => channel.name === name) as {
    state: string
    keys: Array<{ enabled: boolean }>
  }
}

/** Waits (up to 6 s) until `check` holds. */
const eventually = async (check: () => Promise<boolean>): Promise<boolean> => {
  const deadline = Date.now() + 6000
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return false
}

Deno.test("rerank health: a jina channel in cooldown and a refused jina key come back through a rerank probe", async (t) => {
  const gateway = await startGateway({
    config: (url) => {
      const file = config(url)
      return {
        ...file,
        settings: {
          ...file.settings,
          probe_interval_seconds: 1,
          cooldown_failures: 1,
          cooldown_seconds: 600,
          retry_times: 0,
          status_token: STATUS_TOKEN
        }
      }
    }
  })
  const rerankJina = () =>
    post(gateway, "/v1/rerank", { model: "jina-reranker-v2-base-multilingual", query: QUERY, documents: DOCUMENTS })
  try {
    await t.step("a failure puts the channel in cooldown; the prober's rerank ends it", async () => {
      gateway.emulator.setFaults([{ match: { path: "/v1/rerank" }, status: 500 }])
      const failed = await rerankJina()
      ok(failed.status >= 500, `status ${failed.status}`)
      await failed.body?.cancel()
      strictEqual((await healthOf(gateway, "jina")).state, "cooling")
      gateway.emulator.setFaults([])
      const since = gateway.emulator.requests.length
      ok(await eventually(async () => (await healthOf(gateway, "jina")).state === "healthy"), "the cooldown ended")
      const probes = gateway.emulator.requests.slice(since).filter((request) => request.key === "sk-test-jina")
      ok(probes.length > 0)
      for (const probe of probes) {
        strictEqual(probe.path, "/v1/rerank")
        deepStrictEqual((probe.body as { documents: unknown }).documents, ["pong"])
      }
      strictEqual((await rerankJina()).status, 200)
    })

    await t.step("a chat-only cohere channel is tested with a chat call, a rerank channel with a rerank", async () => {
      const root = browser(gateway.url)
      await root.login("root", ROOT_PASSWORD)
      const channels = (await root.call<Array<{ id: number; name: string }>>("GET", "/api/channel/")).data
      const idOf = (name: string) => channels.find((channel) => channel.name === name)!.id
      const tested = await root.call<{ status: number }>("POST", `/api/channel/test/${idOf("cohere-chat")}`)
      deepStrictEqual([tested.success, tested.data?.status], [true, 200])
      const chat = gateway.emulator.requests.filter((request) => request.key === "sk-test-co-chat")
      deepStrictEqual(chat.map((request) => request.path), ["/compatibility/v1/chat/completions"])
      strictEqual((chat[0].body as { model: string }).model, "command-a-03-2025")
      const since = gateway.emulator.requests.length
      strictEqual((await root.call("POST", `/api/channel/test/${idOf("cohere")}`)).success, true)
      deepStrictEqual(gateway.emulator.requests.slice(since).map((request) => request.path), ["/v2/rerank"])
    })

    await t.step("a key the vendor refused is disabled; the prober's rerank re-enables it", async () => {
      gateway.emulator.setValidKeys(["sk-test-co"])
      const refused = await rerankJina()
      ok(refused.status >= 400, `status ${refused.status}`)
      await refused.body?.cancel()
      strictEqual((await healthOf(gateway, "jina")).keys[0].enabled, false)
      gateway.emulator.setValidKeys(undefined)
      ok(await eventually(async () => (await healthOf(gateway, "jina")).keys[0].enabled), "the key was re-enabled")
      const last = gateway.emulator.requests.filter((request) => request.key === "sk-test-jina").at(-1)!
      strictEqual(last.path, "/v1/rerank")
      strictEqual((await rerankJina()).status, 200)
    })
  } finally {
    await gateway.close()
  }
})
