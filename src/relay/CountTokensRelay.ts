/**
 * Counting tokens at the vendor, for the free count routes (Gemini's
 * `:countTokens`, ai.google.dev/api/tokens; Messages' `POST
 * /v1/messages/count_tokens`, docs.anthropic.com/en/api/messages-count-tokens):
 * the same candidates, adapters, timeouts, failover and channel health as the
 * billed routes, with no permit, hold or usage row (a count is free). Only
 * candidates whose channel speaks the count's own wire are asked; with none,
 * the caller's route estimates.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Predicate } from "effect"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import type { FormatName } from "../formats/Format.ts"
import { formatOf } from "../formats/Formats.ts"
import type { Candidate } from "../services/ChannelRouter.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"
import { adapters } from "../upstreams/Adapter.ts"
import { mapUrlPath } from "../upstreams/BaseUrl.ts"
import { failover } from "./Failover.ts"
import { postForJson } from "./OneShot.ts"

/** How one format's count reaches its own channel type, and reads the answer. @category models */
export interface CountWire {
  /** The channel type (and wire format) that counts. */
  readonly type: "gemini" | "anthropic"
  /** The count URL from the adapter's non-stream generation URL. */
  readonly url: (generateUrl: string) => string
  /** The upstream body for the channel's model (a new object). */
  readonly body: (raw: Record<string, unknown>, upstreamModel: string) => Record<string, unknown>
  /** The field of the answer that holds the count (a non-negative integer). */
  readonly field: string
}

/**
 * The body a Gemini count request stands for: its `generateContentRequest`
 * when it has one (which wins, as the vendor documents), else the request
 * itself.
 *
 * @category count tokens
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
 * @category count tokens
 */
export const upstreamCountBody = (raw: Record<string, unknown>, upstreamModel: string): Record<string, unknown> => {
  const nested = raw.generateContentRequest ?? raw.generate_content_request
  if (!Predicate.isObject(nested) || Array.isArray(nested)) return { ...raw }
  const { generate_content_request: _snake, ...rest } = raw
  return { ...rest, generateContentRequest: { ...nested, model: `models/${upstreamModel}` } }
}

/**
 * The `:countTokens` URL of a gemini channel: the adapter's non-stream
 * `:generateContent` URL with the method swapped (same root, model encoding and
 * headers).
 *
 * @category count tokens
 */
export const countTokensUrl = (generateUrl: string): string =>
  mapUrlPath(generateUrl, (path) => path.replace(/:generateContent$/, ":countTokens"))

/**
 * The messages format's count URL: the adapter's `…/v1/messages` URL with `/count_tokens` appended.
 *
 * @category count tokens
 */
export const messagesCountUrl = (messagesUrl: string): string =>
  mapUrlPath(messagesUrl, (path) => `${path}/count_tokens`)

/** Gemini's count: `totalTokens` from `…:countTokens`. @category count tokens */
export const geminiCountWire: CountWire = {
  type: "gemini",
  url: countTokensUrl,
  body: upstreamCountBody,
  field: "totalTokens"
}

/** Messages' count: `input_tokens` from `…/v1/messages/count_tokens` (no `stream`, no `max_tokens`). @category count tokens */
export const messagesCountWire: CountWire = {
  type: "anthropic",
  url: messagesCountUrl,
  body: (raw, upstreamModel) => {
    const { stream: _stream, max_tokens: _max, ...rest } = raw
    return { ...rest, model: upstreamModel }
  },
  field: "input_tokens"
}

/** @category services */
export class CountTokensRelay extends Context.Service<CountTokensRelay, {
  /**
   * The vendor's count answer (its JSON, the count at `wire.field`) from the
   * first of `candidates` of the wire's channel type that answers, candidates
   * tried in failover order; `undefined` when none is of that type. Fails with
   * the last attempt's `UpstreamFailed`. `headers` go to the vendor as well
   * (the caller's `anthropic-beta`).
   */
  readonly count: (
    candidates: ReadonlyArray<Candidate>,
    raw: Record<string, unknown>,
    wire: CountWire,
    headers?: Readonly<Record<string, string>>
  ) => Effect.Effect<Record<string, unknown> | undefined, UpstreamFailed>
}>()("sluice/relay/CountTokensRelay") {
  /** Needs `ChannelRouter`, `GatewaySettings` and `UpstreamClient`. */
  static readonly layer = Layer.effect(
    CountTokensRelay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const settings = yield* GatewaySettings
      const client = yield* UpstreamClient

      const attempt = (
        raw: Record<string, unknown>,
        wire: CountWire,
        headers: Readonly<Record<string, string>>
      ) =>
      (candidate: Candidate): Effect.Effect<Record<string, unknown>, UpstreamFailed> => {
        const target = adapters[wire.type].target(
          candidate.channel,
          candidate.key.key,
          wire.type as FormatName,
          candidate.upstreamModel,
          false
        )
        const body = wire.body(raw, candidate.upstreamModel)
        for (const param of candidate.channel.settings.strip_params ?? []) delete body[param]
        const format = formatOf(wire.type)
        return postForJson(
          client,
          settings,
          candidate.channel,
          { url: wire.url(target.url), headers: { ...target.headers, ...headers }, signing: target.signing },
          JSON.stringify(body),
          format.classifyError
        ).pipe(
          Effect.flatMap(({ json }) => {
            const count = Predicate.isObject(json) && !Array.isArray(json) ? json[wire.field] : undefined
            return Number.isSafeInteger(count) && (count as number) >= 0
              ? Effect.succeed(json as Record<string, unknown>)
              : Effect.fail(
                new UpstreamFailed({
                  kind: "bad-body",
                  status: 200,
                  message: "Not a count answer.",
                  channelId: candidate.channel.id
                })
              )
          })
        )
      }

      const count = (
        candidates: ReadonlyArray<Candidate>,
        raw: Record<string, unknown>,
        wire: CountWire,
        headers: Readonly<Record<string, string>> = {}
      ): Effect.Effect<Record<string, unknown> | undefined, UpstreamFailed> => {
        const own = candidates.filter((candidate) => candidate.channel.type === wire.type)
        if (own.length === 0) return Effect.succeed(undefined)
        return Effect.flatMap(Clock.currentTimeMillis, (now) =>
          failover({
            candidates: own,
            maxAttempts: Math.min(own.length, 1 + settings.retryTimes),
            deadline: now + settings.requestDeadlineMs,
            report: router.report,
            // A count is free: a failed attempt is logged (by kind and status), never a usage row.
            logFailed: (candidate, _attempt, error) =>
              Effect.logWarning("countTokens attempt failed").pipe(
                Effect.annotateLogs({ channel: candidate.channel.name, kind: error.kind, status: error.status })
              ),
            attempt: attempt(raw, wire, headers)
          }).pipe(Effect.map((accepted) => accepted.value)))
      }

      return CountTokensRelay.of({ count })
    })
  )
}
