/**
 * DeepSeek's dialect of chat completions (`src/formats/deepseek/chat/`), with
 * plain values: a translated request carries reasoning back on tool-call turns
 * only (`""` when the turn has none), its cap in `max_tokens`, `developer` as
 * `system`, and reasoning on or off through `thinking`; a passthrough body gets
 * the same; a same-format answer shows DeepSeek's cache hits as OpenAI's
 * `prompt_tokens_details.cached_tokens` too; the FIM wire is legacy completions
 * with DeepSeek's errors.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Request } from "../../../../src/canonical/Request.ts"
import { deepseekChatBody, DeepSeekChatFormat } from "../../../../src/formats/deepseek/chat/Format.ts"
import { answerWithOpenAiUsage, eventWithOpenAiUsage } from "../../../../src/formats/openai/shared/CacheHitUsage.ts"
import { DeepSeekCompletionsFormat } from "../../../../src/formats/deepseek/completions/Format.ts"
import { OpenAiChatFormat } from "../../../../src/formats/openai/chat/Format.ts"
import { adapters, wireOf } from "../../../../src/upstreams/Adapter.ts"

const toolLoop: Request = {
  model: "deepseek-reasoner",
  messages: [
    { role: "system", developer: true, content: [{ type: "text", text: "Be brief." }] },
    { role: "user", content: [{ type: "text", text: "weather?" }] },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "I should call the tool.", signature: "sig-x", origin: "anthropic" },
        { type: "tool-call", callId: "c1", name: "w", arguments: "{}" }
      ]
    },
    { role: "tool", content: [{ type: "tool-result", callId: "c1", content: [{ type: "text", text: "21" }] }] },
    {
      role: "assistant",
      content: [{ type: "reasoning", text: "Now answer." }, { type: "text", text: "It is 21." }]
    },
    { role: "user", content: [{ type: "text", text: "and tomorrow?" }] },
    { role: "assistant", content: [{ type: "tool-call", callId: "c2", name: "w", arguments: "{}" }] },
    { role: "tool", content: [{ type: "tool-result", callId: "c2", content: [{ type: "text", text: "19" }] }] }
  ],
  maxOutputTokens: 512,
  stream: false
}

Deno.test("deepseek encodeRequest: reasoning_content on tool-call turns only, max_tokens, system for developer", () => {
  const { body, dropped } = DeepSeekChatFormat.encodeRequest(toolLoop)
  const messages = body.messages as ReadonlyArray<Record<string, unknown>>
  deepStrictEqual(messages.map((message) => message.role), [
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "user",
    "assistant",
    "tool"
  ])
  strictEqual(messages[2].reasoning_content, "I should call the tool.")
  strictEqual("reasoning_content" in messages[4], false, "a turn without tool calls carries none (DeepSeek ignores it)")
  strictEqual(messages[6].reasoning_content, "", "a tool turn without reasoning still carries the field")
  strictEqual(body.max_tokens, 512)
  strictEqual("max_completion_tokens" in body, false)
  deepStrictEqual([...dropped].sort(), ["messages.reasoning", "messages.reasoning.signature"])
  // The plain chat encoder sends none of it.
  const plain = OpenAiChatFormat.encodeRequest(toolLoop).body
  strictEqual("reasoning_content" in (plain.messages as ReadonlyArray<Record<string, unknown>>)[2], false)
  strictEqual((plain.messages as ReadonlyArray<Record<string, unknown>>)[0].role, "developer")
})

Deno.test("deepseek encodeRequest: reasoning switched by thinking; nothing asked sends neither", () => {
  const base: Request = { model: "deepseek-chat", messages: [{ role: "user", content: [] }], stream: false }
  const body = (reasoning: Request["reasoning"]) => DeepSeekChatFormat.encodeRequest({ ...base, reasoning }).body
  deepStrictEqual(body({ effort: "high" }).thinking, { type: "enabled" })
  strictEqual(body({ effort: "high" }).reasoning_effort, "high")
  deepStrictEqual(body({ budgetTokens: 2048 }).thinking, { type: "enabled" })
  strictEqual(body({ budgetTokens: 2048 }).reasoning_effort, "medium")
  deepStrictEqual(body({ enabled: false }).thinking, { type: "disabled" })
  strictEqual("reasoning_effort" in body({ enabled: false }), false)
  deepStrictEqual(body({ effort: "none" }).thinking, { type: "disabled" })
  strictEqual("reasoning_effort" in body({ effort: "none" }), false)
  deepStrictEqual(body({ enabled: true }).thinking, { type: "enabled" }, "a dynamic budget (Gemini's -1)")
  strictEqual("reasoning_effort" in body({ enabled: true }), false)
  strictEqual("thinking" in body(undefined), false)
  strictEqual("reasoning_effort" in body(undefined), false)
  deepStrictEqual(DeepSeekChatFormat.encodeRequest({ ...base, reasoning: { enabled: false } }).dropped, [])
})

Deno.test("deepseek passthrough: the cap in max_tokens, developer as system, everything else as sent", () => {
  const raw = {
    model: "ds",
    messages: [{ role: "developer", content: "Be brief." }, { role: "user", content: "hi" }],
    max_completion_tokens: 99,
    thinking: { type: "enabled" },
    user: "u-1"
  }
  const body = DeepSeekChatFormat.passthrough.body(raw, { model: "deepseek-reasoner", stream: false, outputCap: 4096 })
  deepStrictEqual(body, {
    model: "deepseek-reasoner",
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
    max_tokens: 99,
    thinking: { type: "enabled" },
    user: "u-1"
  })
  // The held cap, when the caller named none, goes in max_tokens too.
  strictEqual(
    DeepSeekChatFormat.passthrough.body({ model: "ds", messages: [] }, { model: "d", stream: true, outputCap: 8 })
      .max_tokens,
    8
  )
  // A caller's own max_tokens wins.
  deepStrictEqual(deepseekChatBody({ max_tokens: 5, max_completion_tokens: 7, messages: [] }), {
    max_tokens: 5,
    messages: []
  })
})

Deno.test("deepseek answers: cache hits shown as prompt_tokens_details.cached_tokens, DeepSeek's fields kept", () => {
  const usage = { prompt_tokens: 10, completion_tokens: 2, prompt_cache_hit_tokens: 6, prompt_cache_miss_tokens: 4 }
  deepStrictEqual(answerWithOpenAiUsage({ id: "x", usage }), {
    id: "x",
    usage: { ...usage, prompt_tokens_details: { cached_tokens: 6 } }
  })
  strictEqual(
    answerWithOpenAiUsage({ id: "x", usage: { ...usage, prompt_tokens_details: { cached_tokens: 6 } } }),
    undefined
  )
  strictEqual(answerWithOpenAiUsage({ id: "x", usage: { prompt_tokens: 1 } }), undefined)
  const event = {
    _tag: "Event" as const,
    event: "message",
    id: undefined,
    data: JSON.stringify({ choices: [], usage })
  }
  deepStrictEqual(JSON.parse(eventWithOpenAiUsage(event)!.data).usage.prompt_tokens_details, { cached_tokens: 6 })
  strictEqual(eventWithOpenAiUsage({ ...event, data: '{"choices":[{"delta":{"content":"hi"}}]}' }), undefined)
  strictEqual(eventWithOpenAiUsage({ ...event, data: "[DONE]" }), undefined)
})

Deno.test("deepseek channels: chat and FIM dialects by wire; errors with 402 as spent credit", () => {
  strictEqual(wireOf("deepseek", "openai-chat"), DeepSeekChatFormat)
  strictEqual(wireOf("deepseek", "completions"), DeepSeekCompletionsFormat)
  strictEqual(wireOf("openai", "openai-chat").encodeRequest, OpenAiChatFormat.encodeRequest)
  for (const inbound of ["openai-chat", "openai-responses", "anthropic", "gemini"] as const) {
    strictEqual(
      adapters.deepseek.wireFormat(inbound, { type: "deepseek", baseUrl: "x", settings: {} }, "deepseek-chat"),
      "openai-chat"
    )
  }
  strictEqual(
    adapters.deepseek.wireFormat("completions", { type: "deepseek", baseUrl: "x", settings: {} }, "deepseek-chat"),
    "completions"
  )
  strictEqual(
    DeepSeekCompletionsFormat.classifyError(402, '{"error":{"message":"Insufficient Balance"}}').kind,
    "quota"
  )
  strictEqual(DeepSeekChatFormat.classifyError(402, '{"error":{"message":"Insufficient Balance"}}').kind, "quota")
})
