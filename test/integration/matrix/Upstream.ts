/**
 * What each upstream channel type must have received for each matrix case,
 * checked on the emulator's recorded request, in that upstream's own wire
 * format: chat completions `messages` (role `tool`, `image_url`,
 * `reasoning_effort`), Messages (`system` top level, `max_tokens`, `tool_result`
 * blocks, base64 `image` blocks, `thinking`), generate-content (`contents`,
 * `systemInstruction`, `functionResponse`, `inlineData`, `thinkingConfig`),
 * DeepSeek's chat (at `/chat/completions` under the channel's path prefix, its
 * cap in `max_tokens`, no `developer` role, a translated tool turn carrying
 * `reasoning_content`) and its FIM completion under `/beta`; Azure's chat and
 * completions at a dated deployment path under `/azure`, with `api-key`; Vertex AI's
 * generate-content (`vertex`: `…/publishers/google/models/{model}:generateContent`
 * under the project and location, a Bearer token, every content with a role)
 * and Claude on Vertex (`vertex-claude`: `…/publishers/anthropic/models/{model}:rawPredict`,
 * the Messages body without `model`, with `anthropic_version`); Bedrock's Converse (`bedrock`, under `/bedrock`, the
 * mapped model id in the path, SigV4-signed: `system` blocks, `inferenceConfig`, `toolConfig`, `toolUse` /
 * `toolResult` blocks, `image` bytes, Claude's `thinking` in `additionalModelRequestFields`) and Bedrock's
 * InvokeModel for Claude (`bedrock-invoke`, `bedrock_api: invoke`, a Bearer API key: the Messages body with
 * `anthropic_version` and no `model` or `stream`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { BEDROCK_TEST_API_KEY, BEDROCK_TEST_CHANNEL_KEY } from "../../../emulator/BedrockAuth.ts"
import type { RecordedRequest } from "../../../emulator/Emulator.ts"
import { type Case, IMAGE_TEXT, type InboundName, PLAIN_TEXT, SYSTEM, WEATHER_TOOL } from "./Inbound.ts"

/** The upstream channel types of the matrix. */
export type UpstreamName =
  | "openai"
  | "anthropic"
  | "gemini"
  | "deepseek"
  | "azure"
  | "vertex"
  | "vertex-claude"
  | "bedrock"
  | "bedrock-invoke"

/** The model each channel serves (a vertex channel serves a model whose id starts with `claude` through Claude's wire). */
export const MODEL_OF: Record<UpstreamName, string> = {
  openai: "m-openai",
  anthropic: "m-anthropic",
  gemini: "m-gemini",
  deepseek: "m-deepseek",
  azure: "m-azure",
  vertex: "m-vertex",
  "vertex-claude": "claude-m-vertex",
  bedrock: "m-bedrock",
  "bedrock-invoke": "m-bedrock-invoke"
}

/** The Bedrock model ids the bedrock columns map their models to (Claude, so both APIs and reasoning apply). */
export const BEDROCK_MODEL_OF: Readonly<Partial<Record<UpstreamName, string>>> = {
  bedrock: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
  "bedrock-invoke": "anthropic.claude-sonnet-4-5-20250929-v1:0"
}

/**
 * What a column's channel has besides its type's defaults: the bedrock columns are `type: bedrock` channels (one with
 * `bedrock_api: invoke`) with the emulator's test credentials (AWS keys signed with SigV4, or its API key) and a
 * model mapping.
 */
export const CHANNEL_OF: Readonly<Partial<Record<UpstreamName, Record<string, unknown>>>> = {
  bedrock: {
    type: "bedrock",
    keys: [BEDROCK_TEST_CHANNEL_KEY],
    model_mapping: { [MODEL_OF.bedrock]: BEDROCK_MODEL_OF.bedrock },
    settings: { region: "us-east-1" }
  },
  "bedrock-invoke": {
    type: "bedrock",
    keys: [BEDROCK_TEST_API_KEY],
    model_mapping: { [MODEL_OF["bedrock-invoke"]]: BEDROCK_MODEL_OF["bedrock-invoke"] },
    settings: { region: "us-east-1", bedrock_api: "invoke" }
  }
}

/** The path prefix a channel's `base_url` has (the emulator serves DeepSeek under `/deepseek`, Azure under `/azure`,
 * Vertex AI under `/vertex`). */
