/**
 * Public ids of async image tasks (`imgtask_<32 hex>`) and Midjourney tasks
 * (`mj_<32 hex>`): 128 random bits, never
 * derived from anything upstream (spec "What the service does", 5). Video
 * task ids are the video family's (`newVideoTaskId`, `VideoFamilies.ts`).
 *
 * @since 0.1.0
 */

/**
 * A new public id for an async image task.
 *
 * @category ids
 */
export const newImageTaskId = (): string => `imgtask_${crypto.randomUUID().replaceAll("-", "")}`

/**
 * A new public id for a Midjourney task: `mj_<32 hex>`, 128 random bits. The
 * id alone opens nothing: the image route serves a task's image to its owner,
 * or to whoever holds a signed URL of it (`domain/SignedUrl.ts`).
 *
 * @category ids
 */
export const newMidjourneyTaskId = (): string => `mj_${crypto.randomUUID().replaceAll("-", "")}`
