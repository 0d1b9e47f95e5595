import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import type { ReasoningOrigin } from "../../../src/canonical/Content.ts"
import type { Request } from "../../../src/canonical/Request.ts"
import type { Response } from "../../../src/canonical/Response.ts"
import { AnthropicFormat } from "../../../src/formats/anthropic/messages/Format.ts"
import { GeminiFormat } from "../../../src/formats/gemini/generate-content/Format.ts"
import { OpenAiResponsesFormat } from "../../../src/formats/openai/responses/Format.ts"
import {
  forClient,
  forUpstream,
  hasForeignReasoning,
  unwrapToken,
  wrapToken
} from "../../../src/formats/shared/ReasoningOrigin.ts"
import { signedAnswer } from "../gemini/generate-content/SignedAnswer.ts"

const origins: ReadonlyArray<ReasoningOrigin> = ["anthropic", "gemini", "openai"]
const origin = fc.constantFrom(...origins)
/** Vendor tokens are Base64 (Anthropic, Gemini) or URL-safe Base64 (OpenAI). */
const token = fc.oneof(
  fc.base64String({ minLength: 4, maxLength: 64 }),
  fc.base64String({ minLength: 4, maxLength: 64 }).map((text) => text.replaceAll("+", "-").replaceAll("/", "_"))
)

Deno.test("property: a token of any origin survives a client of any family (wrap → unwrap)", () => {
  fc.assert(
    fc.property(token, origin, origin, (value, minted, family) => {
      const written = wrapToken(value, minted, family)
      strictEqual(written === value, minted === family, "only a foreign token is wrapped")
      deepStrictEqual(unwrapToken(written, family), { origin: minted, token: value })
    })
  )
})

Deno.test("wrapToken: own or unknown origin as is, another vendor's as sluice.<origin>.<token>", () => {
  strictEqual(wrapToken("c2ln", "gemini", "gemini"), "c2ln")
  strictEqual(wrapToken("c2ln", undefined, "anthropic"), "c2ln")
  strictEqual(wrapToken("c2ln", "gemini", "anthropic"), "sluice.gemini.c2ln")
  deepStrictEqual(unwrapToken("sluice.openai.gAAAA_x-y", "anthropic"), { origin: "openai", token: "gAAAA_x-y" })
  deepStrictEqual(unwrapToken("EqQBCgIYAh", "anthropic"), { origin: "anthropic", token: "EqQBCgIYAh" })
  // an unknown family label is not a marker: the value is the client family's own
  deepStrictEqual(unwrapToken("sluice.mistral.x", "gemini"), { origin: "gemini", token: "sluice.mistral.x" })
})

Deno.test("forClient wraps signature and redacted data; forUpstream strips a foreign token and keeps the text", () => {
  const foreign = { type: "reasoning" as const, text: "Hm.", signature: "c2ln", origin: "gemini" as const }
  deepStrictEqual(forClient(foreign, "anthropic"), { ...foreign, signature: "sluice.gemini.c2ln" })
  deepStrictEqual(forClient(foreign, "gemini"), foreign)
  const redacted = { type: "reasoning" as const, text: "", redacted: "EmwK", origin: "anthropic" as const }
  deepStrictEqual(forClient(redacted, "openai"), { ...redacted, redacted: "sluice.anthropic.EmwK" })
  deepStrictEqual(forUpstream(foreign, "anthropic"), { type: "reasoning", text: "Hm." })
  deepStrictEqual(forUpstream(foreign, "gemini"), foreign)
  const unknown = { type: "reasoning" as const, text: "", signature: "legacy" }
  deepStrictEqual(forUpstream(unknown, "openai"), unknown)
})

Deno.test("hasForeignReasoning: true only for a token another family minted, false for formats without tokens", () => {
  const request = (origin: ReasoningOrigin | undefined): Request => ({
    model: "m",
    stream: false,
    messages: [
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      { role: "assistant", content: [{ type: "reasoning", text: "t", signature: "s", ...(origin ? { origin } : {}) }] }
    ]
  })
  strictEqual(hasForeignReasoning(request("gemini"), "anthropic"), true)
  strictEqual(hasForeignReasoning(request("anthropic"), "anthropic"), false)
  strictEqual(hasForeignReasoning(request(undefined), "anthropic"), false)
  strictEqual(hasForeignReasoning(request("anthropic"), "openai-responses"), true)
  strictEqual(hasForeignReasoning(request("anthropic"), "openai-chat"), false)
})

const meta = { id: "gw_1", model: "alias", created: 1 }

Deno.test("chain: Gemini signatures travel through each client format and reach Gemini byte for byte", () => {
  const decoded = GeminiFormat.decodeResponse(signedAnswer) as Response
  const nextTurn = (format: typeof AnthropicFormat | typeof OpenAiResponsesFormat, history: unknown) => {
    const read = format.decodeRequest(history, {})
    if (Result.isFailure(read)) throw read.failure
    return read.success
  }
  // messages client: the answer's content blocks become the assistant turn of the next request
  const message = AnthropicFormat.encodeResponse(decoded, meta) as { content: ReadonlyArray<unknown> }
  const viaMessages = nextTurn(AnthropicFormat, {
    model: "alias",
    max_tokens: 100,
    messages: [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: message.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "fc-1", content: "sunny" }]
      }
    ]
  })
  // responses client: the output items become input items of the next request
  const answer = OpenAiResponsesFormat.encodeResponse(decoded, meta) as { output: ReadonlyArray<unknown> }
  const viaResponses = nextTurn(OpenAiResponsesFormat, {
    model: "alias",
    input: [
      { role: "user", content: "Weather?" },
      ...answer.output,
      { type: "function_call_output", call_id: "fc-1", output: "sunny" }
    ]
  })
  for (const request of [viaMessages, viaResponses]) {
    const { body, dropped } = GeminiFormat.encodeRequest(request)
    const model = (body.contents as ReadonlyArray<{ role: string; parts: ReadonlyArray<Record<string, unknown>> }>)
      .find((content) => content.role === "model")
    const signatures = (model?.parts ?? []).flatMap((part) =>
      typeof part.thoughtSignature === "string" ? [part.thoughtSignature] : []
    )
    deepStrictEqual(signatures, ["VGhvdWdodA==", "Q2FsbA=="])
    const call = model?.parts.find((part) => part.functionCall !== undefined)
    strictEqual(call?.thoughtSignature, "Q2FsbA==", "the call's signature is back on the call")
    deepStrictEqual(dropped.filter((name) => name.includes("oreign")), [])
    // the same history to an Anthropic upstream carries no Gemini signature
    const anthropic = JSON.stringify(AnthropicFormat.encodeRequest(request).body)
    strictEqual(anthropic.includes("VGhvdWdodA=="), false)
    strictEqual(anthropic.includes("Q2FsbA=="), false)
    strictEqual(anthropic.includes("sluice."), false)
  }
})