export const PATH_OF: Record<UpstreamName, string> = {
  openai: "",
  anthropic: "",
  gemini: "",
  deepseek: "/deepseek",
  azure: "/azure",
  vertex: "/vertex",
  "vertex-claude": "/vertex",
  bedrock: "/bedrock",
  "bedrock-invoke": "/bedrock"
}

/**
 * The wire an upstream column speaks (the vertex columns speak generate-content and Messages; `bedrock` Converse,
 * `bedrock-invoke` Messages).
 */
const wireOf = (upstream: UpstreamName): "openai" | "deepseek" | "azure" | "anthropic" | "gemini" | "bedrock" =>
  upstream === "vertex"
    ? "gemini"
    : upstream === "vertex-claude" || upstream === "bedrock-invoke"
    ? "anthropic"
    : upstream

/** The project the emulator's Vertex AI serves, and the location the matrix's vertex channels call. */
const VERTEX_PLACE = "/vertex/v1/projects/sluice-test-project/locations/us-central1"

type Json = Record<string, unknown>

const asObject = (value: unknown): Json =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Json : {}
const asArray = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []
const objects = (value: unknown): ReadonlyArray<Json> => asArray(value).map(asObject)

/** Everything a content value holds, as text (string content or text parts). */
const textOfContent = (content: unknown): string =>
  typeof content === "string"
    ? content
    : objects(content).map((part) => typeof part.text === "string" ? part.text : "").join("")

/** The facts of one call a check needs. */
export interface UpstreamCall {
  readonly inbound: InboundName
  readonly upstream: UpstreamName
  readonly stream: boolean
  readonly testCase: Case
  /** The recorded requests of this cell (one, or two for a tool round trip), oldest first. */
  readonly recorded: ReadonlyArray<RecordedRequest>
}

