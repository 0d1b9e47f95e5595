/**
 * Whether a batch is delegated to a vendor's batch API, and to which channel: the rule of issue 41 (docs/ROUTES.md,
 * "Vendor delegation"). A batch is delegated when every candidate channel of every model its lines name is of one
 * type with a vendor batch API that speaks the batch's own API (`openai` for `/v1/batches`, `anthropic` for
 * `/v1/messages/batches`: the lines go up as they came, with only their models mapped), and one channel among
 * them sets `settings.vendor_batches: true` and serves every model of the batch. That channel is the first such in
 * the first model's try order (`ChannelRouter.candidates`), and its candidate's key is the one the batch is
 * submitted with. Anything else (a model served by a channel of another type, no channel with the setting, an
 * OpenAI `/v1/responses` batch on a channel without `responses_api`) runs through the gateway as before.
 *
 * @since 0.4.0
 */
import type { BatchApi } from "../Batch.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"

/**
 * The channel a batch is submitted to: its candidate (channel, key) and, for each model the lines name, the
 * upstream model the channel calls it.
 *
 * @category models
 */
export interface VendorTarget {
  readonly api: BatchApi
  readonly candidate: Candidate
  readonly upstreamModels: ReadonlyMap<string, string>
}

/** The endpoints an OpenAI vendor batch may target (platform.openai.com/docs/api-reference/batch/create). */
const OPENAI_ENDPOINTS: ReadonlySet<string> = new Set([
  "/v1/chat/completions",
  "/v1/embeddings",
  "/v1/completions",
  "/v1/responses"
])

/**
 * The vendor target of a batch of `api` whose lines go to `endpoint`, given each model's candidates in try order
 * (`candidatesByModel`, every model the lines name, in their first appearance order); `undefined`: the gateway
 * runs the lines itself.
 *
 * @category routing
 */
export const vendorTarget = (
  api: BatchApi,
  endpoint: string,
  candidatesByModel: ReadonlyMap<string, ReadonlyArray<Candidate>>
): VendorTarget | undefined => {
  if (candidatesByModel.size === 0) return undefined
  if (api === "openai" && !OPENAI_ENDPOINTS.has(endpoint)) return undefined
  for (const candidates of candidatesByModel.values()) {
    if (candidates.length === 0 || candidates.some((candidate) => candidate.channel.type !== api)) return undefined
  }
  const [first] = candidatesByModel.values()
  for (const candidate of first) {
    const channel = candidate.channel
    if (channel.settings.vendor_batches !== true) continue
    if (endpoint === "/v1/responses" && channel.settings.responses_api !== true) continue
    const upstreamModels = new Map<string, string>()
    for (const [model, candidates] of candidatesByModel) {
      const served = candidates.find((other) => other.channel.id === channel.id)
      if (served === undefined) break
      upstreamModels.set(model, served.upstreamModel)
    }
    if (upstreamModels.size === candidatesByModel.size) return { api, candidate, upstreamModels }
  }
  return undefined
}
