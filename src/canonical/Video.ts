/**
 * The canonical video request and the canonical state of an upstream task:
 * what the video routes (`POST /v1/videos`, its remix, `POST
 * /v1/video/generations`) decode into, what every video upstream (OpenAI
 * videos, Ark content generation tasks, generate-content `predictLongRunning`)
 * is encoded from, and what a poll of the upstream decodes to. It is no
 * vendor's format.
 *
 * @since 0.1.0
 */

/**
 * A media reference as the caller gave it: a public `https://` URL, or an
 * asset URI `asset://<id>` (spec "Video: first video family"), resolved by the
 * relay at dispatch to what the chosen channel accepts before the wire sees it.
 *
 * @category models
 */
export type MediaRef = string

/** What a reference is used for, in the upstream's terms. @category models */
export type ReferenceRole =
  | "first_frame"
  | "last_frame"
  | "reference_image"
  | "reference_video"
  | "reference_audio"

/**
 * One reference medium of a video request. `param` is the caller's field
 * that held it (`first_image`, `images[2]`), so a later error about it (an
 * asset that cannot be resolved) can name that field.
 *
 * @category models
 */
export interface VideoReference {
  readonly kind: "image" | "video" | "audio"
  readonly role: ReferenceRole
  readonly ref: MediaRef
  readonly param?: string | undefined
}

/**
 * One video request. `seconds` is the requested duration in whole seconds
 * (from `duration`, else `seconds`; billed at submit as `per_second` ×
 * `seconds`), `undefined` for the upstream's default (the family's default
 * duration is then billed). `size` is an actual `<W>x<H>`; `aspectRatio` a
 * ratio such as `16:9`; `resolution` a tier such as `720p` (lower case).
 * `metadata` is the caller's vendor pass-through object, forwarded as given
 * to upstreams that take extras. `negativePrompt` (what the video must not
 * show) and `cfgScale` (prompt adherence, 0–1) are sent to upstreams that
 * take them (Kling) and dropped by the others.
 *
 * @category models
 */
export interface VideoRequest {
  readonly model: string
  readonly prompt: string
  readonly negativePrompt?: string | undefined
  readonly cfgScale?: number | undefined
  readonly seconds?: number | undefined
  readonly size?: string | undefined
  readonly aspectRatio?: string | undefined
  readonly resolution?: string | undefined
  readonly watermark?: boolean | undefined
  readonly generateAudio?: boolean | undefined
  readonly references: ReadonlyArray<VideoReference>
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  /** The caller's own id for the task (Kling's `external_task_id`): kept and shown back, never sent upstream. */
  readonly externalTaskId?: string | undefined
}

/**
 * The internal task status; each vendor's synonyms map onto it (its wire's
 * `statusOf`), and the public surfaces map from it (spec "States and
 * transitions": OpenAI-style `queued|in_progress|completed|failed`, unified
 * `queued|processing|succeeded|failed`).
 *
 * @category models
 */
export type TaskStatus = "queued" | "in_progress" | "completed" | "failed"

/** Whether `status` is final: the poller never polls such a task again. @category predicates */
export const isTerminal = (status: TaskStatus): boolean => status === "completed" || status === "failed"

/**
 * What one poll of an upstream task says. `progress` is a percent when the
 * vendor reports one. On `completed`, `content` says where the bytes are (a
 * vendor URL, private: never shown to a caller) and, when the vendor says so,
 * until when (epoch seconds); `seconds` is the actual duration when reported
 * (billing re-prices on it). On `failed`, `error` holds the vendor's code (or
 * a generic one) and a caller-safe message.
 *
 * @category models
 */
export interface UpstreamTaskState {
  readonly status: TaskStatus
  readonly progress?: number | undefined
  readonly content?: {
    /** Absolute URL, or `undefined` when the bytes come from the wire's own content call. */
    readonly url?: string | undefined
    /** Whether the download needs the channel key (the gateway proxies it; the key never reaches the caller). */
    readonly withKey: boolean
    readonly expiresAt?: number | undefined
  } | undefined
  readonly seconds?: number | undefined
  readonly width?: number | undefined
  readonly height?: number | undefined
  readonly fps?: number | undefined
  /** The usage the vendor billed for the task, in its own unit (Ark: `usage.completion_tokens`), when it says. */
  readonly usage?: number | undefined
  readonly error?: { readonly code: string; readonly message: string } | undefined
}
