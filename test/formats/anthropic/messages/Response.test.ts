import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Response } from "../../../../src/canonical/Response.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { AnthropicFormat } from "../../../../src/formats/anthropic/messages/Format.ts"
import { toolUseMessage } from "./Fixtures.ts"

const meta = { id: "msg_gateway_1", model: "claude-alias", created: 1_700_000_000 }

const decoded = (body: unknown): Response => {
  const result = AnthropicFormat.decodeResponse(body)
  if (result instanceof UpstreamFailed) throw new Error(result.message)
  return result
}

Deno.test("decodeResponse reads thinking, redacted thinking, text and tool calls; skips server tool blocks", () => {
  deepStrictEqual(decoded(toolUseMessage), {
    id: "msg_01Aq9w938a90dw8q",
    model: "claude-sonnet-4-5-20250929",
    created: 0,
    content: [
      {
        type: "reasoning",
        text: "The user wants the weather.",
        signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve",
        origin: "anthropic"
      },
      {
        type: "reasoning",
        text: "",
        redacted: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        origin: "anthropic"
      },
      { type: "text", text: "I'll look that up." },
      {
        type: "tool-call",
        callId: "toolu_01A09q90qw90lq917835lq9",
        name: "get_weather",
        arguments: '{"location":"San Francisco, CA","unit":"celsius"}'
      }
    ],
    finishReason: "tool-calls",
    rawFinishReason: "tool_use",
    usage: {
      inputTokens: 3295,
      outputTokens: 503,
      cachedInputTokens: 1000,
      cacheCreationInputTokens: 200,
      reasoningTokens: 120
    }
  })
})

Deno.test("decodeResponse maps every stop reason and keeps the stop sequence", () => {
  const reasonOf = (stop_reason: string, stop_sequence: string | null = null) =>
    decoded({ ...toolUseMessage, content: [], stop_reason, stop_sequence })
  const stopped = reasonOf("stop_sequence", "###")
  deepStrictEqual([stopped.finishReason, stopped.rawFinishReason, stopped.stopSequence], [
    "stop",
    "stop_sequence",
    "###"
  ])
  deepStrictEqual(
    ["end_turn", "max_tokens", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded", "new_reason"].map(
      (reason) => reasonOf(reason).finishReason
    ),
    ["stop", "length", "tool-calls", "other", "content-filter", "length", "other"]
  )
})

Deno.test("decodeResponse fails with bad-body on a body that is not a message, and classifies error bodies", () => {
  const bad = AnthropicFormat.decodeResponse({ id: "x", content: "nope" })
  ok(bad instanceof UpstreamFailed)
  strictEqual(bad.kind, "bad-body")
  const broken = AnthropicFormat.decodeResponse({ ...toolUseMessage, content: [{ type: "text" }] })
  ok(broken instanceof UpstreamFailed)
  strictEqual(broken.kind, "bad-body")
  const overloaded = AnthropicFormat.decodeResponse({
    type: "error",
    error: { type: "overloaded_error", message: "Overloaded" }
  })
  ok(overloaded instanceof UpstreamFailed)
  deepStrictEqual([overloaded.kind, overloaded.message], ["server", "Overloaded"])
})

Deno.test("encodeResponse writes a Message with uncached input tokens and restored stop reasons", () => {
  const response = decoded(toolUseMessage)
  deepStrictEqual(AnthropicFormat.encodeResponse(response, meta), {
    id: "msg_gateway_1",
    type: "message",
    role: "assistant",
    model: "claude-alias",
    content: [
      {
        type: "thinking",
        thinking: "The user wants the weather.",
        signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve"
      },
      { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
      { type: "text", text: "I'll look that up." },
      {
        type: "tool_use",
        id: "toolu_01A09q90qw90lq917835lq9",
        name: "get_weather",
        input: { location: "San Francisco, CA", unit: "celsius" }
      }
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: {
      input_tokens: 2095,
      output_tokens: 503,
      cache_read_input_tokens: 1000,
      cache_creation_input_tokens: 200,
      output_tokens_details: { thinking_tokens: 120 }
    }
  })
})

Deno.test("encodeResponse maps canonical finish reasons to stop reasons", () => {
  const stopReason = (finishReason: Response["finishReason"], extra: Partial<Response> = {}) =>
    (AnthropicFormat.encodeResponse(
      {
        id: "r",
        model: "m",
        created: 0,
        content: [],
        finishReason,
        usage: { inputTokens: 1, outputTokens: 2 },
        ...extra
      },
      meta
    ) as { stop_reason: string }).stop_reason
  deepStrictEqual(
    (["stop", "length", "tool-calls", "content-filter", "other", "error"] as const).map((reason) => stopReason(reason)),
    ["end_turn", "max_tokens", "tool_use", "refusal", "end_turn", "end_turn"]
  )
  strictEqual(stopReason("stop", { stopSequence: "END" }), "stop_sequence")
  strictEqual(stopReason("stop", { rawFinishReason: "stop_sequence" }), "stop_sequence")
  strictEqual(stopReason("other", { rawFinishReason: "pause_turn" }), "pause_turn")
  strictEqual(
    stopReason("length", { rawFinishReason: "model_context_window_exceeded" }),
    "model_context_window_exceeded"
  )
  strictEqual(stopReason("stop", { rawFinishReason: "STOP" }), "end_turn")
})
