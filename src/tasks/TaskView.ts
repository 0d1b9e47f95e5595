/**
 * A stored task as the public shapes read it (`/v1/videos`, the unified
 * route, the image tasks, Kling's query routes, the Midjourney task object):
 * the views the task routes encode. URLs are this gateway's own routes, never
 * the vendor's.
 *
 * @since 0.1.0
 */
import type { KlingTaskView } from "../formats/kling/videos/ResponseCodec.ts"
import type { MjTaskDetail, MjTaskView } from "../formats/midjourney/Wire.ts"
import type { TaskView } from "../formats/videos/VideoObject.ts"
import type { Task } from "./TaskStore.ts"

/**
 * A stored task as the public shapes read it; the URL is this gateway's
 * content route (never the vendor's).
 *
 * @category views
 */
export const taskViewOf = (task: Task, origin: string): TaskView => {
  const request = task.request
  return {
    id: task.publicId,
    model: task.model,
    status: task.status,
    progress: task.progress,
    createdAt: Math.floor(task.createdAt / 1000),
    completedAt: task.completedAt === null ? null : Math.floor(task.completedAt / 1000),
    seconds: typeof request.seconds === "number" ? request.seconds : undefined,
    size: typeof request.size === "string"
      ? request.size
      : typeof request.aspectRatio === "string"
      ? request.aspectRatio
      : undefined,
    prompt: typeof request.prompt === "string" ? request.prompt : undefined,
    url: task.status === "completed" ? `${origin}/v1/videos/${task.publicId}/content` : null,
    error: task.errorCode === null ? null : { code: task.errorCode, message: task.errorMessage ?? "" },
    actual: {
      seconds: task.result?.seconds,
      width: task.result?.width,
      height: task.result?.height,
      fps: task.result?.fps,
      usage: task.result?.usage
    },
    remixOf: typeof request.remixOf === "string" ? request.remixOf : undefined,
    mini: task.model === "mini-2.0" || task.publicId.startsWith("mini-2.0_")
  }
}

/**
 * A stored video task as the Kling-shaped routes show it; the URL is the
 * gateway's content route.
 *
 * @category views
 */
export const klingViewOf = (task: Task, origin: string): KlingTaskView => {
  const request = task.request
  return {
    id: task.publicId,
    status: task.status,
    statusMessage: task.errorMessage ?? "",
    createdAtMs: task.createdAt,
    updatedAtMs: task.completedAt ?? task.createdAt,
    url: task.status === "completed" ? `${origin}/v1/videos/${task.publicId}/content` : null,
    seconds: task.result?.seconds ?? (typeof request.seconds === "number" ? request.seconds : undefined),
    externalTaskId: typeof request.externalTaskId === "string" ? request.externalTaskId : undefined
  }
}

/**
 * A stored Midjourney task (the caller's own) as its public task object is
 * made: times epoch milliseconds, the image URL `imageUrl` (the gateway's
 * signed `/mj/image/{id}?expires=…&signature=…`, made by the route) once
 * completed with an image (else `""`).
 *
 * @category views
 */
export const mjTaskViewOf = (task: Task, imageUrl: string): MjTaskView => {
  const request = task.request
  const string = (value: unknown) => typeof value === "string" ? value : ""
  return {
    id: task.publicId,
    action: string(request.action),
    customId: string(request.customId),
    botType: string(request.botType) || "MID_JOURNEY",
    prompt: string(request.prompt),
    state: string(request.state),
    status: task.status,
    progress: task.progress,
    submitTime: task.createdAt,
    finishTime: task.completedAt,
    imageUrl: task.status === "completed" && task.result?.url !== undefined ? imageUrl : "",
    failReason: task.status === "failed" ? task.errorMessage ?? "" : "",
    detail: task.publicResult === null ? undefined : task.publicResult as MjTaskDetail
  }
}
