/**
 * A `tasks` row to a `Task` and back, with plain values: BIGINT columns and
 * times convert, JSON columns parse (text that is not JSON reads as null, the
 * request then `{}` and the billing free), and a poll's record clamps the
 * progress to 0–99 (the batch also rounds it).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { Task } from "../../../src/tasks/store/Task.ts"
import { advanceBatchJson, clampedProgress, taskOf, type TaskRow } from "../../../src/tasks/store/TaskRow.ts"

const row = (patch: Partial<TaskRow> = {}): TaskRow => ({
  id: 41n,
  publicId: "video_abc",
  kind: "video",
  userId: 7n,
  tokenId: 9n,
  channelId: 3n,
  keyPosition: 1,
  upstreamId: "up-1",
  model: "sora-2",
  upstreamModel: "sora-2-pro",
  request: JSON.stringify({ prompt: "a lake", seconds: "8" }),
  status: "in_progress",
  progress: 40,
  result: null,
  publicResult: null,
  errorCode: null,
  errorMessage: null,
  requestId: "req-1",
  billing: JSON.stringify({ ratio: "1000000000", perSecond: "100000000", free: false, seconds: 8 }),
  quotaCharged: 800_000n,
  settled: false,
  refunded: 0n,
  pollFailures: 2,
  createdAt: new Date(Date.UTC(2030, 0, 1)),
  completedAt: null,
  deadlineAt: new Date(Date.UTC(2030, 0, 2)),
  ...patch
})

Deno.test("taskOf: ids and amounts as bigints, the channel as a number, times as epoch ms, JSON parsed", () => {
  const task = taskOf(row({ completedAt: new Date(Date.UTC(2030, 0, 1, 0, 5)) }))
  strictEqual(task.id, 41n)
  strictEqual(task.userId, 7n)
  strictEqual(task.channelId, 3)
  strictEqual(task.quotaCharged, 800_000n)
  strictEqual(task.createdAt, Date.UTC(2030, 0, 1))
  strictEqual(task.completedAt, Date.UTC(2030, 0, 1, 0, 5))
  strictEqual(task.deadlineAt, Date.UTC(2030, 0, 2))
  deepStrictEqual(task.request, { prompt: "a lake", seconds: "8" })
  deepStrictEqual(task.billing, { ratio: "1000000000", perSecond: "100000000", free: false, seconds: 8 })
  strictEqual(task.result, null)
  strictEqual(task.publicResult, null)
})

Deno.test("taskOf: a JSON column that does not parse reads as null; the request is then {}, the billing free", () => {
  const task = taskOf(row({ request: "{not json", billing: "", result: "[", publicResult: "null" }))
  deepStrictEqual(task.request, {})
  deepStrictEqual(task.billing, { ratio: "0", free: true })
  strictEqual(task.result, null)
  strictEqual(task.publicResult, null)
})

Deno.test("taskOf: a finished task's results parse", () => {
  const task = taskOf(row({
    status: "completed",
    result: JSON.stringify({ url: "https://vendor.test/v.mp4", withKey: true, seconds: 8 }),
    publicResult: JSON.stringify([{ url: "https://gw.test/i.png" }])
  }))
  deepStrictEqual(task.result, { url: "https://vendor.test/v.mp4", withKey: true, seconds: 8 })
  deepStrictEqual(task.publicResult, [{ url: "https://gw.test/i.png" }])
})

Deno.test("clampedProgress: a running task's progress stays within 0–99", () => {
  deepStrictEqual([-5, 0, 42.5, 99, 100, 250].map(clampedProgress), [0, 0, 42.5, 99, 99, 99])
})

Deno.test("advanceBatchJson: one JSON row a task, ids as decimal strings, progress rounded and clamped", () => {
  const task = (id: bigint) => ({ ...taskOf(row()), id }) satisfies Task
  const json = advanceBatchJson([
    { task: task(1n), state: { status: "queued", progress: -3 } },
    { task: task(9_007_199_254_740_993n), state: { status: "in_progress", progress: 41.6 } },
    { task: task(3n), state: { status: "in_progress", progress: 100 } }
  ])
  deepStrictEqual(JSON.parse(json), [
    { id: "1", status: "queued", progress: 0 },
    { id: "9007199254740993", status: "in_progress", progress: 42 },
    { id: "3", status: "in_progress", progress: 99 }
  ])
  strictEqual(advanceBatchJson([]), "[]")
})
