/**
 * Complete (non-stream) answers in the OpenAI Responses format: the upstream's
 * `Response` object → canonical `Response` (outbound half), and canonical →
 * the `Response` object a caller of `POST /v1/responses` receives (inbound
 * half). Shapes from the SDK types `Response`, `ResponseOutputMessage`,
 * `ResponseOutputText`, `ResponseOutputRefusal`, `ResponseFunctionToolCall`,
 * `ResponseReasoningItem`, `ResponseUsage` (`openai@7.57.0`); spec "Response
 * object (responses format)".
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type { OutputPart, ReasoningPart } from "../../../canonical/Content.ts"
import type { Response } from "../../../canonical/Response.ts"
import { emptyUsage, type Usage } from "../../../canonical/Usage.ts"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { ResponseMeta } from "../../Format.ts"
import { forClient, redactedToken } from "../../shared/ReasoningOrigin.ts"
import { makeWireDecoder } from "../../shared/WireDecode.ts"
import { finishOfStatus, itemId, statusOfFinish, usageFromWire, usageToWire, type WireUsage } from "./WireSchema.ts"
import { echoedRequestFields } from "./Echo.ts"

const Body = Schema.Struct({
  id: Schema.String,
  object: Schema.optional(Schema.String),
  created_at: Schema.optional(Schema.NullOr(Schema.Finite)),
  model: Schema.String,
  status: Schema.optional(Schema.NullOr(Schema.String)),
  incomplete_details: Schema.optional(Schema.NullOr(Schema.Struct({
    reason: Schema.optional(Schema.NullOr(Schema.String))
  }))),
  error: Schema.optional(Schema.NullOr(Schema.Struct({
    code: Schema.optional(Schema.NullOr(Schema.String)),
    message: Schema.optional(Schema.NullOr(Schema.String))
  }))),
  output: Schema.Array(Schema.Unknown),
  usage: Schema.optional(Schema.NullOr(Schema.Unknown))
})

const Typed = Schema.Struct({ type: Schema.String })
const TextEntry = Schema.Struct({ text: Schema.String })
const MessageOutput = Schema.Struct({
  content: Schema.Array(Schema.Struct({
    type: Schema.String,
    text: Schema.optional(Schema.String),
    refusal: Schema.optional(Schema.String)
  }))
})
const FunctionCallOutput = Schema.Struct({ call_id: Schema.String, name: Schema.String, arguments: Schema.String })
const ReasoningOutput = Schema.Struct({
  summary: Schema.optional(Schema.NullOr(Schema.Array(TextEntry))),
  content: Schema.optional(Schema.NullOr(Schema.Array(TextEntry))),
  encrypted_content: Schema.optional(Schema.NullOr(Schema.String))
})

const decoders = {
  body: makeWireDecoder(Body),
  typed: makeWireDecoder(Typed),
  message: makeWireDecoder(MessageOutput),
  functionCall: makeWireDecoder(FunctionCallOutput),
  reasoning: makeWireDecoder(ReasoningOutput)
}

/**
 * A Responses `reasoning` item's summaries joined with a blank line (or, when
 * it has none, its raw `content` texts), with `encrypted_content` as the
 * signature (origin `openai`).
 *
 * @category decoding
 */
export const reasoningPartOf = (item: typeof ReasoningOutput.Type): ReasoningPart => {
  const summary = (item.summary ?? []).map((entry) => entry.text)
  const text = summary.length > 0 ? summary : (item.content ?? []).map((entry) => entry.text)
  return {
    type: "reasoning",
    text: text.join("\n\n"),
    ...(typeof item.encrypted_content === "string"
      ? { signature: item.encrypted_content, origin: "openai" as const }
      : {})
  }
}

/**
 * The upstream's failure kind for a Responses error `code` (`ResponseError.code`,
 * stream `error` events): `rate_limit_exceeded` → throttled,
 * `insufficient_quota` → quota, `server_error` or none → server, anything else
 * (invalid prompt or image, policy) → rejected.
 *
 * @category decoding
 */
export const failureKindOfCode = (code: string | null | undefined): UpstreamFailed["kind"] => {
  switch (code) {
    case "rate_limit_exceeded":
      return "throttled"
    case "insufficient_quota":
      return "quota"
    case "server_error":
    case null:
    case undefined:
      return "server"
    default:
      return "rejected"
  }
}

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

