/**
 * Non-stream answers: a messages-format `Message` ↔ canonical `Response`
 * (SDK 1.12 `Message`; docs.anthropic.com/en/api/messages).
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { OutputPart } from "../../../canonical/Content.ts"
import type { Response } from "../../../canonical/Response.ts"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { ResponseMeta } from "../../Format.ts"
import { forClient } from "../../shared/ReasoningOrigin.ts"
import { kindOfErrorBody } from "./ErrorBody.ts"
import { OUTPUT_BLOCK_TYPES, OutputBlock, WireMessage } from "./ResponseSchema.ts"
import { finishReasonFromWire, finishReasonToWire } from "./StopReason.ts"
import { usageFromWire, usageToWire } from "./Usage.ts"
import { wireDecoder } from "./WireDecoder.ts"

const decodeMessage = wireDecoder(WireMessage)
const decodeBlock = wireDecoder(OutputBlock)

const badBody = (message: string) =>
  new UpstreamFailed({ kind: "bad-body", status: 200, message: `The upstream answer could not be read: ${message}` })

/**
 * One output block → one canonical part. `tool_use.input` becomes the JSON
 * text of the arguments (`{}` when absent); a thinking signature (non-empty)
 * and redacted data get origin `anthropic`.
 *
 * @category decoding
 */
export const partOfOutputBlock = (block: OutputBlock): OutputPart => {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text }
    case "thinking":
      return {
        type: "reasoning",
        text: block.thinking,
        ...(typeof block.signature === "string" && block.signature !== ""
          ? { signature: block.signature, origin: "anthropic" as const }
          : {})
      }
    case "redacted_thinking":
      return { type: "reasoning", text: "", redacted: block.data, origin: "anthropic" }
    case "tool_use":
      return { type: "tool-call", callId: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) }
  }
}

const isErrorBody = (body: unknown): boolean =>
  typeof body === "object" && body !== null && (body as { readonly type?: unknown }).type === "error"

/**
 * Reads a messages-format answer. Text, thinking (with signature), redacted
 * thinking and tool-use blocks become parts; blocks of other types (server
 * tool use and results) are skipped. `created` is 0: the format has no
 * creation time (the inbound encoder uses `ResponseMeta.created`). An error
 * body `{type: "error"}` is classified like a stream error; any other body
 * that is not a message is a `bad-body` failure.
 *
 * @category decoding
 */
export const decodeResponse = (body: unknown): Response | UpstreamFailed => {
  if (isErrorBody(body)) {
    const { kind, message } = kindOfErrorBody(body)
    return new UpstreamFailed({ kind, status: 200, message })
  }
  const decoded = decodeMessage(body)
  if (Result.isFailure(decoded)) return badBody(decoded.failure.message)
  const message = decoded.success
  const content: Array<OutputPart> = []
  for (const [index, raw] of message.content.entries()) {
    const type = typeof raw === "object" && raw !== null ? (raw as { readonly type?: unknown }).type : undefined
    if (typeof type === "string" && !OUTPUT_BLOCK_TYPES.has(type)) continue
    const block = decodeBlock(raw, ["content", index])
    if (Result.isFailure(block)) return badBody(block.failure.message)
    content.push(partOfOutputBlock(block.success))
  }
  const stopReason = message.stop_reason ?? undefined
  const stopSequence = message.stop_sequence ?? undefined
  return {
    id: message.id,
    model: message.model,
    created: 0,
    content,
    finishReason: finishReasonFromWire(stopReason),
    ...(stopReason === undefined ? {} : { rawFinishReason: stopReason }),
    ...(stopSequence === undefined ? {} : { stopSequence }),
    usage: usageFromWire(message.usage)
  }
}

/** Tool-call arguments → the `input` object: `{}` for text that is not a JSON object or nests too deep. */
const parseInput = (text: string): unknown => {
  const parsed = parseJsonOrUndefined(text)
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : {}
}

/**
 * One canonical part → one output block. Reasoning without a signature is a
 * `thinking` block with an empty signature (it cannot be sent back upstream);
 * a signature or redacted data another vendor minted is written as
 * `sluice.<origin>.<token>` (`ReasoningOrigin.ts`).
 *
 * @category encoding
 */
export const outputBlockOf = (output: OutputPart): Record<string, unknown> => {
  const part = forClient(output, "anthropic")
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "tool-call":
      return { type: "tool_use", id: part.callId, name: part.name, input: parseInput(part.arguments) }
    case "reasoning":
      return part.redacted !== undefined
        ? { type: "redacted_thinking", data: part.redacted }
        : { type: "thinking", thinking: part.text, signature: part.signature ?? "" }
  }
}

/**
 * Writes a canonical answer as a messages-format `Message` with the gateway's
 * id and the caller's model: content blocks, `stop_reason` (see
 * `finishReasonToWire`), `stop_sequence`, and `usage` with `input_tokens`
 * excluding cached tokens.
 *
 * @category encoding
 */
export const encodeResponse = (response: Response, meta: ResponseMeta): Record<string, unknown> => ({
  id: meta.id,
  type: "message",
  role: "assistant",
  model: meta.model,
  content: response.content.map(outputBlockOf),
  stop_reason: finishReasonToWire(response.finishReason, response.rawFinishReason, response.stopSequence),
  stop_sequence: response.stopSequence ?? null,
  usage: usageToWire(response.usage)
})
