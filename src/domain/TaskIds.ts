/**
 * Public task ids: what a caller polls, never the upstream's id (spec "What
 * the service does", 5). A video task is `video_<32 hex>` (the OpenAI video
 * object's id shape), except on the mini-2.0 model, whose ids have the shape
 * `mini-2.0_<32 characters>` (spec "Video task, OpenAI-style video object");
 * an async image task is `imgtask_<32 hex>`. 128 random bits each.
 *
 * @since 0.1.0
 */

const randomHex = (): string => crypto.randomUUID().replaceAll("-", "")

/**
 * A new public id for a task of `kind` on `model`.
 *
 * @category ids
 */
export const newTaskId = (kind: "video" | "image", model: string): string =>
  kind === "image" ? `imgtask_${randomHex()}` : model === "mini-2.0" ? `mini-2.0_${randomHex()}` : `video_${randomHex()}`
