/**
 * Gemini's `POST /v1beta/models/{model}:countTokens` (ai.google.dev/api/tokens,
 * `models.countTokens`; `@google/genai` `ai.models.countTokens`): the request
 * holds `contents`, or a whole `generateContentRequest`; the answer is
 * `CountTokensResponse` `{totalTokens, …}`.
 *
 * Counting is free: no quota hold, no usage charge, no usage row, no rate-limit
 * permit. The caller is authenticated as on `:generateContent` and the model
 * must be available to its group and token (else 503 `model_not_found`). The
 * count is the vendor's own when the model has a `gemini` channel (its
 * candidates tried in order, as failover tries them, each at
 * `…/models/{upstream model}:countTokens`); otherwise, or with no gemini channel,
 * it is the gateway's typical prompt estimate (`promptTokensTypical`, the one the
 * text routes use) of the decoded request.
 *
 * The route itself is registered with the other generate-content methods (the
 * path is `models/*` with the method after a colon), which hand this handler
 * the model from the path.
 *
 * The messages format's `POST /v1/messages/count_tokens`
 * (docs.anthropic.com/en/api/messages-count-tokens; `@anthropic-ai/sdk`
 * `messages.countTokens`; Claude Code calls it) is answered the same way: a
 * messages request without `max_tokens` in, `{input_tokens}` out; free; the
 * vendor's count from the model's `anthropic` channels (`…/v1/messages/count_tokens`,
 * the caller's body with the model mapped and its `anthropic-beta` header),
 * else the gateway's estimate; errors in the messages format's envelope.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { promptTokensTypical } from "../canonical/Estimate.ts"
import { formatOf } from "../formats/Formats.ts"
import { readJsonObject } from "../http/Body.ts"
import { credentialOf, headerOf } from "../http/Credentials.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { respondWith } from "../http/Respond.ts"
import { CountTokensRelay, geminiCountWire, generateBodyOf, messagesCountWire } from "../relay/text/CountTokensRelay.ts"
import { Auth } from "../services/Auth.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"

const gemini = formatOf("gemini")
const anthropic = formatOf("anthropic")

/** Caller headers the messages count forwards to anthropic channels (betas change what is counted). */
const MESSAGES_FORWARDED_HEADERS: ReadonlyArray<string> = ["anthropic-beta"]

export { countTokensUrl, generateBodyOf, messagesCountUrl, upstreamCountBody } from "../relay/text/CountTokensRelay.ts"

/** @category services */
export class CountTokens extends Context.Service<CountTokens, {
  /**
   * Answers `:countTokens` for `model` (from the path). Never fails: every
   * error is rendered in the generate-content route's error shape (the gateway
   * envelope plus the vendor's `status`).
   */
  readonly handle: (
    httpRequest: HttpServerRequest.HttpServerRequest,
    model: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /**
   * Answers `POST /v1/messages/count_tokens` with `{input_tokens}`. Never fails: every error is rendered in the
   * messages format's envelope (`param` naming the bad field).
   */
  readonly messages: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/CountTokensRoute/CountTokens") {
  /** Needs `Auth`, `ChannelRouter`, `GatewaySettings` and `CountTokensRelay`. */
  static readonly layer = Layer.effect(
    CountTokens,
    Effect.gen(function* () {
      const auth = yield* Auth
      const router = yield* ChannelRouter
      const settings = yield* GatewaySettings
      const relay = yield* CountTokensRelay

      const handle = (httpRequest: HttpServerRequest.HttpServerRequest, model: string) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(
            credentialOf("generate-content", httpRequest),
            clientAddressOf(httpRequest)
          )
          const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const decoded = gemini.decodeRequest(generateBodyOf(raw), { model, stream: false })
          if (Result.isFailure(decoded)) return yield* decoded.failure
          const candidates = yield* router.candidates(principal, model)
          const counted = yield* relay.count(candidates, raw, geminiCountWire)
          const body = counted ?? { totalTokens: promptTokensTypical(decoded.success) }
          return HttpServerResponse.jsonUnsafe(body)
        }).pipe(respondWith(gemini.encodeError))

      const messages = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(
            credentialOf("messages", httpRequest),
            clientAddressOf(httpRequest)
          )
          const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const decoded = anthropic.decodeRequest(raw, { stream: false })
          if (Result.isFailure(decoded)) return yield* decoded.failure
          const candidates = yield* router.candidates(principal, decoded.success.model)
          let headers: Record<string, string> | undefined
          for (const name of MESSAGES_FORWARDED_HEADERS) {
            const value = headerOf(httpRequest, name)
            if (value !== undefined && value.length > 0) (headers ??= {})[name] = value
          }
          const counted = yield* relay.count(candidates, raw, messagesCountWire, headers)
          const body = counted === undefined
            ? { input_tokens: promptTokensTypical(decoded.success) }
            : { input_tokens: counted.input_tokens }
          return HttpServerResponse.jsonUnsafe(body)
        }).pipe(respondWith(anthropic.encodeError))

      return CountTokens.of({ handle, messages })
    })
  )
}
