/**
 * Which of the router's candidates can serve a request: the one rule every
 * relay that speaks only some channel types (embeddings, images, rerank,
 * audio, tasks) applies before it prices and runs the pipeline.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { ModelNotFound } from "../../errors/GatewayError.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import type { PipelineServices } from "./BilledPipeline.ts"

/**
 * The router's candidates for `model` and `principal` that `serves` (their channel type speaks the request's wire),
 * in try order. Fails with `ModelNotFound` at the operator's `unknown_model_status` (503 or 404, README
 * "Configuration") when the router has none or none of them serves it, so a model no channel of the right type
 * offers answers as a model no channel offers at all.
 *
 * @category routing
 */
export const servingCandidates = (
  services: Pick<PipelineServices, "router" | "settings">,
  principal: Principal,
  model: string,
  serves: (candidate: Candidate) => boolean
): Effect.Effect<ReadonlyArray<Candidate>, ModelNotFound> =>
  Effect.flatMap(services.router.candidates(principal, model), (routed) => {
    const serving = routed.filter(serves)
    return serving.length === 0
      ? Effect.fail(new ModelNotFound({ model, status: services.settings.unknownModelStatus }))
      : Effect.succeed(serving)
  })
