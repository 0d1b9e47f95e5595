/**
 * Wire fixtures shaped after the documented examples of the messages format
 * (docs.anthropic.com/en/api/messages, /en/docs/build-with-claude/tool-use,
 * /vision, /pdf-support, /extended-thinking, /streaming) and the SDK 1.12
 * types. Values are Sluice's own.
 */
import { sse } from "../../../support/StreamSteps.ts"

/** A Base64 PNG (1×1 pixel). */
export const PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

/** A multi-turn request with system blocks, parallel tool calls, tool results and thinking. */
export const toolConversation = {
  model: "claude-sonnet-4-5",
  max_tokens: 16000,
  system: [{ type: "text", text: "You are a weather bot." }, { type: "text", text: "Answer briefly." }],
  thinking: { type: "enabled", budget_tokens: 10000 },
  tools: [
    {
      name: "get_weather",
      description: "Get the current weather in a given location",
      input_schema: {
        type: "object",
        properties: { location: { type: "string", description: "The city and state, e.g. San Francisco, CA" } },
        required: ["location"]
      }
    },
    { type: "web_search_20250305", name: "web_search", max_uses: 5 }
  ],
  tool_choice: { type: "auto", disable_parallel_tool_use: false },
  messages: [
    { role: "user", content: "What's the weather like in San Francisco and New York?" },
    {
      role: "assistant",
      content: [
        {
          type: "thinking",
          thinking: "I need two lookups.",
          signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
        },
        { type: "text", text: "I'll check both cities." },
        {
          type: "tool_use",
          id: "toolu_01A09q90qw90lq917835lq9",
          name: "get_weather",
          input: { location: "San Francisco, CA" }
        },
        {
          type: "tool_use",
          id: "toolu_01B09q90qw90lq917835lq9",
          name: "get_weather",
          input: { location: "New York, NY" }
        }
      ]
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_01A09q90qw90lq917835lq9", content: "15 degrees" },
        {
          type: "tool_result",
          tool_use_id: "toolu_01B09q90qw90lq917835lq9",
          content: [{ type: "text", text: "Service unavailable" }],
          is_error: true
        },
        { type: "text", text: "Also, what should I wear?" }
      ]
    }
  ]
}

/** A non-stream answer with thinking, text and a tool call (documented `Message` example shape). */
export const toolUseMessage = {
  id: "msg_01Aq9w938a90dw8q",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [
    {
      type: "thinking",
      thinking: "The user wants the weather.",
      signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve"
    },
    { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
    { type: "text", text: "I'll look that up.", citations: null },
    {
      type: "server_tool_use",
      id: "srvtoolu_01",
      name: "web_search",
      input: { query: "weather" }
    },
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
}

/** A named SSE event carrying `data` (its `type` is the event name). */
export const event = (data: { readonly type: string } & Record<string, unknown>) => sse(data, data.type)

/** The documented basic text stream ("Hello!"), with cache usage in message_start. */
export const textStream = [
  event({
    type: "message_start",
    message: {
      id: "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-opus-4-6",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 25, output_tokens: 1, cache_read_input_tokens: 100, cache_creation_input_tokens: 0 }
    }
  }),
  event({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  event({ type: "ping" }),
  event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } }),
  event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "!" } }),
  event({ type: "content_block_stop", index: 0 }),
  event({
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 15 }
  }),
  event({ type: "message_stop" })
]

/** The documented thinking + tool-use stream shape: thinking with signature, then a tool call in JSON pieces. */
export const thinkingToolStream = [
  event({
    type: "message_start",
    message: {
      id: "msg_01thinking",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-sonnet-4-5",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 472, output_tokens: 2 }
    }
  }),
  event({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
  event({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Let me look up " } }),
  event({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "the weather." } }),
  event({
    type: "content_block_delta",
    index: 0,
    delta: { type: "signature_delta", signature: "EqQBCgIYAhIM1gbcDa9G" }
  }),
  event({ type: "content_block_stop", index: 0 }),
  event({
    type: "content_block_start",
    index: 1,
    content_block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }
  }),
  event({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"query":1}' } }),
  event({ type: "content_block_stop", index: 1 }),
  event({
    type: "content_block_start",
    index: 2,
    content_block: { type: "tool_use", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather", input: {} }
  }),
  event({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "" } }),
  event({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"location":' } }),
  event({
    type: "content_block_delta",
    index: 2,
    delta: { type: "input_json_delta", partial_json: ' "San Francisco, CA"}' }
  }),
  event({ type: "content_block_stop", index: 2 }),
  event({
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: {
      output_tokens: 89,
      input_tokens: 472,
      cache_read_input_tokens: 0,
      output_tokens_details: { thinking_tokens: 30 }
    }
  }),
  event({ type: "message_stop" })
]
