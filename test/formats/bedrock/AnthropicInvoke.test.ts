/**
 * Claude through InvokeModel (`src/formats/bedrock/invoke/AnthropicInvoke.ts`) and the bedrock adapter's choice of
 * wire and credential, with plain values: the Messages body as Bedrock takes it (passthrough and translated), the
 * `chunk` events of its stream read as Messages events, and the keys (SigV4, Bearer, neither).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Sse } from "effect/encoding"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { AnthropicInvokeFormat, invokeBody } from "../../../src/formats/bedrock/invoke/AnthropicInvoke.ts"
import { adapters, type Channel, wireOf } from "../../../src/upstreams/Adapter.ts"

const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"

const chunk = (payload: Record<string, unknown>): Sse.Event => ({
  _tag: "Event",
  event: "chunk",
  id: undefined,
  data: JSON.stringify({ bytes: btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(payload)))) })
})

Deno.test("invoke body: no model, no stream, anthropic_version, the anthropic-beta header as anthropic_beta", () => {
  const body = AnthropicInvokeFormat.passthrough.body(
    {
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
      metadata: { user_id: "u-1" },
      anthropic_beta: ["context-1m-2025-08-07"]
    },
    {
      model: CLAUDE,
      stream: true,
      outputCap: undefined,
      headers: { "anthropic-beta": "interleaved-thinking-2025-05-14, context-1m-2025-08-07" }
    }
  )
  deepStrictEqual(body, {
    anthropic_version: "bedrock-2023-05-31",
    max_tokens: 1024,
    messages: [{ role: "user", content: "Hi" }],
    metadata: { user_id: "u-1" },
    anthropic_beta: ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"]
  })
  deepStrictEqual(invokeBody({ model: "m", max_tokens: 1 }), { anthropic_version: "bedrock-2023-05-31", max_tokens: 1 })
  const translated = AnthropicInvokeFormat.encodeRequest({
    model: CLAUDE,
    stream: true,
    maxOutputTokens: 64,
    messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }]
  }).body
  strictEqual(translated.anthropic_version, "bedrock-2023-05-31")
  strictEqual("model" in translated || "stream" in translated, false)
})

Deno.test("invoke stream: chunk events decoded as Messages events, shown to a Messages caller as SSE", () => {
  const decoder = AnthropicInvokeFormat.streamDecoder
  const events = [
    chunk({
      type: "message_start",
      message: {
        id: "msg_bdrk_1",
        type: "message",
        role: "assistant",
        model: CLAUDE,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 }
      }
    }),
    chunk({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    chunk({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } }),
    chunk({ type: "content_block_stop", index: 0 }),
    chunk({
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 5 }
    }),
    chunk({ type: "message_stop", "amazon-bedrock-invocationMetrics": { inputTokenCount: 10, outputTokenCount: 5 } })
  ]
  let state = decoder.initial()
  const tags: Array<string> = []
  for (const event of events) {
    const step = decoder.step(state, event)
    if (step instanceof UpstreamFailed) throw step
    state = step[0]
    tags.push(...step[1].map((part) => part._tag))
  }
  strictEqual(decoder.complete(state), true)
  const finish = decoder.flush(state).find((part) => part._tag === "Finish")
  deepStrictEqual(finish?._tag === "Finish" && finish.usage, {
    inputTokens: 130,
    outputTokens: 5,
    cachedInputTokens: 100,
    cacheCreationInputTokens: 20
  })
  strictEqual(tags.includes("TextDelta"), true)
  const shown = AnthropicInvokeFormat.passthrough.event?.(events[2])
  deepStrictEqual(shown, {
    _tag: "Event",
    event: "content_block_delta",
    id: undefined,
    data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}'
  })
  const thrown = decoder.step(state, { _tag: "Event", event: "modelStreamErrorException", id: undefined, data: "{}" })
  strictEqual(thrown instanceof UpstreamFailed && thrown.kind, "server")
  const broken = decoder.step(decoder.initial(), {
    _tag: "Event",
    event: "chunk",
    id: undefined,
    data: '{"bytes":"%%"}'
  })
  strictEqual(broken instanceof UpstreamFailed && broken.kind, "bad-body")
})

const channel = (settings: Channel["settings"]): Channel => ({
  type: "bedrock",
  baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com",
  settings: { region: "us-east-1", ...settings }
})

Deno.test("bedrock adapter: Converse unless invoke is asked for and the model is Anthropic's", () => {
  const wire = (settings: Channel["settings"], model: string) =>
    adapters.bedrock.wireFormat("openai-chat", channel(settings), model)
  strictEqual(wire({}, CLAUDE), "bedrock-converse")
  strictEqual(wire({ bedrock_api: "invoke" }, `us.${CLAUDE}`), "anthropic")
  strictEqual(wire({ bedrock_api: "invoke" }, "amazon.nova-lite-v1:0"), "bedrock-converse")
  strictEqual(wireOf("bedrock", "anthropic"), AnthropicInvokeFormat)
  strictEqual(wireOf("bedrock", "bedrock-converse").name, "bedrock-converse")
})

Deno.test("bedrock adapter: AWS keys sign with SigV4, a key without | is a Bearer API key, any other key sends nothing", () => {
  const target = (key: string) => adapters.bedrock.target(channel({}), key, "bedrock-converse", CLAUDE, true)
  const signed = target("AKIDEXAMPLE|wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY|session-token-example")
  deepStrictEqual(signed.signing, {
    _tag: "SigV4",
    region: "us-east-1",
    service: "bedrock",
    credentials: {
      accessKeyId: "AKIDEXAMPLE",
      secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
      sessionToken: "session-token-example"
    }
  })
  strictEqual(signed.headers.authorization, undefined)
  strictEqual(signed.headers.accept, "application/vnd.amazon.eventstream")
  const bearer = target("sk-test-bedrock-api-key")
  strictEqual(bearer.headers.authorization, "Bearer sk-test-bedrock-api-key")
  strictEqual(bearer.signing, undefined)
  for (const bad of ["AKIDEXAMPLE||secret-part", "AKIDEXAMPLE|s1|s2|s3", "|secret-part"]) {
    const neither = target(bad)
    strictEqual(neither.signing, undefined, bad)
    strictEqual(neither.headers.authorization, undefined, bad)
    const sent = JSON.stringify(neither)
    strictEqual(sent.includes("AKIDEXAMPLE") || sent.includes("secret-part") || sent.includes("s2"), false, bad)
  }
})
