/**
 * `type: deepseek` channels end to end against the emulator's DeepSeek (served
 * under `/deepseek`, so the channel's `base_url` has a path), through the
 * official SDKs, with what an `openai` channel pointed at DeepSeek does beside
 * it:
 *
 * - cache hits (`prompt_cache_hit_tokens`) are billed at the model's
 *   `cached_input` and the rest at `input`, exactly what the emulator reported,
 *   on both channel types, streamed and not; a chat caller sees them as
 *   `prompt_tokens_details.cached_tokens`;
 * - a thinking-mode tool loop from a Messages client carries the reasoning back
 *   as `reasoning_content`, which DeepSeek requires; the `openai` channel drops
 *   it and DeepSeek's 400 reaches the caller, with nothing charged;
 * - a `developer` message reaches DeepSeek as `system`, the output cap as
 *   `max_tokens`; legacy completions reach DeepSeek's FIM completion with their
 *   `suffix`;
 * - DeepSeek's own refusal of an image is the caller's 400, nothing charged; its
 *   402 (Insufficient Balance) disables the key;
 * - a deepseek channel without a `base_url` gets `https://api.deepseek.com`,
 *   from the bootstrap file and from the admin API.
 */
import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { assertBilledAsReported, type BilledAs, postsSince, rowReader } from "../support/BilledAsReported.ts"

