/**
 * What a caller is shown of a task (spec "Resources" and "States and
 * transitions"): the OpenAI-style video object (`GET /v1/videos/{id}`, the
 * create and remix answers), the unified submit response (`POST
 * /v1/video/generations`) and the unified wrapper (`GET
 * /v1/video/generations/{id}`), and the async image task. Statuses map
 * `queued | in_progress | completed | failed` (OpenAI-style) ↔ `queued |
 * processing | succeeded | failed` (unified); progress is 0 at submit and 100
 * once finished; the URL is the gateway's own `/content` route, never the
 * vendor's. Only public ids appear.
 *
 * @since 0.1.0
 */
import type { TaskStatus } from "../../canonical/Video.ts"

/** A task as the public shapes read it; times epoch seconds. @category models */
export interface TaskView {
  readonly id: string
  readonly model: string
  readonly status: TaskStatus
  readonly progress: number
  readonly createdAt: number
  readonly completedAt: number | null
  /** Requested duration in seconds. */
  readonly seconds: number | undefined
  /** Requested size `<W>x<H>` (or the caller's ratio hint). */
  readonly size: string | undefined
  readonly prompt: string | undefined
  /** The gateway's content URL once completed, else `null`. */
  readonly url: string | null
  readonly error: { readonly code: string; readonly message: string } | null
  /** What the upstream reported of the finished video. */
  readonly actual: {
    readonly seconds?: number | undefined
    readonly width?: number | undefined
    readonly height?: number | undefined
    readonly fps?: number | undefined
    /** The usage the vendor billed, in its own unit (Ark: tokens). */
    readonly usage?: number | undefined
  }
  /** The public id of the task this one remixes. */
  readonly remixOf: string | undefined
  /** The mini-2.0 variant: `duration` always present. */
  readonly mini: boolean
}

/** The unified surface's name of a status. @category encoding */
export const unifiedStatus = (status: TaskStatus): "queued" | "processing" | "succeeded" | "failed" => {
  switch (status) {
    case "queued":
      return "queued"
    case "in_progress":
      return "processing"
    case "completed":
      return "succeeded"
    case "failed":
      return "failed"
  }
}

const sizeParts = (size: string | undefined): { width?: number; height?: number } => {
  const match = size === undefined ? null : /^(\d{1,5})x(\d{1,5})$/.exec(size)
  return match === null ? {} : { width: Number(match[1]), height: Number(match[2]) }
}

/**
 * The OpenAI-style video object (spec "Video task, OpenAI-style video
 * object"; field names and types as the `openai` SDK's `Video`): `id` and
 * `task_id` the public id, `seconds` and `size` as requested, `url` and
 * `video_url` the content route once completed (else `null`), `error {message,
 * code}` when failed, `metadata` `{}`; `duration` (whole seconds, the actual
 * length when known) on mini-2.0 and on every finished video; `usage` (an
 * integer, the vendor's billed usage, Ark's tokens) when the vendor reported it.
 *
 * @category encoding
 */
export const encodeVideoObject = (view: TaskView): Record<string, unknown> => {
  const duration = view.actual.seconds ?? view.seconds
  return {
    id: view.id,
    task_id: view.id,
    object: "video",
    model: view.model,
    status: view.status,
    progress: view.progress,
    created_at: view.createdAt,
    completed_at: view.status === "completed" ? view.completedAt : null,
    expires_at: null,
    seconds: view.seconds === undefined ? "" : String(view.seconds),
    size: view.size ?? "",
    prompt: view.prompt ?? null,
    remixed_from_video_id: view.remixOf ?? null,
    url: view.url,
    video_url: view.url,
    metadata: {},
    error: view.status === "failed" && view.error !== null
      ? { message: view.error.message, code: view.error.code }
      : null,
    ...((view.mini || view.status === "completed") && duration !== undefined ? { duration } : {}),
    // The spec's first-family extra field "billed usage (integer, passed through when returned)".
    ...(view.actual.usage === undefined ? {} : { usage: view.actual.usage })
  }
}

/**
 * The unified submit response (spec "Unified submit response"): `id`,
 * `task_id`, `object: video`, `model`, `status`, `progress`, `created_at`.
 *
 * @category encoding
 */
export const encodeUnifiedSubmit = (view: TaskView): Record<string, unknown> => ({
  id: view.id,
  task_id: view.id,
  object: "video",
  model: view.model,
  status: view.status,
  progress: view.progress,
  created_at: view.createdAt
})

/**
 * The unified wrapper (spec "Video task, unified wrapper"): `{code: success,
 * message: "", data: {task_id, status, url, format: mp4, metadata, error}}`;
 * `url` is `""` until done; `metadata {duration, width, height, fps}` once
 * completed (a value the upstream did not report: the requested one, or 0),
 * else `null`; `error {code, message}` when failed, else `null`.
 *
 * @category encoding
 */
export const encodeUnifiedTask = (view: TaskView): Record<string, unknown> => {
  const requested = sizeParts(view.size)
  return {
    code: "success",
    message: "",
    data: {
      task_id: view.id,
      status: unifiedStatus(view.status),
      url: view.url ?? "",
      format: "mp4",
      metadata: view.status === "completed"
        ? {
          duration: view.actual.seconds ?? view.seconds ?? 0,
          width: view.actual.width ?? requested.width ?? 0,
          height: view.actual.height ?? requested.height ?? 0,
          fps: view.actual.fps ?? 0
        }
        : null,
      error: view.status === "failed" && view.error !== null
        ? { code: view.error.code, message: view.error.message }
        : null
    }
  }
}

/**
 * The unified routes' flat error `{code, message, data: null}` (spec "Flat
 * error object" and "Errors": invalid key, unknown task).
 *
 * @category encoding
 */
export const encodeUnifiedError = (problem: { readonly code: string; readonly message: string }) => ({
  code: problem.code,
  message: problem.message,
  data: null
})

/**
 * The async image task (`GET /v1/images/generations/async/{taskId}`; the spec
 * shows only the id fields, the rest follows the video object): `id`,
 * `task_id`, `object: image.task`, `status`, `progress`, `created_at`,
 * `completed_at`; once completed also `created` and the sync route's `data[]`;
 * `error {message, code}` when failed.
 *
 * @category encoding
 */
export const encodeImageTask = (view: TaskView, data: unknown): Record<string, unknown> => ({
  id: view.id,
  task_id: view.id,
  object: "image.task",
  model: view.model,
  status: view.status,
  progress: view.progress,
  created_at: view.createdAt,
  completed_at: view.status === "completed" ? view.completedAt : null,
  ...(view.status === "completed" ? { created: view.completedAt ?? view.createdAt, data: data ?? [] } : {}),
  error: view.status === "failed" && view.error !== null ? { message: view.error.message, code: view.error.code } : null
})
