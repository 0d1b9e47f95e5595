/**
 * A complete (non-stream) answer in canonical form.
 *
 * @since 0.1.0
 */
import type { OutputPart } from "./Content.ts"
import type { FinishReason } from "./Finish.ts"
import type { Usage } from "./Usage.ts"

/**
 * The assistant's answer. `created` is epoch seconds; `rawFinishReason` keeps
 * the upstream's own word (e.g. `stop_sequence`) so a same-family encoder can
 * restore it.
 */
export interface Response {
  readonly id: string
  readonly model: string
  readonly created: number
  readonly content: ReadonlyArray<OutputPart>
  readonly finishReason: FinishReason
  readonly rawFinishReason?: string | undefined
  /** The stop sequence that ended the answer, where the upstream says which. */
  readonly stopSequence?: string | undefined
  readonly usage: Usage
}
