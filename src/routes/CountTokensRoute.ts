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
const anthropic = formatOf("anthropic")

/** The inbound headers a messages-format count forwards to an anthropic channel (beta switches). */
const MESSAGES_FORWARDED_HEADERS: ReadonlyArray<string> = ["anthropic-beta"]

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

/** Whether `json` holds a non-negative integer at `field` (`totalTokens`, `input_tokens`). */
const isCountAnswer = (json: unknown, field: string): json is Record<string, unknown> =>
  Predicate.isObject(json) && !Array.isArray(json) && Number.isSafeInteger(json[field]) &&
  (json[field] as number) >= 0

/** How one format's count reaches its own channel type, and reads the answer. */
interface CountWire {
  readonly type: "gemini" | "anthropic"
  /** The count URL from the adapter's non-stream generation URL. */
  readonly url: (generateUrl: string) => string
  /** The upstream body for the channel's model. */
  readonly body: (raw: Record<string, unknown>, upstreamModel: string) => Record<string, unknown>
  /** The field of the answer that holds the count. */
  readonly field: string
  /** Extra headers for the upstream (forwarded from the caller). */
  readonly headers: Record<string, string>
}

/**
 * The messages format's count URL: the adapter's `…/v1/messages` URL with `/count_tokens` appended.
 *
 * @category routes
 */
export const messagesCountUrl = (messagesUrl: string): string => `${messagesUrl}/count_tokens`

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
  /** Needs `Auth`, `ChannelRouter`, `GatewaySettings` and `UpstreamClient`. */
  static readonly layer = Layer.effect(
    CountTokens,
    Effect.gen(function* () {
      const auth = yield* Auth
      const router = yield* ChannelRouter
      const settings = yield* GatewaySettings
      const client = yield* UpstreamClient

      /** One vendor count on `candidate`: the answer's JSON, or why it failed. */
      const countOn = (candidate: Candidate, raw: Record<string, unknown>, wire: CountWire) =>
        Effect.scoped(Effect.gen(function* () {
          const target = adapters[wire.type].target(
            candidate.channel,
            candidate.key.key,
            wire.type,
            candidate.upstreamModel,
            false
          )
          const timeouts = {
            firstByteMs: candidate.channel.settings.first_byte_timeout_ms ?? settings.firstByteTimeoutMs,
            idleMs: candidate.channel.settings.idle_timeout_ms ?? settings.idleTimeoutMs,
            totalMs: candidate.channel.settings.total_timeout_ms ?? settings.totalTimeoutMs
          }
          const body = wire.body(raw, candidate.upstreamModel)
          for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
          const response = yield* client.post(
            wire.url(target.url),
            { ...target.headers, ...wire.headers },
            JSON.stringify(body),
            timeouts
          )
          const text = yield* response.text
          if (response.status < 200 || response.status >= 300) {
            const classified = formatOf(wire.type).classifyError(response.status, text)
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
          if (!isCountAnswer(json, wire.field)) {
            return yield* new UpstreamFailed({
              kind: "bad-body",
              status: response.status,
              message: "Not a count answer.",
              channelId: candidate.channel.id
            })
          }
          return json
        }))

      /** The vendor's count from the first candidate of the wire's type that answers, or `undefined` when none. */
      const vendorCount = Effect.fnUntraced(function* (
        candidates: ReadonlyArray<Candidate>,
        raw: Record<string, unknown>,
        wire: CountWire
      ) {
        const own = candidates.filter((candidate) => candidate.channel.type === wire.type)
        let lastError: UpstreamFailed | undefined
        for (const candidate of own.slice(0, 1 + settings.retryTimes)) {
          const result = yield* Effect.result(countOn(candidate, raw, wire))
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
          const counted = yield* vendorCount(candidates, raw, {
            type: "gemini",
            url: countTokensUrl,
            body: upstreamCountBody,
            field: "totalTokens",
            headers: {}
          })
          const body = counted ?? { totalTokens: promptTokensTypical(decoded.value) }
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
          if (!decoded.ok) return yield* decoded.error
          const candidates = yield* router.candidates(principal, decoded.value.model)
          const headers: Record<string, string> = {}
          for (const name of MESSAGES_FORWARDED_HEADERS) {
            const value = httpRequest.headers[name]
            if (typeof value === "string" && value.length > 0) headers[name] = value
          }
          const counted = yield* vendorCount(candidates, raw, {
            type: "anthropic",
            url: messagesCountUrl,
            body: (body, upstreamModel) => {
              const { stream: _stream, max_tokens: _max, ...rest } = body
              return { ...rest, model: upstreamModel }
            },
            field: "input_tokens",
            headers
          })
          const body = counted === undefined
            ? { input_tokens: promptTokensTypical(decoded.value) }
            : { input_tokens: counted.input_tokens }
          return HttpServerResponse.jsonUnsafe(body)
        }).pipe(respondWith(anthropic.encodeError))

      return CountTokens.of({ handle, messages })
    })
  )
}
