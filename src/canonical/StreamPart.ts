/**
 * The canonical streaming vocabulary every upstream decodes into and every
 * inbound format encodes from. Blocks are numbered in order of appearance from
 * 0 (`index`), whatever numbering the wire format uses; every block is opened
 * by `BlockStart` and closed by `BlockStop` before `Finish`.
 *
 * @since 0.1.0
 */
import type { ReasoningOrigin } from "./Content.ts"
import type { FinishReason } from "./Finish.ts"
import type { Usage } from "./Usage.ts"

/** The kind of a content block in a stream. */
export type BlockKind =
  | { readonly type: "text" }
  | { readonly type: "reasoning" }
  | { readonly type: "tool-call"; readonly callId: string; readonly name: string }

/** One canonical stream event. */
export type StreamPart =
  | {
    readonly _tag: "ResponseStart"
    readonly id: string
    readonly model: string
    /** Epoch seconds. */
    readonly created: number
  }
  | { readonly _tag: "BlockStart"; readonly index: number; readonly block: BlockKind }
  | { readonly _tag: "TextDelta"; readonly index: number; readonly text: string }
  | { readonly _tag: "ReasoningDelta"; readonly index: number; readonly text: string }
  /** The block's signature (whole, not a fragment); `origin` is the vendor family that minted it. */
  | {
    readonly _tag: "ReasoningSignature"
    readonly index: number
    readonly signature: string
    readonly origin?: ReasoningOrigin | undefined
  }
  /** An encrypted reasoning block; `origin` is the vendor family that minted it. */
  | {
    readonly _tag: "RedactedReasoning"
    readonly index: number
    readonly data: string
    readonly origin?: ReasoningOrigin | undefined
  }
  | { readonly _tag: "ToolInputDelta"; readonly index: number; readonly json: string }
  | { readonly _tag: "BlockStop"; readonly index: number }
  /**
   * Usage known so far (cumulative); may come several times. `final` marks the format's final usage (chat and
   * completions: usage after a `finish_reason`; Messages: `message_delta`; Responses: `response.completed` /
   * `incomplete` / `failed`; generate-content: the chunk with `finishReason`): from then on the answer's bill is
   * this usage, whatever the caller or the upstream connection does next (docs/ARCHITECTURE.md, "Billing truth").
   */
  | { readonly _tag: "UsageUpdate"; readonly usage: Usage; readonly final?: true | undefined }
  | {
    readonly _tag: "Finish"
    readonly reason: FinishReason
    readonly rawReason?: string | undefined
    readonly stopSequence?: string | undefined
    readonly usage: Usage
  }

/** The tag of a stream part. */
export type StreamPartTag = StreamPart["_tag"]
