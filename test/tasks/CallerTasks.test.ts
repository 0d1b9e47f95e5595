/**
 * CallerTasks over stand-ins for the store, the poller and the listing: a read
 * finds only the caller's task of the kind asked for and polls it first; a
 * read of many keeps the caller's tasks of the kind, in the order asked, each
 * once; a video page is the listing's ids read in order; a remix's model is
 * the original's, of any kind.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Layer } from "effect"
import { NotFound } from "../../src/errors/GatewayError.ts"
import { CallerTasks } from "../../src/tasks/CallerTasks.ts"
import { TaskPoller } from "../../src/tasks/TaskPoller.ts"
import { type Task, type TaskKind, TaskStore } from "../../src/tasks/TaskStore.ts"
import { VideoListing } from "../../src/tasks/VideoListing.ts"

const taskOf = (publicId: string, kind: TaskKind, userId: bigint): Task => ({
  id: 1n,
  publicId,
  kind,
  userId,
  tokenId: 1n,
  channelId: 1,
  keyPosition: 0,
  upstreamId: "upstream",
  model: `${kind}-model`,
  upstreamModel: `${kind}-model`,
  request: {},
  status: "queued",
  progress: 0,
  result: null,
  publicResult: null,
  errorCode: null,
  errorMessage: null,
  requestId: "request",
  billing: { ratio: "1", free: false },
  quotaCharged: 0n,
  settled: false,
  refunded: 0n,
  pollFailures: 0,
  createdAt: 0,
  completedAt: null,
  deadlineAt: 0
})

const stored = [
  taskOf("video_a", "video", 1n),
  taskOf("video_b", "video", 1n),
  taskOf("mj_a", "midjourney", 1n),
  taskOf("video_other", "video", 2n)
]

/** The service over the stand-ins; `finds` collects every id the store was asked for. */
const layerWith = (finds: Array<string>) =>
  CallerTasks.layer.pipe(
    Layer.provide(Layer.mergeAll(
      Layer.mock(TaskStore, {
        instance: "test",
        find: (publicId: string, userId: bigint) => {
          finds.push(publicId)
          const task = stored.find((candidate) => candidate.publicId === publicId && candidate.userId === userId)
          return task === undefined ? Effect.fail(new NotFound({ what: "task", id: publicId })) : Effect.succeed(task)
        }
      }),
      Layer.mock(TaskPoller, { refresh: (task: Task) => Effect.succeed({ ...task, progress: 50 }) }),
      Layer.mock(VideoListing, {
        page: () => Effect.succeed({ ids: ["video_b", "video_a"], hasMore: true })
      })
    ))
  )

/** Runs `use` on the service over the stand-ins; its success or failure. */
const run = <A, E>(finds: Array<string>, use: (tasks: CallerTasks["Service"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.result(Effect.flatMap(CallerTasks, use)).pipe(Effect.provide(layerWith(finds)))
  )

Deno.test("CallerTasks.read: the caller's task of the kind, polled first; another kind or owner is NotFound", async () => {
  const read = (userId: bigint, taskId: string, kind: TaskKind) => run([], (tasks) => tasks.read(userId, taskId, kind))
  const found = await read(1n, "video_a", "video")
  strictEqual(found._tag === "Success" && found.success.progress, 50)
  for (const [userId, taskId, kind] of [[1n, "mj_a", "video"], [1n, "video_other", "video"]] as const) {
    const missing = await read(userId, taskId, kind)
    strictEqual(missing._tag === "Failure" && missing.failure._tag, "NotFound")
  }
})

Deno.test("CallerTasks.readMany: the caller's tasks of the kind in the order asked, each read once", async () => {
  const finds: Array<string> = []
  const ids = ["mj_a", "video_b", "nope", "video_other", "video_a", "video_b"]
  const result = await run(finds, (tasks) => tasks.readMany(1n, ids, "video"))
  deepStrictEqual(result._tag === "Success" && result.success.map((task) => task.publicId), ["video_b", "video_a"])
  deepStrictEqual(finds.toSorted(), ["mj_a", "nope", "video_a", "video_b", "video_other"])
})

Deno.test("CallerTasks.videoPage and modelOf: the listing's ids read in order; a remix's model of any kind", async () => {
  const page = await run([], (tasks) => tasks.videoPage(1n, { limit: 2, order: "desc" }))
  deepStrictEqual(
    page._tag === "Success" && { ids: page.success.tasks.map((task) => task.publicId), hasMore: page.success.hasMore },
    { ids: ["video_b", "video_a"], hasMore: true }
  )
  const model = await run([], (tasks) => tasks.modelOf(1n, "mj_a"))
  strictEqual(model._tag === "Success" && model.success, "midjourney-model")
})
