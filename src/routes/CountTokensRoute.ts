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
 * @since 0.1.0
 */
import { Context, Effect, Layer, Predicate } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { promptTokensTypical } from "../canonical/Estimate.ts"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import { formatOf } from "../formats/registry.ts"
import { readJsonObject } from "../http/Body.ts"
import { credentialOf } from "../http/Credentials.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { respondWith } from "../http/Respond.ts"
import { adapters } from "../upstreams/Adapter.ts"
import { Auth } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { UpstreamClient } from "../services/UpstreamClient.ts"

const gemini = formatOf("gemini")

/**
 * The generate-content body a count request stands for: its
 * `generateContentRequest` when it has one (which wins, as the vendor
 * documents), else the request itself (`contents`, and whatever else the caller
 * sent).
 *
 * @category routes
 */
export const generateBodyOf = (raw: Record<string, unknown>): Record<string, unknown> => {
  const nested = raw.generateContentRequest ?? raw.generate_content_request
  return Predicate.isObject(nested) && !Array.isArray(nested) ? nested as Record<string, unknown> : raw
}

/**
 * The count request sent to a gemini channel for `upstreamModel`: the caller's
 * body, with the model inside a `generateContentRequest` (the vendor requires
 * it there, as `models/{model}`) set to the channel's model.
 *
 * @category routes
 */
export const upstreamCountBody = (raw: Record<string, unknown>, upstreamModel: string): Record<string, unknown> => {
  const nested = raw.generateContentRequest ?? raw.generate_content_request
  if (!Predicate.isObject(nested) || Array.isArray(nested)) return raw
  const { generate_content_request: _snake, ...rest } = raw
  return { ...rest, generateContentRequest: { ...nested, model: `models/${upstreamModel}` } }
}

/**
 * The `:countTokens` URL of a gemini channel: the adapter's non-stream
 * `:generateContent` URL with the method swapped (same root, model encoding and
 * headers).
 *
 * @category routes
 */
export const countTokensUrl = (generateUrl: string): string => generateUrl.replace(/:generateContent$/, ":countTokens")

/** Whether `json` is a `CountTokensResponse` (a non-negative integer `totalTokens`). */
const isCountAnswer = (json: unknown): json is Record<string, unknown> =>
  Predicate.isObject(json) && !Array.isArray(json) && Number.isSafeInteger(json.totalTokens) &&
  (json.totalTokens as number) >= 0

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
}>()("sluice/routes/CountTokensRoute/CountTokens") {
  /** Needs `Auth`, `ChannelRouter`, `GatewaySettings` and `UpstreamClient`. */
  static readonly layer = Layer.effect(
    CountTokens,
    Effect.gen(function* () {
      const auth = yield* Auth
      const router = yield* ChannelRouter
      const settings = yield* GatewaySettings
      const client = yield* UpstreamClient

      /** One vendor count on `candidate`: the answer's JSON, or why it failed. */
      const countOn = (candidate: Candidate, raw: Record<string, unknown>) =>
        Effect.scoped(Effect.gen(function* () {
          const target = adapters.gemini.target(
            candidate.channel,
            candidate.key.key,
            "gemini",
            candidate.upstreamModel,
            false
          )
          const timeouts = {
            firstByteMs: candidate.channel.settings.first_byte_timeout_ms ?? settings.firstByteTimeoutMs,
            idleMs: candidate.channel.settings.idle_timeout_ms ?? settings.idleTimeoutMs,
            totalMs: candidate.channel.settings.total_timeout_ms ?? settings.totalTimeoutMs
          }
          const response = yield* client.post(
            countTokensUrl(target.url),
            target.headers,
            JSON.stringify(upstreamCountBody(raw, candidate.upstreamModel)),
            timeouts
          )
          const text = yield* response.text
          if (response.status < 200 || response.status >= 300) {
            const classified = gemini.classifyError(response.status, text)
            return yield* new UpstreamFailed({
              kind: classified.kind,
              status: response.status,
              message: classified.message,
              channelId: candidate.channel.id
            })
          }
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          if (!isCountAnswer(json)) {
            return yield* new UpstreamFailed({
              kind: "bad-body",
              status: response.status,
              message: "Not a count answer.",
              channelId: candidate.channel.id
            })
          }
          return json
        }))

      /** The vendor's count from the first gemini candidate that answers, or `undefined` when there is none. */
      const vendorCount = Effect.fnUntraced(function* (
        candidates: ReadonlyArray<Candidate>,
        raw: Record<string, unknown>
      ) {
        const geminiCandidates = candidates.filter((candidate) => candidate.channel.type === "gemini")
        let lastError: UpstreamFailed | undefined
        for (const candidate of geminiCandidates.slice(0, 1 + settings.retryTimes)) {
          const result = yield* Effect.result(countOn(candidate, raw))
          if (result._tag === "Success") {
            yield* router.report(candidate, { _tag: "Success" })
            return result.success
          }
          const error = result.failure
          lastError = error
          yield* Effect.logWarning("countTokens attempt failed").pipe(
            Effect.annotateLogs({ channel: candidate.channel.name, kind: error.kind, status: error.status })
          )
          yield* router.report(
            candidate,
            error.kind === "unauthorized" || error.kind === "quota"
              ? { _tag: "KeyRejected", reason: `${error.kind}: ${error.message}`.slice(0, 200) }
              : error.retryable
              ? { _tag: "Retryable", reason: error.kind }
              : { _tag: "Success" }
          )
          if (!error.retryable) break
        }
        if (lastError !== undefined) return yield* lastError
        return undefined
      })

      const handle = (httpRequest: HttpServerRequest.HttpServerRequest, model: string) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(
            credentialOf("generate-content", httpRequest),
            clientAddressOf(httpRequest)
          )
          const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const decoded = gemini.decodeRequest(generateBodyOf(raw), { model, stream: false })
          if (!decoded.ok) return yield* decoded.error
          const candidates = yield* router.candidates(principal, model)
          const counted = yield* vendorCount(candidates, raw)
          const body = counted ?? { totalTokens: promptTokensTypical(decoded.value) }
          return HttpServerResponse.jsonUnsafe(body)
        }).pipe(respondWith(gemini.encodeError))

      return CountTokens.of({ handle })
    })
  )
}
