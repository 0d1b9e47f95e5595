/**
 * What the audio and moderation relays share (`SpeechRelay.ts`,
 * `TranscriptionRelay.ts`, `ModerationRelay.ts`): the services they run on,
 * the candidates that serve an audio operation (`upstreams/AudioAdapter.ts`),
 * an operation's URL and headers, the wire a candidate speaks
 * (`formats/audio/Wires.ts`) and the candidates whose wire takes a request,
 * and small helpers.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { parseJsonOrUndefined } from "../../domain/JsonDepth.ts"
import type { Price } from "../../domain/Pricing.ts"
import type { InvalidRequest, ModelNotFound } from "../../errors/GatewayError.ts"
import { type AudioWire, audioWires } from "../../formats/audio/Wires.ts"
import type { Principal } from "../../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../../services/ChannelRouter.ts"
import { GatewaySettings, type Settings } from "../../services/GatewaySettings.ts"
import { Catalog } from "../../storage/Catalog.ts"
import { audioAdapters, type AudioOperation } from "../../upstreams/AudioAdapter.ts"
import { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { type OneShotServices, oneShotServices } from "../pipeline/OneShot.ts"
import { servingCandidates } from "../pipeline/Serving.ts"

/** The services an audio relay runs on (taken once, when the relay's layer is built). @category models */
export interface AudioServices {
  readonly router: typeof ChannelRouter.Service
  readonly client: typeof UpstreamClient.Service
  readonly settings: Settings
  readonly catalog: typeof Catalog.Service
  readonly services: OneShotServices
}

/**
 * The audio relays' services, from the context.
 *
 * @category services
 */
export const audioServices = Effect.gen(function* () {
  const services: AudioServices = {
    router: yield* ChannelRouter,
    client: yield* UpstreamClient,
    settings: yield* GatewaySettings,
    catalog: yield* Catalog,
    services: yield* oneShotServices
  }
  return services
})

/**
 * The candidates of `model` for `principal` whose channel type serves
 * `operation`; fails with `ModelNotFound` when none does.
 *
 * @category routing
 */
export const audioCandidates = (
  deps: AudioServices,
  principal: Principal,
  model: string,
  operation: AudioOperation
): Effect.Effect<ReadonlyArray<Candidate>, ModelNotFound> =>
  servingCandidates(
    deps,
    principal,
    model,
    (candidate) => audioAdapters[candidate.channel.type]?.serves.has(operation) === true
  )

/**
 * The URL and headers of `operation` on `candidate`'s channel (its type serves it: see `audioCandidates`).
 *
 * @category routing
 */
export const audioTarget = (candidate: Candidate, operation: AudioOperation) =>
  audioAdapters[candidate.channel.type]!.target(
    candidate.channel,
    candidate.key.key,
    operation,
    candidate.upstreamModel
  )

/**
 * The audio wire `candidate`'s channel type speaks (`formats/audio/Wires.ts`, by the name its `AudioAdapter`
 * gives; its type serves audio: see `audioCandidates`).
 *
 * @category routing
 */
export const audioWireOf = (candidate: Candidate): AudioWire => audioWires[audioAdapters[candidate.channel.type]!.wire]

/**
 * The candidates whose wire can take the request (`refusalOf` of its wire is `undefined`), or, when none can,
 * the first wire's refusal (a field the caller must change).
 *
 * @category routing
 */
export const takingCandidates = (
  serving: ReadonlyArray<Candidate>,
  refusalOf: (wire: AudioWire) => InvalidRequest | undefined
): Effect.Effect<ReadonlyArray<Candidate>, InvalidRequest> => {
  let refusal: InvalidRequest | undefined
  const taking = serving.filter((candidate) => {
    const refused = refusalOf(audioWireOf(candidate))
    refusal ??= refused
    return refused === undefined
  })
  return taking.length === 0 && refusal !== undefined ? Effect.fail(refusal) : Effect.succeed(taking)
}

/** A price by tokens (`input` or `output`). @category billing */
export const isTokenPriced = (price: Price): boolean => price.input !== undefined || price.output !== undefined

/** A header value safe to pass on (printable ASCII, short), else `fallback`. @category http */
export const safeHeader = (value: string | undefined, fallback: string): string =>
  value !== undefined && value.length <= 100 && /^[\x20-\x7e]+$/.test(value) ? value : fallback

/** A finite, non-negative number (a usage field a vendor sent). @category billing */
export const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0

/** The most of an SSE line kept while waiting for its end (a longer one is skipped). */
const SSE_LINE_LIMIT = 4 * 1024 * 1024

/**
 * Reads an SSE body as it passes, chunk by chunk: `push` returns the `data:`
 * payloads of the lines the chunk completed (OpenAI's audio events are one
 * `data:` line each). A line longer than 4 MB is skipped, so a hostile
 * stream cannot grow the buffer without bound.
 *
 * @category streams
 */
export const sseDataReader = (): { readonly push: (chunk: Uint8Array) => ReadonlyArray<string> } => {
  const decoder = new TextDecoder()
  let pending = ""
  let skipping = false
  return {
    push: (chunk) => {
      const lines = (pending + decoder.decode(chunk, { stream: true })).split("\n")
      pending = lines.pop() ?? ""
      const data: Array<string> = []
      for (const line of lines) {
        if (skipping) skipping = false
        else if (line.startsWith("data:")) data.push(line.slice(5).trim())
      }
      if (pending.length > SSE_LINE_LIMIT) {
        pending = ""
        skipping = true
      }
      return data
    }
  }
}

/**
 * The JSON object of an SSE `data:` payload, or `undefined` when it is not one (or nests deeper than
 * `MAX_JSON_DEPTH`: a vendor's text, checked before it is parsed). @category streams
 */
export const eventOf = (data: string): Record<string, unknown> | undefined => {
  const parsed = parseJsonOrUndefined(data)
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? parsed as Record<string, unknown>
    : undefined
}
