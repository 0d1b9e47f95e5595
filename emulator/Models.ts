/**
 * Model listings of the vendor emulator: OpenAI `GET /v1/models`
 * (https://platform.openai.com/docs/api-reference/models/list) and Anthropic `GET /v1/models`
 * (https://docs.anthropic.com/en/api/models-list; `@anthropic-ai/sdk` `ModelInfo`).
 * The emulator answers any model name; these lists are only what discovery shows.
 *
 * @since 0.1.0
 */
import { jsonReply, type Reply } from "./Sse.ts"

/** Model ids listed by the OpenAI route. @category models */
export const openAiModelIds: ReadonlyArray<string> = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "o4-mini", "gpt-5"]

/** Model ids listed by the Anthropic route. @category models */
export const anthropicModelIds: ReadonlyArray<string> = ["claude-sonnet-4-6", "claude-opus-4-7", "claude-haiku-4-5"]

/** `GET /v1/models` in OpenAI's list shape. @category routes */
export const openAiModels = (): Reply =>
  jsonReply({
    object: "list",
    data: openAiModelIds.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "emulator" }))
  })

/** `GET /v1/models` in Anthropic's page shape. @category routes */
export const anthropicModels = (): Reply =>
  jsonReply({
    data: anthropicModelIds.map((id) => ({
      type: "model",
      id,
      display_name: id,
      created_at: "2025-01-01T00:00:00Z"
    })),
    has_more: false,
    first_id: anthropicModelIds[0],
    last_id: anthropicModelIds[anthropicModelIds.length - 1]
  })
