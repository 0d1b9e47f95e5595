/**
 * The generate-content answer (`GenerateContentResponse`) to and from the
 * canonical response, with the finish-reason and usage mappings the stream
 * translators share.
 *
 * Sources: spec "Generate-content response"; @google/genai 3.1.0
 * `GenerateContentResponse`, `Candidate`, `FinishReason`, `BlockedReason`,
 * `GenerateContentResponseUsageMetadata`, `SafetyRating`, `HarmCategory`
 * (genai.d.ts).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { OutputPart, Part } from "../../../canonical/Content.ts"
import type { FinishReason } from "../../../canonical/Finish.ts"
import type { Response } from "../../../canonical/Response.ts"
import type { Usage } from "../../../canonical/Usage.ts"
import { UpstreamFailed } from "../../../errors/GatewayError.ts"
import type { ResponseMeta } from "../../Format.ts"
import { forClient } from "../../shared/ReasoningOrigin.ts"
import { decodeParts, encodeParts, upstreamSignature, type WireJson, WirePart } from "./Parts.ts"

const Count = Schema.optional(Schema.Number)

/**
 * `usageMetadata`: token counts (`candidatesTokenCount` excludes
 * `thoughtsTokenCount`; `cachedContentTokenCount` is part of
 * `promptTokenCount`).
 *
 * @category schemas
 */
export const WireUsage = Schema.Struct({
  promptTokenCount: Count,
  candidatesTokenCount: Count,
  thoughtsTokenCount: Count,
  cachedContentTokenCount: Count,
  toolUsePromptTokenCount: Count,
  totalTokenCount: Count
})

/**
 * Decoded `usageMetadata` (`WireUsage.Type`); counts in tokens.
 *
 * @category schemas
 */
export type WireUsage = typeof WireUsage.Type

/**
 * A `GenerateContentResponse` (or one stream chunk) as far as Sluice reads it.
 *
 * @category schemas
 */
export const WireResponse = Schema.Struct({
  candidates: Schema.optional(Schema.Array(Schema.Struct({
    content: Schema.optional(Schema.Struct({
      role: Schema.optional(Schema.String),
      parts: Schema.optional(Schema.Array(WirePart))
    })),
    finishReason: Schema.optional(Schema.String),
    index: Schema.optional(Schema.Number)
  }))),
  promptFeedback: Schema.optional(Schema.Struct({ blockReason: Schema.optional(Schema.String) })),
  usageMetadata: Schema.optional(WireUsage),
  modelVersion: Schema.optional(Schema.String),
  responseId: Schema.optional(Schema.String),
  createTime: Schema.optional(Schema.String)
})

/**
 * A decoded answer or stream chunk (`WireResponse.Type`).
 *
 * @category schemas
 */
export type WireResponse = typeof WireResponse.Type

const filterReasons = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION"
])

/**
 * Gemini `finishReason` → canonical: `STOP` → `stop` (`tool-calls` when the
 * answer holds function calls), `MAX_TOKENS` → `length`, the safety family
 * (`SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII` and their
 * `IMAGE_` variants) → `content-filter`, anything else → `other`.
 *
 * @category decoding
 */
export const finishReasonFromGemini = (raw: string | undefined, hasToolCalls: boolean): FinishReason => {
  if (raw === "STOP" || raw === undefined) return hasToolCalls ? "tool-calls" : raw === undefined ? "other" : "stop"
  if (raw === "MAX_TOKENS") return "length"
  if (filterReasons.has(raw)) return "content-filter"
  return "other"
}

const geminiFinish: Readonly<Record<FinishReason, string>> = {
  "stop": "STOP",
  "tool-calls": "STOP",
  "length": "MAX_TOKENS",
  "content-filter": "SAFETY",
  "other": "OTHER",
  "error": "OTHER"
}

/**
 * Canonical finish reason → Gemini `finishReason`: `stop`/`tool-calls` →
 * `STOP`, `length` → `MAX_TOKENS`, `content-filter` → `SAFETY`, `other`/`error`
 * → `OTHER`. A raw Gemini reason that maps to the same canonical reason
 * (`RECITATION` for `content-filter`) is restored as is.
 *
 * @category encoding
 */
export const finishReasonToGemini = (reason: FinishReason, raw: string | undefined): string => {
  if (raw !== undefined && /^[A-Z_]+$/.test(raw)) {
    const back = finishReasonFromGemini(raw, reason === "tool-calls")
    if (back === reason) return raw
  }
  return geminiFinish[reason]
}

/**
 * `usageMetadata` → canonical usage: input = `promptTokenCount` +
 * `toolUsePromptTokenCount` (tool-use prompt tokens are billed as input and
 * counted in `totalTokenCount`); output = `candidatesTokenCount` +
 * `thoughtsTokenCount`; cached = `cachedContentTokenCount`; reasoning =
 * `thoughtsTokenCount`.
 *
 * @category decoding
 */
