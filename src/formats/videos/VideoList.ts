/**
 * The video list and delete shapes as the `openai` SDK's `videos.list` and
 * `videos.delete` use them (platform.openai.com/docs/api-reference/videos):
 * `GET /v1/videos?after=&limit=&order=` answered by a cursor page
 * `{object: "list", data, first_id, last_id, has_more}`, and
 * `DELETE /v1/videos/{id}` by `{id, object: "video.deleted", deleted: true}`.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"
import { encodeVideoObject, type TaskView } from "./VideoObject.ts"

/** A decoded list query: the cursor, the page length (1 to 100) and the order. @category models */
export interface VideoListQuery {
  readonly after: string | undefined
  readonly limit: number
  readonly order: "asc" | "desc"
}

/**
 * The list query of `GET /v1/videos`: `limit` a whole number from 1 to 100
 * (default 20), `order` `asc` or `desc` (default `desc`), `after` a task id
 * (checked by the listing). The first bad parameter is an `InvalidRequest`
 * naming it.
 *
 * @category decoding
 */
export const decodeVideoListQuery = (query: URLSearchParams): Decoded<VideoListQuery> => {
  const limitText = query.get("limit") ?? "20"
  const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN
  if (!(limit >= 1 && limit <= 100)) {
    return Result.fail(new InvalidRequest({ message: "limit must be a whole number from 1 to 100.", param: "limit" }))
  }
  const order = query.get("order") ?? "desc"
  if (order !== "asc" && order !== "desc") {
    return Result.fail(new InvalidRequest({ message: "order must be asc or desc.", param: "order" }))
  }
  return Result.succeed({ after: query.get("after") ?? undefined, limit, order })
}

/**
 * One page of video objects as `videos.list` reads it; `first_id` and
 * `last_id` are `null` on an empty page.
 *
 * @category encoding
 */
export const encodeVideoList = (views: ReadonlyArray<TaskView>, hasMore: boolean): Record<string, unknown> => ({
  object: "list",
  data: views.map((view) => encodeVideoObject(view)),
  first_id: views[0]?.id ?? null,
  last_id: views.at(-1)?.id ?? null,
  has_more: hasMore
})

/**
 * The answer to a deleted video.
 *
 * @category encoding
 */
export const encodeVideoDeleted = (id: string): Record<string, unknown> => ({
  id,
  object: "video.deleted",
  deleted: true
})
