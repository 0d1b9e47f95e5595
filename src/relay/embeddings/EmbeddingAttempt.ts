/**
 * One embedding attempt on one candidate, as `Failover` runs it: the caller's
 * body forwarded with only the model mapped when the channel speaks the
 * caller's format (and the request fits one call), else the canonical request
 * encoded in the channel's format and split into as many calls as its batch
 * limit needs (run a few at a time; one failing fails the attempt and cancels
 * the rest). Every upstream failure is an `UpstreamFailed` classified by the
 * wire format.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { EmbeddingRequest, EmbeddingResponse } from "../../canonical/Embedding.ts"
import type { Usage } from "../../canonical/Usage.ts"
import { UpstreamFailed } from "../../errors/GatewayError.ts"
import {
  type EmbeddingInbound,
  type EmbeddingWire,
  embeddingWires,
  encodeEmbeddingAnswer
} from "../../formats/embeddings/Wires.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { Settings } from "../../services/GatewaySettings.ts"
import type { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { embeddingAdapters } from "../../upstreams/EmbeddingAdapter.ts"
import { postForJson } from "../pipeline/OneShot.ts"

/** The input tokens the answers reported, added up (each must have reported some). */
const sumInputTokens = (answers: ReadonlyArray<EmbeddingResponse>): number =>
  answers.reduce((sum, answer) => sum + (answer.usage?.inputTokens ?? 0), 0)

/** Upstream calls of one translated attempt in flight at once. */
const CALLS_IN_FLIGHT = 4

/** An accepted embedding answer: the caller's JSON text and the usage it is billed for. @category models */
export interface EmbeddingAnswer {
  readonly text: string
  /** The upstream's reported usage, or the prompt estimate when it reported none. */
  readonly usage: Usage
}

/** What the attempts of one embedding request share. @category models */
export interface EmbeddingAttemptContext {
  readonly inbound: EmbeddingInbound
  readonly raw: Record<string, unknown>
  readonly request: EmbeddingRequest
  /** The prompt estimate billed when the upstream reports no usage. */
  readonly promptTokens: number
  readonly client: typeof UpstreamClient.Service
  readonly settings: Settings
}

/**
 * The wire of `candidate`'s channel for its upstream model, or `undefined` when its type (or, on a type whose wire
 * depends on the model, that model) cannot embed.
 *
 * @category attempts
 */
export const embeddingWireOf = (candidate: Candidate): EmbeddingWire | undefined => {
  const adapter = embeddingAdapters[candidate.channel.type]
  if (adapter === undefined) return undefined
  const name = typeof adapter.wire === "string" ? adapter.wire : adapter.wire(candidate.upstreamModel)
  return name === undefined ? undefined : embeddingWires[name]
}

/**
 * The attempt function of one embedding request.
 *
 * @category attempts
 */
export const makeEmbeddingAttempt = (context: EmbeddingAttemptContext) => {
  const { request, settings } = context
  const count = request.inputs.length

  /** One call: the parsed 2xx JSON and its text, or the classified failure. */
  const call = (candidate: Candidate, wire: EmbeddingWire, body: Record<string, unknown>) => {
    const { channel } = candidate
    const target = embeddingAdapters[channel.type]!.target(channel, candidate.key.key, candidate.upstreamModel)
    for (const param of channel.settings.strip_params ?? []) delete body[param]
    return postForJson(context.client, settings, channel, target, JSON.stringify(body), wire.classifyError)
  }

  /** One translated call: `chunk` (at most the wire's batch limit) encoded, sent, and its answer decoded. */
  const embedChunk = (candidate: Candidate, wire: EmbeddingWire, chunk: EmbeddingRequest) =>
    Effect.flatMap(call(candidate, wire, wire.encodeRequest(chunk, candidate.upstreamModel)), (answer) => {
      const decoded = wire.decodeResponse(answer.json, chunk.inputs.length, answer.headers)
      return decoded instanceof UpstreamFailed ? Effect.fail(decoded) : Effect.succeed(decoded)
    })

  const billed = (usage: Usage | undefined): Usage => usage ?? { inputTokens: context.promptTokens, outputTokens: 0 }

  return (candidate: Candidate): Effect.Effect<EmbeddingAnswer, UpstreamFailed> =>
    Effect.gen(function* () {
      const wire = embeddingWireOf(candidate)!
      const { passthroughBody, passthroughUsage, passthroughAnswer } = wire
      if (
        wire.name === context.inbound.format && count <= wire.maxInputs && passthroughBody !== undefined &&
        passthroughUsage !== undefined && passthroughAnswer !== undefined
      ) {
        const answer = yield* call(
          candidate,
          wire,
          passthroughBody(context.raw, context.inbound, candidate.upstreamModel)
        )
        const usage = passthroughUsage(answer.json, count)
        if (usage instanceof UpstreamFailed) return yield* usage
        return { text: passthroughAnswer(answer.text, answer.json, context.inbound), usage: billed(usage) }
      }
      const chunks: Array<EmbeddingRequest> = []
      for (let start = 0; start < count; start += wire.maxInputs) {
        chunks.push({ ...request, inputs: request.inputs.slice(start, start + wire.maxInputs) })
      }
      const answers = yield* Effect.forEach(chunks, (chunk) => embedChunk(candidate, wire, chunk), {
        concurrency: CALLS_IN_FLIGHT
      })
      const vectors = answers.flatMap((answer) => answer.vectors)
      // Reported usage only when every call reported it; else the estimate for the whole request.
      const reported = answers.every((answer) => answer.usage !== undefined)
      const usage = reported ? { inputTokens: sumInputTokens(answers), outputTokens: 0 } : undefined
      const total = billed(usage)
      return {
        text: JSON.stringify(encodeEmbeddingAnswer(context.inbound, vectors, total.inputTokens, request.model)),
        usage: total
      }
    })
}
