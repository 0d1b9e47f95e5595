/**
 * A charge journal record's codec: a record round-trips with its rows' audio counts, and a record written before
 * those counts existed (16-column rows) still decodes, its audio counts 0, so an upgrade folds what an older gateway
 * journaled.
 */
import { deepStrictEqual, ok } from "node:assert/strict"
import { decodeBatch, encodeBatch } from "../../src/billing/journal/BatchRecord.ts"
import type { UsageRow } from "../../src/billing/usage-log/UsageRow.ts"

const row: UsageRow = {
  requestId: "rtsock_1/resp_1",
  attempt: 0,
  userId: 7n,
  tokenId: 9n,
  channelId: 3,
  model: "gpt-realtime-test",
  upstreamModel: "gpt-realtime",
  promptTokens: 120,
  completionTokens: 80,
  cachedTokens: 10,
  reasoningTokens: 0,
  audioInputTokens: 100,
  audioOutputTokens: 64,
  cost: 1234n,
  latencyMs: 40,
  stream: true,
  status: 200,
  error: null
}

Deno.test("journal record: rows keep their audio counts through the codec", () => {
  const decoded = decodeBatch(encodeBatch({ id: "commit-1", instance: "instance-a", taken: [], rows: [row] }))
  deepStrictEqual(decoded?.rows, [row])
})

Deno.test("journal record: a row written before the audio counts decodes with them at 0", () => {
  const older = JSON.parse(encodeBatch({ id: "commit-2", instance: "instance-a", taken: [], rows: [row] }))
  older.rows = older.rows.map((tuple: Array<unknown>) => tuple.slice(0, 16))
  const decoded = decodeBatch(JSON.stringify(older))
  ok(decoded !== undefined, "an older record is still a record")
  deepStrictEqual(decoded.rows, [{ ...row, audioInputTokens: 0, audioOutputTokens: 0 }])
})

Deno.test("journal record: a streamed row's time to first token goes through the codec; a row without it has none", () => {
  const streamed = { ...row, stream: true, firstTokenMs: 140 }
  const decoded = decodeBatch(encodeBatch({ id: "commit-3", instance: "instance-a", taken: [], rows: [streamed, row] }))
  deepStrictEqual(decoded?.rows, [streamed, row])
  const older = JSON.parse(encodeBatch({ id: "commit-4", instance: "instance-a", taken: [], rows: [streamed] }))
  older.rows = older.rows.map((tuple: Array<unknown>) => tuple.slice(0, 18))
  const { firstTokenMs: _dropped, ...without } = streamed
  deepStrictEqual(decodeBatch(JSON.stringify(older))?.rows, [without], "an older record: no time to first token")
})