const outputParts = (items: ReadonlyArray<unknown>): ReadonlyArray<OutputPart> | UpstreamFailed => {
  const parts: Array<OutputPart> = []
  for (const [index, item] of items.entries()) {
    const typed = decoders.typed(item)
    if (Result.isFailure(typed)) return badBody(`Upstream output[${index}] has no type.`)
    switch (typed.success.type) {
      case "message": {
        const message = decoders.message(item)
        if (Result.isFailure(message)) return badBody(`Upstream output[${index}]: ${message.failure.message}`)
        for (const content of message.success.content) {
          const text = content.type === "refusal"
            ? content.refusal
            : content.type === "output_text"
            ? content.text
            : undefined
          if (text !== undefined) parts.push({ type: "text", text })
        }
        break
      }
      case "function_call": {
        const call = decoders.functionCall(item)
        if (Result.isFailure(call)) return badBody(`Upstream output[${index}]: ${call.failure.message}`)
        parts.push({
          type: "tool-call",
          callId: call.success.call_id,
          name: call.success.name,
          arguments: call.success.arguments
        })
        break
      }
      case "reasoning": {
        const reasoning = decoders.reasoning(item)
        if (Result.isFailure(reasoning)) return badBody(`Upstream output[${index}]: ${reasoning.failure.message}`)
        parts.push(reasoningPartOf(reasoning.success))
        break
      }
      default:
        // Hosted tool activity (web_search_call, file_search_call, …) has no canonical part.
        break
    }
  }
  return parts
}

/**
 * The upstream's Responses JSON (HTTP 2xx) → canonical answer. Output items
 * become parts in order: `message` text and refusals → text, `function_call`
 * → tool call, `reasoning` → reasoning (summary text, `encrypted_content` as
 * signature); hosted-tool items (`web_search_call`, …) have no canonical form
 * and are skipped. Finish: `incomplete` with `max_output_tokens` → `length`,
 * with `content_filter` → `content-filter`; any `function_call` → `tool-calls`;
 * else `stop`. A `failed` response is an `UpstreamFailed` of the kind its
 * `error.code` names; a body that is not a Response is `bad-body` (status 200,
 * the status it came with).
 *
 * @category decoding
 */
export const decodeResponsesResponse = (body: unknown): Response | UpstreamFailed => {
  const decoded = decoders.body(body)
  if (Result.isFailure(decoded)) {
    return badBody(`The upstream answer is not a Responses object: ${decoded.failure.message}`)
  }
  const response = decoded.success
  if (response.status === "failed") {
    return new UpstreamFailed({
      kind: failureKindOfCode(response.error?.code),
      status: 200,
      message: response.error?.message ?? "The upstream response failed."
    })
  }
  const content = outputParts(response.output)
  if (!Array.isArray(content)) return content as UpstreamFailed
  const parts = content as ReadonlyArray<OutputPart>
  const incompleteReason = response.incomplete_details?.reason ?? undefined
  const usage = usageFromWire(response.usage) ?? emptyUsage
  return {
    id: response.id,
    model: response.model,
    created: response.created_at ?? 0,
    content: parts,
    finishReason: finishOfStatus(
      response.status ?? undefined,
      incompleteReason,
      parts.some((part) => part.type === "tool-call")
    ),
    ...(response.status === "incomplete" && incompleteReason !== undefined
      ? { rawFinishReason: incompleteReason }
      : {}),
    usage
  }
}

/**
 * A Responses output item as the gateway writes it.
 *
 * @category models
 */
export type OutputItem = Readonly<Record<string, unknown>>

/**
 * The output items of a canonical answer, in order: each reasoning part → a
 * `reasoning` item (`summary` with one `summary_text`, `encrypted_content`
 * when a signature is known, written as `sluice.<origin>.<token>` when
 * another vendor minted it, `ReasoningOrigin.ts`; redacted reasoning → an item
 * whose `encrypted_content` is `sluice.<origin>.redacted.<data>`); each run of text parts → one assistant
 * `message` item (one `output_text` per part, with empty `annotations` and
 * `logprobs`); each tool call → a `function_call` item, or a `custom_tool_call`
 * item when its tool is one of `customTools` (`customToolCallItem`). Item ids come from
 * `itemId(…, responseId, outputIndex)`. `messageStatus` is the status written
 * on message items (`incomplete` when the answer was cut short).
 *
 * @category encoding
 */
export const outputItemsOf = (
  content: ReadonlyArray<OutputPart>,
  responseId: string,
  messageStatus: "completed" | "incomplete",
  customTools: ReadonlySet<string> = new Set()
): ReadonlyArray<OutputItem> => {
  const items: Array<OutputItem> = []
  let texts: Array<Record<string, unknown>> = []
  const flush = () => {
    if (texts.length === 0) return
    items.push(messageItem(itemId("msg", responseId, items.length), messageStatus, texts))
    texts = []
  }
  for (const part of content) {
    switch (part.type) {
      case "text":
        texts.push(outputText(part.text))
        break
      case "reasoning":
        flush()
        items.push(
          reasoningItem(
            itemId("rs", responseId, items.length),
            part.text,
            part.redacted !== undefined
              ? redactedToken(part.redacted, part.origin)
              : forClient(part, "openai").signature
          )
        )
        break
      case "tool-call":
        flush()
        items.push(
          customTools.has(part.name)
            ? customToolCallItem(
              itemId("ctc", responseId, items.length),
              part.callId,
              part.name,
              part.arguments,
              "completed"
            )
            : functionCallItem(
              itemId("fc", responseId, items.length),
              part.callId,
              part.name,
              part.arguments,
              "completed"
            )
        )
        break
    }
  }
  flush()
  return items
}

/**
 * An `output_text` content part with empty `annotations` and `logprobs`.
 *
 * @category encoding
 */