const checkRoute = (call: UpstreamCall, request: RecordedRequest) => {
  const model = MODEL_OF[call.upstream]
  const body = asObject(request.body)
  switch (call.upstream) {
    case "vertex":
      strictEqual(
        request.path,
        `${VERTEX_PLACE}/publishers/google/models/${model}:${
          call.stream ? "streamGenerateContent" : "generateContent"
        }`,
        "vertex upstream path"
      )
      if (call.stream) strictEqual(request.query.alt, "sse", "vertex upstream alt=sse")
      ok(request.headers["authorization"]?.startsWith("Bearer ya29."), "a Google access token upstream")
      ok(objects(body.contents).every((content) => content.role === "user" || content.role === "model"), "roles")
      return
    case "vertex-claude":
      strictEqual(
        request.path,
        `${VERTEX_PLACE}/publishers/anthropic/models/${model}:${call.stream ? "streamRawPredict" : "rawPredict"}`,
        "vertex claude upstream path"
      )
      strictEqual("model" in body, false, "no model in a rawPredict body")
      strictEqual(body.anthropic_version, "vertex-2023-10-16")
      strictEqual(body.stream === true, call.stream, "vertex claude upstream stream flag")
      ok(typeof body.max_tokens === "number" && body.max_tokens > 0, "max_tokens")
      ok(request.headers["authorization"]?.startsWith("Bearer ya29."), "a Google access token upstream")
      strictEqual(request.headers["x-api-key"], undefined, "no Anthropic key header")
      return
    case "openai": {
      const path = call.inbound === "completions" ? "/v1/completions" : "/v1/chat/completions"
      strictEqual(request.path, path, "openai upstream path")
      strictEqual(body.model, model)
      strictEqual(body.stream === true, call.stream, "openai upstream stream flag")
      if (call.stream) strictEqual(asObject(body.stream_options).include_usage, true, "stream_options.include_usage")
      ok(request.headers["authorization"]?.startsWith("Bearer "), "bearer key upstream")
      return
    }
    case "deepseek": {
      const path = call.inbound === "completions" ? "/deepseek/beta/completions" : "/deepseek/chat/completions"
      strictEqual(request.path, path, "deepseek upstream path, under the base URL's prefix")
      strictEqual(body.model, model)
      strictEqual(body.stream === true, call.stream, "deepseek upstream stream flag")
      if (call.stream) strictEqual(asObject(body.stream_options).include_usage, true, "stream_options.include_usage")
      ok(request.headers["authorization"]?.startsWith("Bearer "), "bearer key upstream")
      strictEqual("max_completion_tokens" in body, false, "DeepSeek's cap is max_tokens")
      ok(objects(body.messages).every((message) => message.role !== "developer"), "no developer role at DeepSeek")
      return
    }
    case "azure": {
      // A dated channel (the default api-version): the deployment (the model, unmapped) in the path, `api-key`.
      const operation = call.inbound === "completions" ? "completions" : "chat/completions"
      strictEqual(request.path, `/azure/openai/deployments/${model}/${operation}`, "azure deployment path")
      strictEqual(request.query["api-version"], "2024-10-21", "azure api-version")
      strictEqual(body.stream === true, call.stream, "azure upstream stream flag")
      if (call.stream) strictEqual(asObject(body.stream_options).include_usage, true, "stream_options.include_usage")
      strictEqual(request.headers["api-key"], "upstream-key-azure", "azure api-key header")
      strictEqual(request.headers["authorization"], undefined, "no authorization header at Azure")
      return
    }
    case "bedrock": {
      const action = call.stream ? "converse-stream" : "converse"
      strictEqual(request.path, `/bedrock/model/${encodeURIComponent(BEDROCK_MODEL_OF.bedrock!)}/${action}`)
      ok(request.headers["authorization"]?.startsWith("AWS4-HMAC-SHA256 "), "SigV4-signed")
      strictEqual("model" in body || "stream" in body, false, "the model and the operation are the path's")
      ok(Array.isArray(body.messages), "converse messages")
      return
    }
    case "bedrock-invoke": {
      const action = call.stream ? "invoke-with-response-stream" : "invoke"
      strictEqual(request.path, `/bedrock/model/${encodeURIComponent(BEDROCK_MODEL_OF["bedrock-invoke"]!)}/${action}`)
      strictEqual(request.headers["authorization"], `Bearer ${BEDROCK_TEST_API_KEY}`, "Bedrock API key as Bearer")
      strictEqual(body.anthropic_version, "bedrock-2023-05-31")
      strictEqual("model" in body || "stream" in body, false, "the model and the operation are the path's")
      ok(typeof body.max_tokens === "number" && body.max_tokens > 0, "invoke max_tokens")
      return
    }
    case "anthropic":
      strictEqual(request.path, "/v1/messages", "anthropic upstream path")
      strictEqual(body.model, model)
      strictEqual(body.stream === true, call.stream, "anthropic upstream stream flag")
      ok(typeof body.max_tokens === "number" && body.max_tokens > 0, "anthropic upstream max_tokens")
      ok(request.headers["anthropic-version"] !== undefined, "anthropic-version header")
      ok(request.headers["x-api-key"] !== undefined, "x-api-key header")
      ok(Array.isArray(body.messages), "anthropic upstream messages")
      return
    case "gemini":
      strictEqual(
        request.path,
        `/v1beta/models/${model}:${call.stream ? "streamGenerateContent" : "generateContent"}`,
        "gemini upstream path"
      )
      if (call.stream) strictEqual(request.query.alt, "sse", "gemini upstream alt=sse")
      ok(request.headers["x-goog-api-key"] !== undefined, "x-goog-api-key header")
      ok(Array.isArray(body.contents), "gemini upstream contents")
      return
  }
}

const checkPlain = (call: UpstreamCall, body: Json) => {
  switch (wireOf(call.upstream)) {
    case "openai":
    case "deepseek":
    case "azure": {
      if (call.inbound === "completions") {
        const prompt = Array.isArray(body.prompt) ? body.prompt.join("") : body.prompt
        strictEqual(prompt, PLAIN_TEXT)
        return
      }
      const messages = objects(body.messages)
      ok(["system", "developer"].includes(String(messages[0]?.role)), "openai upstream: system message first")
      strictEqual(textOfContent(messages[0].content), SYSTEM)
      strictEqual(messages.at(-1)?.role, "user")
      strictEqual(textOfContent(messages.at(-1)?.content), PLAIN_TEXT)
      return
    }
    case "bedrock": {
      const messages = objects(body.messages)
      if (call.inbound !== "completions") strictEqual(textOfContent(body.system), SYSTEM, "converse system blocks")
      strictEqual(messages.at(-1)?.role, "user")
      strictEqual(textOfContent(messages.at(-1)?.content), PLAIN_TEXT)
      return
    }
    case "anthropic": {
      const messages = objects(body.messages)
      if (call.inbound !== "completions") strictEqual(textOfContent(body.system), SYSTEM, "anthropic top-level system")
      ok(messages.every((message) => message.role !== "system"), "no system role inside anthropic messages")
      strictEqual(messages.at(-1)?.role, "user")
      strictEqual(textOfContent(messages.at(-1)?.content), PLAIN_TEXT)
      return
    }
    case "gemini": {
      if (call.inbound !== "completions") {
        strictEqual(textOfContent(asObject(body.systemInstruction).parts), SYSTEM, "gemini systemInstruction")
      }
      const contents = objects(body.contents)
      strictEqual(contents.at(-1)?.role, "user")
      strictEqual(textOfContent(contents.at(-1)?.parts), PLAIN_TEXT)
      return
    }
  }
}

