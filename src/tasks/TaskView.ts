/**
 * A stored task as the vendor-neutral public shapes read it (`/v1/videos`,
 * the unified route, the image tasks): the view those routes encode. URLs are
 * this gateway's own routes, never the vendor's. The views of vendors' own
 * task routes are beside those routes (`routes/KlingTaskView.ts`,
 * `routes/MidjourneyTaskView.ts`), as only routes/ speaks a vendor's API.
 *
 * @since 0.1.0
 */
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
