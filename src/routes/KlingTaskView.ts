/**
 * A stored video task as Kling's own query routes show it (`KlingRoutes.ts`), in the view Kling's response codec
 * encodes (`formats/kling/videos/ResponseCodec.ts`).
 *
 * @since 0.4.0
 */
import type { KlingTaskView } from "../formats/kling/videos/ResponseCodec.ts"
import type { Task } from "../tasks/TaskStore.ts"

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