const checkImage = (call: UpstreamCall, body: Json) => {
  switch (wireOf(call.upstream)) {
    case "openai":
    case "deepseek":
    case "azure": {
      const parts = objects(objects(body.messages).at(-1)?.content)
      const image = parts.find((part) => part.type === "image_url")
      ok(image !== undefined, "openai upstream image_url part")
      ok(String(asObject(image.image_url).url).startsWith("data:image/png;base64,"), "openai upstream data URI")
      ok(parts.some((part) => part.text === IMAGE_TEXT))
      return
    }
    case "bedrock": {
      const blocks = objects(objects(body.messages).at(-1)?.content)
      const image = asObject(blocks.find((block) => block.image !== undefined)?.image)
      strictEqual(image.format, "png", "converse image block")
      ok(typeof asObject(image.source).bytes === "string", "converse image bytes")
      ok(blocks.some((block) => block.text === IMAGE_TEXT))
      return
    }
    case "anthropic": {
      const blocks = objects(objects(body.messages).at(-1)?.content)
      const image = blocks.find((block) => block.type === "image")
      ok(image !== undefined, "anthropic upstream image block")
      deepStrictEqual(
        { type: asObject(image.source).type, media_type: asObject(image.source).media_type },
        { type: "base64", media_type: "image/png" }
      )
      ok(blocks.some((block) => block.type === "text" && block.text === IMAGE_TEXT))
      return
    }
    case "gemini": {
      const parts = objects(objects(body.contents).at(-1)?.parts)
      const image = parts.find((part) => part.inlineData !== undefined)
      ok(image !== undefined, "gemini upstream inlineData part")
      strictEqual(asObject(image.inlineData).mimeType, "image/png")
      ok(parts.some((part) => part.text === IMAGE_TEXT))
      return
    }
  }
}

const checkReasoning = (call: UpstreamCall, body: Json) => {
  switch (wireOf(call.upstream)) {
    case "openai":
    case "azure":
      ok(typeof body.reasoning_effort === "string" && body.reasoning_effort !== "none", "openai reasoning_effort")
      return
    case "deepseek":
      ok(typeof body.reasoning_effort === "string" && body.reasoning_effort !== "none", "deepseek reasoning_effort")
      // A translated request switches thinking on (DeepSeek's toggle); a chat caller's body is its own.
      if (call.inbound !== "chat") deepStrictEqual(body.thinking, { type: "enabled" }, "deepseek thinking enabled")
      return
    case "bedrock": {
      const thinking = asObject(asObject(body.additionalModelRequestFields).thinking)
      ok(thinking.type === "enabled" || thinking.type === "adaptive", "converse: Claude's thinking enabled")
      if (thinking.type === "enabled") {
        ok(
          typeof thinking.budget_tokens === "number" &&
            (asObject(body.inferenceConfig).maxTokens as number) > thinking.budget_tokens,
          "converse maxTokens above budget_tokens"
        )
      }
      return
    }
    case "anthropic": {
      const thinking = asObject(body.thinking)
      ok(thinking.type === "enabled" || thinking.type === "adaptive", "anthropic thinking enabled")
      if (thinking.type === "enabled") {
        ok(
          typeof thinking.budget_tokens === "number" && (body.max_tokens as number) > thinking.budget_tokens,
          "anthropic max_tokens above budget_tokens"
        )
      }
      return
    }
    case "gemini": {
      const thinking = asObject(asObject(body.generationConfig).thinkingConfig)
      strictEqual(thinking.includeThoughts, true, "gemini thinkingConfig.includeThoughts (reasoning text asked)")
      return
    }
  }
}