export const usageFromGemini = (usage: WireUsage | undefined): Usage => {
  const thoughts = usage?.thoughtsTokenCount
  return {
    inputTokens: (usage?.promptTokenCount ?? 0) + (usage?.toolUsePromptTokenCount ?? 0),
    outputTokens: (usage?.candidatesTokenCount ?? 0) + (thoughts ?? 0),
    ...(usage?.cachedContentTokenCount !== undefined ? { cachedInputTokens: usage.cachedContentTokenCount } : {}),
    ...(thoughts !== undefined ? { reasoningTokens: thoughts } : {})
  }
}

/**
 * Canonical usage → `usageMetadata` (the inverse of `usageFromGemini`;
 * `thoughtsTokenCount` and `cachedContentTokenCount` only when known).
 *
 * @category encoding
 */
export const usageToGemini = (usage: Usage): WireJson => {
  const reasoning = usage.reasoningTokens ?? 0
  return {
    promptTokenCount: usage.inputTokens,
    candidatesTokenCount: Math.max(0, usage.outputTokens - reasoning),
    ...(usage.reasoningTokens !== undefined ? { thoughtsTokenCount: usage.reasoningTokens } : {}),
    ...(usage.cachedInputTokens !== undefined ? { cachedContentTokenCount: usage.cachedInputTokens } : {}),
    totalTokenCount: usage.inputTokens + usage.outputTokens
  }
}

/**
 * The four harm categories of the spec, each rated `NEGLIGIBLE`: what a
 * gateway answer reports (spec "Generate-content response", "Safety
 * categories").
 *
 * @category encoding
 */
export const negligibleSafetyRatings: ReadonlyArray<WireJson> = [
  "HARM_CATEGORY_HARASSMENT",
  "HARM_CATEGORY_HATE_SPEECH",
  "HARM_CATEGORY_SEXUALLY_EXPLICIT",
  "HARM_CATEGORY_DANGEROUS_CONTENT"
].map((category) => ({ category, probability: "NEGLIGIBLE" }))

const isOutputPart = (part: Part): part is OutputPart =>
  part.type === "text" || part.type === "reasoning" || part.type === "tool-call"

const decodeWireResponse = Schema.decodeUnknownExit(WireResponse)

const epochSeconds = (time: string | undefined): number => {
  const millis = time === undefined ? Number.NaN : Date.parse(time)
  return Number.isFinite(millis) ? Math.floor(millis / 1000) : 0
}

/**
 * An upstream's `generateContent` answer → canonical response. The first
 * candidate is read; its media parts (image output, `inlineData`) are not
 * canonical output and are left out; signatures get origin `gemini`. `created` is `createTime` (Vertex) in
 * epoch seconds, else 0 (the Gemini API sends no time). A body with neither
 * candidates nor `promptFeedback` is a `bad-body` failure; a prompt blocked by
 * `promptFeedback.blockReason` is `content-filter` with empty content.
 *
 * @category decoding
 */
export const decodeGeminiResponse = (body: unknown): Response | UpstreamFailed => {
  const exit = decodeWireResponse(body)
  const badBody = (detail: string) =>
    new UpstreamFailed({ kind: "bad-body", status: 200, message: `The upstream answer could not be read: ${detail}` })
  if (exit._tag === "Failure") return badBody("it is not a generate-content response")
  const wire = exit.value
  const candidate = wire.candidates?.[0]
  const base = {
    id: wire.responseId ?? "",
    model: wire.modelVersion ?? "",
    created: epochSeconds(wire.createTime),
    usage: usageFromGemini(wire.usageMetadata)
  }
  if (candidate === undefined) {
    const blockReason = wire.promptFeedback?.blockReason
    if (wire.promptFeedback === undefined) return badBody("it has no candidates")
    return { ...base, content: [], finishReason: "content-filter", rawFinishReason: blockReason }
  }
  const content = decodeParts(candidate.content?.parts ?? [], 0, upstreamSignature).parts.filter(isOutputPart)
  const hasToolCalls = content.some((part) => part.type === "tool-call")
  return {
    ...base,
    content,
    finishReason: finishReasonFromGemini(candidate.finishReason, hasToolCalls),
    ...(candidate.finishReason !== undefined ? { rawFinishReason: candidate.finishReason } : {})
  }
}

/**
 * Canonical response → the caller's `generateContent` body: one candidate
 * (`index` 0, role `model`, `safetyRatings` all `NEGLIGIBLE`), `usageMetadata`,
 * `modelVersion` = the model the caller asked for, `responseId` = the gateway's
 * id. Signature-only reasoning parts ride on the following part as
 * `thoughtSignature` (see `GeminiParts.ts`); another vendor's signature is
 * written as `sluice.<origin>.<token>` (`ReasoningOrigin.ts`).
 *
 * @category encoding
 */
export const encodeGeminiResponse = (response: Response, meta: ResponseMeta): WireJson => ({
  candidates: [{
    content: {
      role: "model",
      parts: encodeParts(response.content.map((part) => forClient(part, "gemini")), () => undefined)
    },
    finishReason: finishReasonToGemini(response.finishReason, response.rawFinishReason),
    index: 0,
    safetyRatings: negligibleSafetyRatings
  }],
  usageMetadata: usageToGemini(response.usage),
  modelVersion: meta.model,
  responseId: meta.id
})
