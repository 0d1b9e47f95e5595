/**
 * The moderation relay (`POST /v1/moderations`) on the one-answer billed
 * sequence, on openai channels: the caller's JSON forwarded with the model
 * mapped. Free unless the model is priced (`input`: the prompt estimate, as
 * moderation answers carry no usage). A failed call costs nothing.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Usage } from "../../canonical/Usage.ts"
import { type Price, textCost } from "../../domain/Pricing.ts"
import type { GatewayError } from "../../errors/GatewayError.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { audioCandidates, type AudioServices, audioTarget, audioWireOf } from "./AudioShared.ts"
import { postForJson, priceFor, runOneShot } from "../pipeline/OneShot.ts"

/** A moderation request, checked by the route. @category models */
export interface ModerationInput {
  readonly operation: "moderations"
  readonly principal: Principal
  readonly model: string
  readonly body: Record<string, unknown>
  /** The prompt estimate of its text (billed when the model has an input price). */
  readonly promptTokens: number
}

/**
 * The moderation relay: runs a checked moderation request on the first
 * candidate that serves it, free unless priced.
 *
 * @category relay
 */
export const makeModerationRelay = (deps: AudioServices) => {
  const { client, settings, catalog, services } = deps
  const candidatesFor = (principal: Principal, model: string) => audioCandidates(deps, principal, model, "moderations")
  const targetOf = audioTarget
  const moderation = (input: ModerationInput) =>
    Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      const candidates = yield* candidatesFor(input.principal, input.model)
      // Free unless priced: a model the catalog does not price is served at no cost.
      const priced = yield* Effect.option(priceFor(catalog, input.model, input.principal.group, () => true))
      const group = catalog.snapshot().groups.get(input.principal.group)
      const price: Price = priced._tag === "Some" ? priced.value.price : { free: true }
      const ratio = priced._tag === "Some" ? priced.value.ratio : group?.ratio ?? 1_000_000_000n
      const cost = textCost(ratio, price, input.promptTokens, 0)
      const usage: Usage = { inputTokens: input.promptTokens, outputTokens: 0 }
      const attempt = (candidate: Candidate) => {
        const target = targetOf(candidate, "moderations")
        const body = { ...input.body, model: candidate.upstreamModel }
        return postForJson(
          client,
          settings,
          candidate.channel,
          { url: target.url, headers: { ...target.headers, "content-type": "application/json" } },
          JSON.stringify(body),
          audioWireOf(candidate).classifyError
        )
      }
      return yield* runOneShot(services, {
        principal: input.principal,
        groupLimits: group?.limits,
        model: input.model,
        price,
        ratio,
        promptTokens: input.promptTokens,
        started,
        hold: cost,
        candidates,
        attempt,
        usageOf: () => usage,
        costOf: () => cost,
        respond: (answer) => HttpServerResponse.text(answer.text, { contentType: "application/json" })
      })
    })
  return (input: ModerationInput): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> =>
    moderation(input)
}
