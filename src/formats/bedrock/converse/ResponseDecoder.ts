/**
 * A Converse answer (`ConverseResponse`: `output.message` with `role` and `content`, `stopReason`, `usage`, `metrics`;
 * API_runtime_Converse.html "Response Syntax"; SDK `models_0.d.ts`) in canonical form.
 *
 * @since 0.1.0
 */
import type { OutputPart } from "../../../canonical/Content.ts"
import type { Response } from "../../../canonical/Response.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import { finishReasonOfStop } from "./StopReason.ts"
import { usageFromConverse } from "./Usage.ts"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const badBody = (message: string) => new UpstreamFailed({ kind: "bad-body", status: 200, message })

/**
 * One output content block → canonical parts: `text` → text; `toolUse` → a tool call (`input` as JSON text);
 * `reasoningContent.reasoningText` → reasoning with its `signature`, `reasoningContent.redactedContent` → redacted
 * reasoning, both of origin `anthropic` (the only vendor whose reasoning Converse returns signed: Claude on Bedrock);
 * other blocks (citations, images, guardrail content) → none; a block of a known kind with the wrong shape →
 * `undefined`.
 *
 * @category decoding
 */
export const partsOfBlock = (block: unknown): ReadonlyArray<OutputPart> | undefined => {
  if (!isRecord(block)) return undefined
  if ("text" in block) return typeof block.text === "string" ? [{ type: "text", text: block.text }] : undefined
  if ("toolUse" in block) {
    const use = block.toolUse
    if (!isRecord(use) || typeof use.toolUseId !== "string" || typeof use.name !== "string") return undefined
    return [{ type: "tool-call", callId: use.toolUseId, name: use.name, arguments: JSON.stringify(use.input ?? {}) }]
  }
  if ("reasoningContent" in block) {
    const reasoning = block.reasoningContent
    if (!isRecord(reasoning)) return undefined
    if (typeof reasoning.redactedContent === "string") {
      return [{ type: "reasoning", text: "", redacted: reasoning.redactedContent, origin: "anthropic" }]
    }
    const text = reasoning.reasoningText
    if (!isRecord(text) || typeof text.text !== "string") return undefined
    const signature = typeof text.signature === "string" && text.signature !== "" ? text.signature : undefined
    return [{
      type: "reasoning",
      text: text.text,
      ...(signature === undefined ? {} : { signature, origin: "anthropic" as const })
    }]
  }
  return []
}

/**
 * A Converse JSON answer → the canonical response (`id` empty: Converse names none; `model` empty: the path named
 * it; `created` 0), or `bad-body` when `output.message.content` is not a list of readable blocks or `usage` has no
 * token counts.
 *
 * @category decoding
 */
export const decodeConverseResponse = (body: unknown): Response | UpstreamFailed => {
  if (!isRecord(body) || !isRecord(body.output) || !isRecord(body.output.message)) {
    return badBody("Not a Converse answer (no output.message).")
  }
  const content = body.output.message.content
  if (!Array.isArray(content)) return badBody("Not a Converse answer (output.message.content is not a list).")
  const parts: Array<OutputPart> = []
  for (const block of content) {
    const decoded = partsOfBlock(block)
    if (decoded === undefined) return badBody("A Converse answer's content block could not be read.")
    parts.push(...decoded)
  }
  const usage = usageFromConverse(body.usage)
  if (usage === undefined) return badBody("A Converse answer had no usage.")
  const stopReason = typeof body.stopReason === "string" ? body.stopReason : undefined
  return {
    id: "",
    model: "",
    created: 0,
    content: parts,
    finishReason: finishReasonOfStop(stopReason),
    ...(stopReason === undefined ? {} : { rawFinishReason: stopReason }),
    usage
  }
}
