/**
 * The caller's own video tasks as the `openai` SDK's `videos.list` and
 * `videos.delete` reach them (platform.openai.com/docs/api-reference/videos:
 * `GET /v1/videos` with `after`, `limit`, `order`, a cursor page
 * `{data, first_id, last_id, has_more}`; `DELETE /v1/videos/{id}` →
 * `{id, object: "video.deleted", deleted: true}`). Only video tasks of the
 * caller are listed or deleted; anyone else's id, or an unknown one, is
 * `NotFound` (404 `task_not_exist`), as on the read route. A task still
 * queued or running, or not yet settled, cannot be deleted (its bill is
 * open): a 400 naming `video_id`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidRequest, NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** One page of the caller's video task ids, and whether more follow. @category models */
export interface VideoPage {
  readonly ids: ReadonlyArray<string>
  readonly hasMore: boolean
}

/** @category services */
export class VideoListing extends Context.Service<VideoListing, {
  /**
   * Public ids of `userId`'s video tasks, newest first (`desc`) or oldest
   * first (`asc`), at most `limit`, after the task `after` in that order
   * (`NotFound` when `after` is not one of the caller's video tasks).
   */
  readonly page: (
    userId: bigint,
    options: { readonly after?: string | undefined; readonly limit: number; readonly order: "asc" | "desc" }
  ) => Effect.Effect<VideoPage, NotFound | StorageUnavailable>
  /** Deletes `userId`'s finished, settled video task `publicId`. Both fail with `StorageUnavailable` when the store cannot run. */
  readonly remove: (
    userId: bigint,
    publicId: string
  ) => Effect.Effect<void, NotFound | InvalidRequest | StorageUnavailable>
}>()("sluice/tasks/VideoListing") {
  /** SQL-backed (table `tasks`). */
  static readonly layer = Layer.effect(
    VideoListing,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const page = Effect.fn("VideoListing.page")(function* (
        userId: bigint,
        options: { readonly after?: string | undefined; readonly limit: number; readonly order: "asc" | "desc" }
      ) {
        let cursor: { createdAt: Date; id: bigint | string } | undefined
        if (options.after !== undefined) {
          const rows = yield* sql<{ createdAt: Date; id: bigint | string }>`
            SELECT created_at AS "createdAt", id FROM tasks
            WHERE public_id = ${options.after} AND user_id = ${userId} AND kind = 'video'`.pipe(
            storageFailure("videos.list")
          )
          if (rows[0] === undefined) {
            return yield* new NotFound({ what: "task", id: options.after.slice(0, 100), param: "after" })
          }
          cursor = rows[0]
        }
        const take = options.limit + 1
        const rows = yield* (options.order === "desc"
          ? sql<{ publicId: string }>`SELECT public_id AS "publicId" FROM tasks
              WHERE user_id = ${userId} AND kind = 'video'
                AND ${cursor === undefined ? sql`TRUE` : sql`(created_at, id) < (${cursor.createdAt}, ${cursor.id})`}
              ORDER BY created_at DESC, id DESC LIMIT ${take}`
          : sql<{ publicId: string }>`SELECT public_id AS "publicId" FROM tasks
              WHERE user_id = ${userId} AND kind = 'video'
                AND ${cursor === undefined ? sql`TRUE` : sql`(created_at, id) > (${cursor.createdAt}, ${cursor.id})`}
              ORDER BY created_at ASC, id ASC LIMIT ${take}`).pipe(storageFailure("videos.list"))
        return {
          ids: rows.slice(0, options.limit).map((row) =>
            row.publicId
          ),
          hasMore: rows.length > options.limit
        }
      })

      const remove = Effect.fn("VideoListing.remove")(function* (userId: bigint, publicId: string) {
        const deleted = yield* sql`
          DELETE FROM tasks WHERE public_id = ${publicId} AND user_id = ${userId} AND kind = 'video'
            AND status IN ('completed', 'failed') AND settled
          RETURNING id`.pipe(storageFailure("videos.delete"))
        if (deleted.length > 0) return
        const [found] = yield* sql<{ status: string }>`
          SELECT status FROM tasks WHERE public_id = ${publicId} AND user_id = ${userId} AND kind = 'video'`.pipe(
          storageFailure("videos.delete")
        )
        if (found === undefined) return yield* new NotFound({ what: "task", id: publicId.slice(0, 100) })
        return yield* new InvalidRequest({
          message: `The video is ${
            found.status === "completed" || found.status === "failed" ? "not yet settled" : found.status
          }; it can be deleted once it is finished.`,
          param: "video_id"
        })
      })

      return VideoListing.of({ page, remove })
    })
  )
}
