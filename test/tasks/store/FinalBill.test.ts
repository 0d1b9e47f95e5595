/**
 * The decisions of a task's final bill with plain values: what an end
 * writes on the row, what the submit was charged as committed (or that the
 * task must wait for its charge), the adjustment to the final cost, and the
 * usage row with its note.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { adjustmentOf, adjustmentRow, committedCharge, endColumns } from "../../../src/tasks/store/FinalBill.ts"
import { taskWith } from "../TaskFixture.ts"

const task = taskWith({ upstreamModel: "sora-2-pro", status: "queued", deadlineAt: 1 })

Deno.test("endColumns: what the end does not say is null; the error is cut to 64 and 1,000 characters", () => {
  deepStrictEqual(endColumns({ status: "completed", cost: 5n }), {
    errorCode: null,
    errorMessage: null,
    result: null,
    publicResult: null
  })
  const ended = endColumns({
    status: "failed",
    error: { code: "c".repeat(100), message: "m\u0000".repeat(700) },
    result: { url: "https://vendor.test/v.mp4", withKey: false },
    publicResult: null,
    cost: 0n
  })
  strictEqual(ended.errorCode, "c".repeat(64))
  strictEqual(ended.errorMessage, "m".repeat(500), "cut to 1,000 code units, then NULs dropped")
  strictEqual(ended.result, JSON.stringify({ url: "https://vendor.test/v.mp4", withKey: false }))
  strictEqual(ended.publicResult, "null", "a null public result is JSON null, not SQL NULL")
})

Deno.test("committedCharge: the logged charge capped at the row's; pending while young and unlogged", () => {
  strictEqual(committedCharge(800n, { rows: 1, total: 800n }, false), 800n)
  strictEqual(committedCharge(800n, { rows: 2, total: 1_000n }, false), 800n, "at most quota_charged")
  strictEqual(committedCharge(800n, { rows: 1, total: 300n }, true), 300n)
  strictEqual(committedCharge(800n, { rows: 0, total: 0n }, false), undefined, "the commit is pending: wait")
  strictEqual(committedCharge(800n, { rows: 0, total: 0n }, true), 0n, "never charged: nothing to refund")
})

Deno.test("adjustmentOf: positive gives back, negative charges extra; a negative cost counts as 0", () => {
  strictEqual(adjustmentOf(800n, 0n), 800n)
  strictEqual(adjustmentOf(800n, 600n), 200n)
  strictEqual(adjustmentOf(800n, 1_000n), -200n)
  strictEqual(adjustmentOf(800n, -50n), 800n)
  strictEqual(adjustmentOf(0n, 0n), 0n)
})

Deno.test("adjustmentRow: attempt 0 of the submit's request, the negated adjustment as cost, a note saying why", () => {
  const refund = adjustmentRow(task, "failed", "timeout", 800n)
  deepStrictEqual(
    {
      requestId: refund.requestId,
      attempt: refund.attempt,
      userId: refund.userId,
      tokenId: refund.tokenId,
      channelId: refund.channelId,
      model: refund.model,
      upstreamModel: refund.upstreamModel,
      cost: refund.cost,
      status: refund.status,
      stream: refund.stream
    },
    {
      requestId: "req-1",
      attempt: 0,
      userId: 7n,
      tokenId: 9n,
      channelId: 3,
      model: "sora-2",
      upstreamModel: "sora-2-pro",
      cost: -800n,
      status: 200,
      stream: false
    }
  )
  strictEqual(refund.error, "Task video_abc failed (timeout): 800 quota units refunded.")
  strictEqual(
    adjustmentRow(task, "failed", null, 800n).error,
    "Task video_abc failed (failed): 800 quota units refunded."
  )
  strictEqual(
    adjustmentRow(task, "completed", null, 200n).error,
    "Task video_abc re-priced on its actual length: 200 quota units refunded."
  )
  const extra = adjustmentRow(task, "completed", null, -200n)
  strictEqual(extra.cost, 200n)
  strictEqual(extra.error, "Task video_abc re-priced on its actual length: 200 quota units charged.")
})
