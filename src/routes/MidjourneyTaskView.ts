/**
 * A stored Midjourney task as the Midjourney routes show it (`MidjourneyRoutes.ts`), in the task object of
 * Midjourney's wire (`formats/midjourney/Wire.ts`).
 *
 * @since 0.4.0
 */
import type { MjTaskDetail, MjTaskView } from "../formats/midjourney/Wire.ts"
import type { Task } from "../tasks/TaskStore.ts"

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
