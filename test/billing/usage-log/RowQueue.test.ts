/**
 * The usage log's queue over plain values: rows are cleaned as they are
 * queued, a full queue drops a row and counts it with its cost, a commit
 * takes every row in order, the statements cover the rows in order with at
 * most a batch each (a property), and the report of what was adjusted or
 * dropped is taken once.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  BATCH,
  countAdjusted,
  enqueue,
  makeRowQueue,
  MAX_QUEUED,
  statementsOf,
  takeAll,
  takeReport
} from "../../../src/billing/usage-log/RowQueue.ts"
import type { UsageRow } from "../../../src/billing/usage-log/UsageRow.ts"

const rowOf = (index: number, cost = 10n): UsageRow => ({
  requestId: `req_${index}`,
  attempt: 1,
  userId: 1n,
  tokenId: 1n,
  channelId: 1,
  model: "gpt-test",
  upstreamModel: null,
  promptTokens: 1,
  completionTokens: 1,
  cachedTokens: 0,
  reasoningTokens: 0,
  cost,
  latencyMs: 5,
  stream: false,
  status: 200,
  error: null
})

Deno.test("row queue: rows queue cleaned and in order; a full queue drops and counts them with their cost", () => {
  const queue = makeRowQueue()
  for (let index = 0; index < 3; index++) enqueue(queue, rowOf(index), 3)
  enqueue(queue, rowOf(3, 7n), 3)
  enqueue(queue, { ...rowOf(4, -5n), model: "bad\u0000" }, 3)
  deepStrictEqual(queue.pending.map((row) => row.requestId), ["req_0", "req_1", "req_2"])
  const report = takeReport(queue)
  deepStrictEqual(report.dropped, { rows: 2, cost: 7n }, "the cleaned cost of a dropped row (a negative one is 0)")
  deepStrictEqual([...report.adjusted].sort(), [["cost", 1], ["model", 1]])
  deepStrictEqual(takeReport(queue), { adjusted: new Map(), dropped: { rows: 0, cost: 0n } })
  deepStrictEqual(takeAll(queue).map((row) => row.requestId), ["req_0", "req_1", "req_2"])
  strictEqual(queue.pending.length, 0)
  enqueue(queue, rowOf(5))
  strictEqual(queue.pending.length, 1, "room again once the commit took the rows")
  ok(MAX_QUEUED > BATCH)
})

Deno.test("row queue: countAdjusted adds one per field named", () => {
  const queue = makeRowQueue()
  countAdjusted(queue, ["model", "error"])
  countAdjusted(queue, ["model"])
  deepStrictEqual([...queue.adjusted], [["model", 2], ["error", 1]])
})

Deno.test("statementsOf: the rows in order, every statement full but the last, none for no row", () => {
  fc.assert(
    fc.property(fc.array(fc.nat(), { maxLength: 200 }), fc.integer({ min: 1, max: 50 }), (rows, batch) => {
      const statements = statementsOf(rows, batch)
      deepStrictEqual(statements.flat(), rows)
      strictEqual(statements.length, Math.ceil(rows.length / batch))
      statements.forEach((statement, index) =>
        ok(statement.length === batch || (index === statements.length - 1 && statement.length > 0))
      )
    })
  )
  strictEqual(statementsOf(Array.from({ length: BATCH + 1 }, (_, index) => index)).length, 2)
})
