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
 * A new public id for a Midjourney task: `mj_<32 hex>`, 128 random bits, so
 * the image route may serve a task's image to whoever holds its id (an
 * `<img>` cannot send a key), as the proxies' own image URLs are.
 *
 * @category ids
 */
export const newMidjourneyTaskId = (): string => `mj_${crypto.randomUUID().replaceAll("-", "")}`
