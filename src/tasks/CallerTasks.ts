/**
 * The caller's own tasks as the read routes see them (docs/ARCHITECTURE.md,
 * "The task lifecycle"): one task of a kind, polled on the spot when its poll
 * is due (`TaskPoller.refresh`); the caller's tasks among a list of ids; a page
 * of the caller's video tasks as the `openai` SDK's `videos.list` reads it, and
 * the delete of a finished one (`VideoListing`). Only the caller's tasks are
 * ever found: anyone else's id, an unknown one, or a task of another kind is
 * `NotFound` (404 `task_not_exist`), so the routes never see a task that is
 * not the caller's.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import { type InvalidRequest, NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { TaskPoller } from "./TaskPoller.ts"
import { type Task, type TaskKind, TaskStore } from "./TaskStore.ts"
import { VideoListing } from "./VideoListing.ts"

/** One page of the caller's video tasks (in the page's order), and whether more follow. @category models */
export interface VideoTaskPage {
  readonly tasks: ReadonlyArray<Task>
  readonly hasMore: boolean
}

/** Where a page of the caller's video tasks starts, how long it is, and its order. @category models */
export interface VideoPageOptions {
  /** The public id of the task the page starts after (in `order`); none: from the first. */
  readonly after?: string | undefined
  /** The most tasks on the page (the route allows 1 to 100). */
  readonly limit: number
  /** `desc`: newest first; `asc`: oldest first. */
  readonly order: "asc" | "desc"
}

/** How many tasks `readMany` looks up at once. */
const READ_CONCURRENCY = 8

/** @category services */
export class CallerTasks extends Context.Service<CallerTasks, {
  /**
   * The task `taskId` of user `userId` when it is of `kind`, polled first
   * when its poll is due (its state as stored afterwards). `NotFound` (task)
   * for anyone else's, an unknown id, or a task of another kind.
   */
  readonly read: (userId: bigint, taskId: string, kind: TaskKind) => Effect.Effect<Task, NotFound | StorageUnavailable>
  /**
   * The tasks of `kind` among `ids` (repeats read once) that are user
   * `userId`'s, as stored (not polled), in the order of `ids`; the others are
   * left out. Never fails.
   */
  readonly readMany: (
    userId: bigint,
    ids: ReadonlyArray<string>,
    kind: TaskKind
  ) => Effect.Effect<ReadonlyArray<Task>, StorageUnavailable>
  /** The model of user `userId`'s task `taskId`, of any kind (a remix's default); `NotFound` (task) otherwise. */
  readonly modelOf: (userId: bigint, taskId: string) => Effect.Effect<string, NotFound | StorageUnavailable>
  /**
   * One page of user `userId`'s video tasks, as stored; `NotFound` (task,
   * param `after`) when `after` is not one of them.
   */
  readonly videoPage: (
    userId: bigint,
    options: VideoPageOptions
  ) => Effect.Effect<VideoTaskPage, NotFound | StorageUnavailable>
  /**
   * Deletes user `userId`'s video task `taskId` once it is finished and
   * settled: `NotFound` (task) when it is not the caller's video task, an
   * `InvalidRequest` (param `video_id`) while it runs or its bill is open.
   */
  readonly removeVideo: (
    userId: bigint,
    taskId: string
  ) => Effect.Effect<void, NotFound | InvalidRequest | StorageUnavailable>
}>()("sluice/tasks/CallerTasks") {
  /** Needs TaskStore, TaskPoller and VideoListing. */
  static readonly layer = Layer.effect(
    CallerTasks,
    Effect.gen(function* () {
      const store = yield* TaskStore
      const poller = yield* TaskPoller
      const listing = yield* VideoListing

      const read = Effect.fn("CallerTasks.read")(function* (userId: bigint, taskId: string, kind: TaskKind) {
        const task = yield* store.find(taskId, userId)
        if (task.kind !== kind) return yield* new NotFound({ what: "task", id: taskId.slice(0, 100) })
        return yield* poller.refresh(task)
      })

      const readMany = Effect.fn("CallerTasks.readMany")(function* (
        userId: bigint,
        ids: ReadonlyArray<string>,
        kind: TaskKind
      ) {
        const found = yield* Effect.forEach(
          [...new Set(ids)],
          // An unknown id is left out; a store out of reach fails the whole read.
          (id) =>
            store.find(id, userId).pipe(Effect.map(Option.some), Effect.catchTag("NotFound", () => Effect.succeedNone)),
          { concurrency: READ_CONCURRENCY }
        )
        return found.flatMap((task) => task._tag === "Some" && task.value.kind === kind ? [task.value] : [])
      })

      const modelOf = Effect.fn("CallerTasks.modelOf")(function* (userId: bigint, taskId: string) {
        return (yield* store.find(taskId, userId)).model
      })

      const videoPage = Effect.fn("CallerTasks.videoPage")(function* (userId: bigint, options: VideoPageOptions) {
        const page = yield* listing.page(userId, options)
        const tasks = yield* Effect.forEach(page.ids, (id) => store.find(id, userId))
        return { tasks, hasMore: page.hasMore }
      })

      const removeVideo = (userId: bigint, taskId: string) => listing.remove(userId, taskId)

      return CallerTasks.of({ read, readMany, modelOf, videoPage, removeVideo })
    })
  )
}
