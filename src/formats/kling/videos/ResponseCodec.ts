/**
 * What a caller of the Kling-shaped routes (`/kling/v1/videos/*`) is shown,
 * in Kling's own envelope `{code, message, request_id, data}` (Kling AI API
 * reference, "Text to Video": create and query task; see `Wire.ts`): `code`
 * 0 and `message` `SUCCEED` on success; `data` `{task_id, task_status,
 * task_status_msg, task_info: {external_task_id?}, created_at, updated_at}`
 * (epoch milliseconds), plus `task_result.videos[{id, url, duration}]` once
 * `succeed`. Statuses: `queued` → `submitted`, `in_progress` → `processing`,
 * `completed` → `succeed`, `failed` → `failed`. The task id and the video URL
 * are the gateway's own (the content route), never the vendor's. Errors:
 * `encodeKlingError`.
 *
 * @since 0.1.0
 */
import type { TaskStatus } from "../../../canonical/Video.ts"
import type { Problem } from "../../../domain/Problem.ts"

/** A task as the Kling-shaped routes show it. Times epoch milliseconds. @category models */
export interface KlingTaskView {
  readonly id: string
  readonly status: TaskStatus
  /** Why it failed (caller-safe), else `""`. */
  readonly statusMessage: string
  readonly createdAtMs: number
  readonly updatedAtMs: number
  /** The gateway's content URL once completed, else `null`. */
  readonly url: string | null
  /** The video's length in seconds: the actual one when reported, else the requested one. */
  readonly seconds: number | undefined
  readonly externalTaskId: string | undefined
}

/** Kling's name of a status. @category encoding */
export const klingStatus = (status: TaskStatus): "submitted" | "processing" | "succeed" | "failed" => {
  switch (status) {
    case "queued":
      return "submitted"
    case "in_progress":
      return "processing"
    case "completed":
      return "succeed"
    case "failed":
      return "failed"
  }
}

/**
 * The success envelope of a create or query answer for `view`;
 * `request_id` is the gateway's id of this request.
 *
 * @category encoding
 */
export const encodeKlingTask = (view: KlingTaskView, requestId: string): Record<string, unknown> => ({
  code: 0,
  message: "SUCCEED",
  request_id: requestId,
  data: {
    task_id: view.id,
    task_status: klingStatus(view.status),
    task_status_msg: view.status === "failed" ? view.statusMessage : "",
    task_info: view.externalTaskId === undefined ? {} : { external_task_id: view.externalTaskId },
    created_at: view.createdAtMs,
    updated_at: view.updatedAtMs,
    ...(view.status === "completed" && view.url !== null
      ? {
        task_result: {
          videos: [{ id: view.id, url: view.url, duration: view.seconds === undefined ? "" : String(view.seconds) }]
        }
      }
      : {})
  }
})

/**
 * Kling's service code and HTTP status for a problem (its error table):
 * 401 1000 authentication failed; a spent
 * quota 429 1102 (Kling's "resource pack depleted"); a rate or budget limit
 * 429 1302; a request error 400 1201 (invalid parameter); an unknown task or
 * model 404 1203 (resource does not exist); 413 → 400 1201; an upstream
 * failure 500 5000, 503 5001, 504 5002.
 *
 * @category errors
 */
export const klingErrorCode = (problem: Problem): { readonly status: number; readonly code: number } => {
  if (problem.status === 401) return { status: 401, code: 1000 }
  if (problem.status === 402) return { status: 429, code: 1102 }
  if (problem.status === 429) return { status: 429, code: 1302 }
  if (problem.code === "task_not_exist" || problem.code === "model_not_found") return { status: 404, code: 1203 }
  if (problem.status === 503) return { status: 503, code: 5001 }
  if (problem.status === 504) return { status: 504, code: 5002 }
  if (problem.status >= 500) return { status: 500, code: 5000 }
  if (problem.status === 404) return { status: 404, code: 1203 }
  return { status: 400, code: 1201 }
}

/**
 * The error body of `problem` in Kling's envelope: `{code, message,
 * request_id}` and, when a field is at fault, `param` naming it (Kling's
 * envelope has no such field; clients that do not know it ignore it).
 *
 * @category encoding
 */
export const encodeKlingError = (problem: Problem, requestId: string): Record<string, unknown> => ({
  code: klingErrorCode(problem).code,
  message: problem.message,
  request_id: requestId,
  ...(problem.param === "" ? {} : { param: problem.param })
})