const checkToolDeclared = (call: UpstreamCall, body: Json) => {
  switch (wireOf(call.upstream)) {
    case "openai":
    case "deepseek":
    case "azure": {
      const tool = objects(body.tools)[0]
      strictEqual(asObject(tool?.function).name, WEATHER_TOOL.name, "openai upstream function tool")
      return
    }
    case "bedrock": {
      const spec = asObject(objects(asObject(body.toolConfig).tools)[0]?.toolSpec)
      strictEqual(spec.name, WEATHER_TOOL.name, "converse toolSpec")
      ok(asObject(spec.inputSchema).json !== undefined, "converse inputSchema.json")
      return
    }
    case "anthropic": {
      const tool = objects(body.tools)[0]
      strictEqual(tool?.name, WEATHER_TOOL.name, "anthropic upstream tool")
      ok(tool.input_schema !== undefined, "anthropic upstream input_schema")
      return
    }
    case "gemini": {
      const declaration = objects(objects(body.tools)[0]?.functionDeclarations)[0]
      strictEqual(declaration?.name, WEATHER_TOOL.name, "gemini upstream functionDeclarations")
      return
    }
  }
}

const checkToolResult = (call: UpstreamCall, body: Json) => {
  switch (wireOf(call.upstream)) {
    case "openai":
    case "deepseek":
    case "azure": {
      const messages = objects(body.messages)
      const assistant = messages.find((message) => message.role === "assistant")
      const callId = asObject(objects(assistant?.tool_calls)[0]).id
      ok(typeof callId === "string" && callId.length > 0, "openai upstream assistant tool_calls")
      if (call.upstream === "deepseek" && call.inbound !== "chat") {
        strictEqual(typeof assistant?.reasoning_content, "string", "a translated tool turn carries reasoning_content")
      }
      const result = messages.at(-1)
      strictEqual(result?.role, "tool", "openai upstream role tool")
      strictEqual(result.tool_call_id, callId, "tool_call_id pairs with the call")
      ok(textOfContent(result.content).includes("21"), "openai upstream tool result content")
      return
    }
    case "bedrock": {
      const messages = objects(body.messages)
      const assistant = messages.find((message) => message.role === "assistant")
      const use = asObject(objects(assistant?.content).find((block) => block.toolUse !== undefined)?.toolUse)
      strictEqual(use.name, WEATHER_TOOL.name, "converse toolUse block")
      const last = messages.at(-1)
      strictEqual(last?.role, "user")
      const result = asObject(objects(last.content).find((block) => block.toolResult !== undefined)?.toolResult)
      strictEqual(result.toolUseId, use.toolUseId, "toolUseId pairs with the call")
      ok(textOfContent(result.content).includes("21"), "converse toolResult content")
      return
    }
    case "anthropic": {
      const messages = objects(body.messages)
      const assistant = messages.find((message) => message.role === "assistant")
      const use = objects(assistant?.content).find((block) => block.type === "tool_use")
      ok(use !== undefined && use.name === WEATHER_TOOL.name, "anthropic upstream tool_use block")
      const last = messages.at(-1)
      strictEqual(last?.role, "user")
      const result = objects(last.content).find((block) => block.type === "tool_result")
      ok(result !== undefined, "anthropic upstream tool_result block")
      strictEqual(result.tool_use_id, use.id, "tool_use_id pairs with the call")
      ok(textOfContent(result.content).includes("21"), "anthropic upstream tool_result content")
      return
    }
    case "gemini": {
      const contents = objects(body.contents)
      const model = contents.find((content) => content.role === "model")
      const functionCall = objects(model?.parts).find((part) => part.functionCall !== undefined)
      strictEqual(asObject(functionCall?.functionCall).name, WEATHER_TOOL.name, "gemini upstream functionCall")
      const last = contents.at(-1)
      strictEqual(last?.role, "user")
      const response = objects(last.parts).find((part) => part.functionResponse !== undefined)
      ok(response !== undefined, "gemini upstream functionResponse part")
      strictEqual(asObject(response.functionResponse).name, WEATHER_TOOL.name, "functionResponse name")
      ok(JSON.stringify(asObject(response.functionResponse).response).includes("21"), "functionResponse.response")
      return
    }
  }
}

/** Checks what the emulator received for one cell. */
export const checkUpstream = (call: UpstreamCall): void => {
  const last = call.recorded.at(-1)
  ok(last !== undefined, "the emulator received a request")
  for (const request of call.recorded) checkRoute(call, request)
  const body = asObject(last.body)
  switch (call.testCase) {
    case "plain text":
      return checkPlain(call, body)
    case "image input":
      return checkImage(call, body)
    case "reasoning":
      return checkReasoning(call, body)
    case "tool call round trip":
      strictEqual(call.recorded.length, 2, "two upstream calls")
      checkToolDeclared(call, asObject(call.recorded[0].body))
      return checkToolResult(call, body)
  }
}