const KEY = "sk-test-deepseek-caller-0001"
/** USD per 1M tokens: cache hits at a quarter of `input`. */
const PRICE = { input: 2, output: 8, cached_input: 0.5 }
const BILLED: BilledAs = {
  vendor: "DeepSeek",
  quarters: { input: 8, cachedInput: 2, cacheWrite: 0, output: 32 },
  cacheApart: false
}

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        ["ds-chat", "ds-reasoner", "oa-chat", "oa-reasoner", "ds-spent", "ds-default"].map((model) => [model, PRICE])
      ),
      channels: [
        {
          name: "deepseek",
          type: "deepseek",
          base_url: `${emulatorUrl}/deepseek`,
          keys: ["sk-test-upstream-ds-1"],
          models: ["ds-chat", "ds-reasoner"],
          model_mapping: { "ds-chat": "deepseek-chat", "ds-reasoner": "deepseek-reasoner" }
        },
        {
          // What many teams do today: an openai channel at DeepSeek's `/v1` base URL.
          name: "openai-at-deepseek",
          type: "openai",
          base_url: `${emulatorUrl}/deepseek/v1`,
          keys: ["sk-test-upstream-oa-1"],
          models: ["oa-chat", "oa-reasoner"],
          model_mapping: { "oa-chat": "deepseek-chat", "oa-reasoner": "deepseek-reasoner" }
        },
        {
          name: "deepseek-spent",
          type: "deepseek",
          base_url: `${emulatorUrl}/deepseek/`,
          keys: ["sk-test-upstream-spent-1"],
          models: ["ds-spent"],
          model_mapping: { "ds-spent": "deepseek-spent" }
        },
        { name: "deepseek-default", type: "deepseek", keys: ["sk-test-upstream-default-1"], models: ["ds-default"] }
      ],
      users: [{ username: "dora", group: "default", quota: 1_000_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "deepseek.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("deepseek channels: DeepSeek's wire carried, billed as DeepSeek reported", async (t) => {
  const gateway = await startGateway({ config, store: "postgres" })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  const nextRows = rowReader(gateway)
  try {
    await t.step("cache hits are billed at cached_input, as reported, on deepseek and openai channels", async () => {
      for (const model of ["ds-chat", "oa-chat"]) {
        const from = gateway.emulator.requests.length
        // "cached" makes the emulator report half the prompt as hits; the second call repeats the first's prefix.
        const first: Array<OpenAI.ChatCompletionMessageParam> = [
          { role: "system", content: "You answer from the cached manual." },
          { role: "user", content: "hello" }
        ]
        const one = await openai.chat.completions.create({ model, messages: first })
        const two = await openai.chat.completions.create({
          model,
          messages: [...first, { role: "assistant", content: "Echo: hello" }, { role: "user", content: "more" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        let streamedUsage: OpenAI.CompletionUsage | undefined
        for await (const chunk of two) if (chunk.usage) streamedUsage = chunk.usage
        const reported = postsSince(gateway, from)
        strictEqual(reported.length, 2)
        ok(reported.every((request) => request.usage!.cacheRead > 0), `${model}: DeepSeek reported cache hits`)
        ok(reported[1].usage!.cacheRead > reported[0].usage!.cacheRead, `${model}: the repeated prefix hit`)
        // The chat caller reads them in OpenAI's field, beside DeepSeek's own.
        strictEqual(one.usage?.prompt_tokens_details?.cached_tokens, reported[0].usage!.cacheRead)
        strictEqual(streamedUsage?.prompt_tokens_details?.cached_tokens, reported[1].usage!.cacheRead)
        strictEqual(
          (one.usage as unknown as Record<string, unknown>).prompt_cache_hit_tokens,
          reported[0].usage!.cacheRead
        )
        assertBilledAsReported(await nextRows(), reported, BILLED)
      }
    })

    await t.step("a Messages caller's thinking tool loop: reasoning_content goes back to DeepSeek", async () => {
      const tools: Array<Anthropic.Tool> = [{
        name: "get_weather",
        description: "Weather in a city",
        input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      }]
      const loop = async (model: string) => {
        const question: Anthropic.MessageParam = { role: "user", content: "weather in Paris?" }
        const thinking = { type: "enabled" as const, budget_tokens: 1024 }
        const first = await anthropic.messages.create({
          model,
          max_tokens: 4096,
          thinking,
          tools,
          messages: [question]
        })
        const use = first.content.find((block) => block.type === "tool_use")
        ok(use !== undefined && use.type === "tool_use", `${model}: a tool call`)
        const thought = first.content.find((block) => block.type === "thinking")
        ok(thought !== undefined && thought.type === "thinking", `${model}: DeepSeek's reasoning as a thinking block`)
        strictEqual(thought.thinking, "Thinking about: weather in Paris?")
        return anthropic.messages.create({
          model,
          max_tokens: 4096,
          thinking,
          tools,
          messages: [
            question,
            { role: "assistant", content: first.content },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "21 degrees" }] }
          ]
        })
      }
      const from = gateway.emulator.requests.length
      const answer = await loop("ds-reasoner")
      const text = answer.content.find((block) => block.type === "text")
      strictEqual(text?.type === "text" ? text.text : "", "Tool result: 21 degrees")
      const sent = postsSince(gateway, from)[1].body as { messages: ReadonlyArray<Record<string, unknown>> }
      const turn = sent.messages.find((message) => message.role === "assistant")!
      strictEqual(turn.reasoning_content, "Thinking about: weather in Paris?", "the reasoning went back")
      assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)

      // An openai channel drops reasoning history: DeepSeek's thinking mode refuses the tool turn.
      const before = gateway.emulator.requests.length
      const refused = await loop("oa-reasoner").catch((error: unknown) => error)
      ok(refused instanceof Anthropic.BadRequestError, `DeepSeek's 400 reaches the caller, got ${refused}`)
      ok(refused.message.includes("Missing `reasoning_content` field"), refused.message)
      const rows = await nextRows(1)
      assertBilledAsReported(rows, postsSince(gateway, before).slice(0, 1), BILLED)
      const failed = rows.filter((row) => row.status >= 400)
      strictEqual(failed.length, 1, "the refused call is logged")
      strictEqual(failed[0].cost, "0", "and costs nothing")
    })

    await t.step("developer messages reach DeepSeek as system, the cap as max_tokens", async () => {
      const from = gateway.emulator.requests.length
      const chat = await openai.chat.completions.create({
        model: "ds-chat",
        max_completion_tokens: 64,
        messages: [{ role: "developer", content: "Be brief." }, { role: "user", content: "hi" }]
      })
      strictEqual(chat.choices[0].message.content, "Echo: hi")
      const response = await openai.responses.create({
        model: "ds-chat",
        max_output_tokens: 64,
        input: [{ role: "developer", content: "Be brief." }, { role: "user", content: "hey" }]
      })
      strictEqual(response.output_text, "Echo: hey")
      for (const request of postsSince(gateway, from)) {
        const body = request.body as { messages: ReadonlyArray<{ role: string }>; max_tokens?: number }
        strictEqual(body.messages[0].role, "system")
        strictEqual(body.max_tokens, 64)
        strictEqual("max_completion_tokens" in body, false)
      }
      assertBilledAsReported(await nextRows(), postsSince(gateway, from), BILLED)
    })

    await t.step("legacy completions go to DeepSeek's FIM completion, suffix included", async () => {
      const from = gateway.emulator.requests.length
      const completion = await openai.completions.create({
        model: "ds-chat",
        prompt: "def fib(a): # cached",
        suffix: "    return fib(a-1) + fib(a-2)",
        max_tokens: 64
      })
      strictEqual(completion.choices[0].text, "Echo: def fib(a): # cached")
      const [request] = postsSince(gateway, from)
      strictEqual(request.path, "/deepseek/beta/completions")
      strictEqual((request.body as Record<string, unknown>).suffix, "    return fib(a-1) + fib(a-2)")
      strictEqual(completion.usage?.prompt_tokens_details?.cached_tokens, request.usage!.cacheRead)
      ok(request.usage!.cacheRead > 0)
      assertBilledAsReported(await nextRows(), [request], BILLED)
    })

    await t.step("DeepSeek's refusal of an image is the caller's 400; nothing is charged", async () => {
      const refused = await openai.chat.completions.create({
        model: "ds-chat",
        messages: [{
          role: "user",
          content: [{ type: "text", text: "what is this" }, {
            type: "image_url",
            image_url: { url: "data:image/png;base64,iVBORw0KGgo=" }
          }]
        }]
      }).catch((error: unknown) => error)
      ok(refused instanceof OpenAI.BadRequestError, `a 400, got ${refused}`)
      ok(refused.message.includes("unknown variant `image_url`, expected `text`"), refused.message)
      const rows = await nextRows(1)
      ok(rows.length > 0 && rows.every((row) => row.status >= 400 && row.cost === "0"), "only a failed row, free")
    })

    await t.step("DeepSeek's 402 Insufficient Balance disables the key", async () => {
      gateway.emulator.setFaults([{
        match: { path: "/deepseek/chat/completions", model: "deepseek-spent" },
        status: 402,
        body: {
          error: { message: "Insufficient Balance", type: "unknown_error", param: null, code: "invalid_request_error" }
        }
      }])
      const failed = await openai.chat.completions.create({
        model: "ds-spent",
        messages: [{ role: "user", content: "hi" }]
      }).catch((error: unknown) => error)
      gateway.emulator.clearFaults()
      ok(failed instanceof OpenAI.APIError, `an error, got ${failed}`)
      const keys = await gateway.query<{ enabled: boolean; disabled_reason: string | null }>(
        `SELECT k.enabled, k.disabled_reason FROM channel_keys k JOIN channels c ON c.id = k.channel_id
         WHERE c.name = 'deepseek-spent'`
      )
      strictEqual(keys.length, 1)
      strictEqual(keys[0].enabled, false)
      ok(keys[0].disabled_reason?.startsWith("quota"), `disabled as spent credit, got ${keys[0].disabled_reason}`)
      const rows = await nextRows(1)
      ok(rows.every((row) => row.cost === "0"), "a failed call costs nothing")
    })

    await t.step(
      "a deepseek channel without base_url gets https://api.deepseek.com (bootstrap and admin)",
      async () => {
        const root = browser(gateway.url)
        await root.login("root", ROOT_PASSWORD)
        const listed = await root.call<Array<{ name: string; type: string; base_url: string }>>("GET", "/api/channel/")
        strictEqual(
          listed.data.find((channel) => channel.name === "deepseek-default")?.base_url,
          "https://api.deepseek.com"
        )
        const created = await root.call<{ base_url: string }>("POST", "/api/channel/", {
          name: "deepseek-admin",
          type: "deepseek",
          keys: ["sk-test-upstream-admin-1"],
          models: ["ds-default"]
        })
        strictEqual(created.success, true, created.message)
        strictEqual(created.data.base_url, "https://api.deepseek.com")
        const refused = await root.call("POST", "/api/channel/", {
          name: "openai-nowhere",
          type: "openai",
          keys: ["sk-test-upstream-admin-2"],
          models: ["ds-default"]
        })
        strictEqual(refused.success, false)
        ok(refused.message.includes("base_url is missing"), refused.message)
      }
    )
  } finally {
    await gateway.close()
  }
})