export const outputText = (text: string): Record<string, unknown> => ({
  type: "output_text",
  text,
  annotations: [],
  logprobs: []
})

/**
 * An assistant `message` output item.
 *
 * @category encoding
 */
export const messageItem = (
  id: string,
  status: "in_progress" | "completed" | "incomplete",
  content: ReadonlyArray<Record<string, unknown>>
): OutputItem => ({ id, type: "message", status, role: "assistant", content })

/**
 * A `reasoning` output item: one `summary_text` holding `text` (none when
 * `text` is empty) and `encrypted_content` when a signature is known.
 *
 * @category encoding
 */
export const reasoningItem = (id: string, text: string, signature: string | undefined): OutputItem => ({
  id,
  type: "reasoning",
  summary: text === "" ? [] : [{ type: "summary_text", text }],
  ...(signature === undefined ? {} : { encrypted_content: signature })
})

/**
 * A `function_call` output item; `arguments` is the JSON text of the arguments.
 *
 * @category encoding
 */
export const functionCallItem = (
  id: string,
  callId: string,
  name: string,
  args: string,
  status: "in_progress" | "completed"
): OutputItem => ({ id, type: "function_call", status, call_id: callId, name, arguments: args })

/**
 * The names of the caller's custom (freeform) tools in a Responses body (`tools[i]` with `type: "custom"`): a
 * translated answer's call of one of them goes back as a `custom_tool_call`.
 *
 * @category encoding
 */
export const customToolNames = (request: Readonly<Record<string, unknown>> | undefined): ReadonlySet<string> => {
  const tools = request?.tools
  const names = new Set<string>()
  if (!Array.isArray(tools)) return names
  for (const tool of tools) {
    if (typeof tool === "object" && tool !== null && tool.type === "custom" && typeof tool.name === "string") {
      names.add(tool.name)
    }
  }
  return names
}

/**
 * A freeform tool's raw input from the JSON arguments a translated upstream wrote: the string `input` argument
 * (`FREEFORM_ARGUMENT` of the request decoder), else the arguments text as it came.
 *
 * @category encoding
 */
export const freeformInput = (args: string): string => {
  // Not JSON, or nested deeper than `MAX_JSON_DEPTH` (not parsed): the text itself.
  const parsed = parseJsonOrUndefined(args)
  if (typeof parsed === "object" && parsed !== null && typeof (parsed as { input?: unknown }).input === "string") {
    return (parsed as { input: string }).input
  }
  return args
}

/**
 * A `custom_tool_call` output item (SDK type `ResponseCustomToolCall`): `input` is the raw text from `args`
 * (`freeformInput`).
 *
 * @category encoding
 */
export const customToolCallItem = (
  id: string,
  callId: string,
  name: string,
  args: string,
  status: "in_progress" | "completed"
): OutputItem => ({ id, type: "custom_tool_call", status, call_id: callId, name, input: freeformInput(args) })

/**
 * The full Responses `Response` object around `output` (SDK type `Response`):
 * the request's settings echoed from `meta.request` as the API does, the
 * API's defaults for those it did not set (`echoedRequestFields`). `usage` is
 * omitted while a stream is in progress.
 *
 * @category encoding
 */
export const responseObject = (
  meta: ResponseMeta,
  status: "in_progress" | "completed" | "incomplete" | "failed",
  output: ReadonlyArray<OutputItem>,
  details: {
    readonly incompleteReason?: string | null | undefined
    readonly usage?: Usage | undefined
    readonly error?: { readonly code: string; readonly message: string } | undefined
  } = {}
): Record<string, unknown> => {
  const usage: WireUsage | undefined = details.usage === undefined ? undefined : usageToWire(details.usage)
  return {
    id: meta.id,
    object: "response",
    created_at: meta.created,
    status,
    error: details.error ?? null,
    incomplete_details: details.incompleteReason ? { reason: details.incompleteReason } : null,
    model: meta.model,
    output,
    ...echoedRequestFields(meta.request),
    ...(usage === undefined ? {} : { usage })
  }
}

/**
 * Canonical answer → the `Response` object a Responses caller receives:
 * `id`, `model`, `created_at` from `meta`; `status` `completed`, or
 * `incomplete` with `incomplete_details.reason` (`max_output_tokens` for
 * `length`, `content_filter` for `content-filter`), or `failed` for `error`;
 * `output` from `outputItemsOf`; `usage` with cached, cache-write and reasoning
 * token details.
 *
 * @category encoding
 */
export const encodeResponsesResponse = (response: Response, meta: ResponseMeta): Record<string, unknown> => {
  const { status, incompleteReason } = statusOfFinish(response.finishReason)
  const output = outputItemsOf(
    response.content,
    meta.id,
    status === "incomplete" ? "incomplete" : "completed",
    customToolNames(meta.request)
  )
  return responseObject(meta, status, output, {
    incompleteReason,
    usage: response.usage,
    ...(status === "failed" ? { error: { code: "server_error", message: "The upstream failed." } } : {})
  })
}
