/**
 * What makes a usage row fit its columns, as properties over arbitrary text
 * and numbers: text bounded, well formed and free of NUL; integers
 * non-negative PostgreSQL INTEGERs; a cleaned row cleans to itself; the
 * fields adjusted are named, never their values; the tuple in column order;
 * the minimal form keeps the ids and the cost; an adjustment's cost stays
 * signed within ±MAX_AMOUNT.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { MAX_AMOUNT } from "../../../src/billing/ledger/LeaseMath.ts"
import {
  cleanInteger,
  cleanRow,
  cleanText,
  minimalRow,
  signedCost,
  TEXT_LIMITS,
  tupleOf,
  type UsageRow
} from "../../../src/billing/usage-log/UsageRow.ts"

const row: UsageRow = {
  requestId: "req_1",
  attempt: 1,
  userId: 7n,
  tokenId: 9n,
  channelId: 3,
  model: "gpt-test",
  upstreamModel: "vendor-model",
  promptTokens: 10,
  completionTokens: 20,
  cachedTokens: 1,
  reasoningTokens: 2,
  audioInputTokens: 4,
  cost: 1_234n,
  latencyMs: 250,
  stream: true,
  status: 200,
  error: null
}

const texts = fc.string({ unit: "binary", maxLength: 300 })

Deno.test("cleanText: at most the limit, well formed, no NUL; clean text of the limit's length is kept whole", () => {
  fc.assert(
    fc.property(texts, fc.integer({ min: 0, max: 250 }), (text, limit) => {
      const clean = cleanText(text, limit)
      ok(clean.length <= limit)
      ok(clean.isWellFormed())
      ok(!clean.includes("\u0000"))
      strictEqual(cleanText(clean, limit), clean)
      if (text.length <= limit && text.isWellFormed() && !text.includes("\u0000")) strictEqual(clean, text)
    })
  )
  strictEqual(cleanText("ab\ud83d\ude00", 3), "ab", "a pair cut in half loses its first half")
  strictEqual(cleanText("a\udc00b\u0000", 10), "a\ufffdb")
})

Deno.test("cleanInteger: a non-negative PostgreSQL INTEGER, the number itself when it already is one", () => {
  fc.assert(
    fc.property(fc.oneof(fc.double(), fc.integer()), (value) => {
      const clean = cleanInteger(value)
      ok(Number.isInteger(clean) && clean >= 0 && clean <= 2_147_483_647)
      // `value + 0`: -0 is the integer 0 (what the column stores), which strictEqual would tell apart from 0.
      if (Number.isInteger(value) && value >= 0 && value <= 2_147_483_647) strictEqual(clean, value + 0)
    })
  )
  strictEqual(cleanInteger(-0), 0)
  strictEqual(cleanInteger(Number.NaN), 0)
  strictEqual(cleanInteger(Infinity), 0)
  strictEqual(cleanInteger(2 ** 40), 2_147_483_647)
})

Deno.test("cleanRow: a clean row is kept as it is; any row cleans to one that cleans to itself", () => {
  deepStrictEqual(cleanRow(row), { row, adjusted: [] })
  fc.assert(
    fc.property(
      texts,
      fc.option(texts, { nil: null }),
      fc.integer(),
      fc.bigInt({ min: -2n * MAX_AMOUNT, max: 2n * MAX_AMOUNT }),
      fc.option(fc.double(), { nil: null }),
      (text, error, count, cost, channelId) => {
        const dirty: UsageRow = { ...row, model: text, error, promptTokens: count, cost, channelId }
        const clean = cleanRow(dirty)
        deepStrictEqual(cleanRow(clean.row), { row: clean.row, adjusted: [] })
        ok(clean.row.cost >= 0n && clean.row.cost <= MAX_AMOUNT)
        ok(clean.row.model.length <= TEXT_LIMITS.model)
        for (const field of clean.adjusted) ok(field in row, `${field} is a field name`)
        strictEqual(clean.adjusted.includes("cost"), cost !== clean.row.cost)
      }
    )
  )
})

Deno.test("tupleOf: the columns in order, bigints as strings", () => {
  deepStrictEqual(tupleOf(row), [
    "req_1",
    1,
    "7",
    "9",
    3,
    "gpt-test",
    "vendor-model",
    10,
    20,
    1,
    2,
    "1234",
    250,
    true,
    200,
    null,
    4,
    0,
    null
  ])
  strictEqual(tupleOf({ ...row, firstTokenMs: 120 }).at(-1), 120, "the time to first token last")
})

Deno.test("minimalRow: ids, attempt, cost, stream and status kept; no channel, text or counts; the SQLSTATE named", () => {
  const minimal = minimalRow(row, "22021")
  deepStrictEqual(minimal, {
    ...row,
    channelId: null,
    model: "",
    upstreamModel: null,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    reasoningTokens: 0,
    audioInputTokens: 0,
    audioOutputTokens: 0,
    latencyMs: 0,
    firstTokenMs: null,
    error: "Usage row set aside: the database rejected it (SQLSTATE 22021)."
  })
})

Deno.test("signedCost: a credit stays negative; both signs bounded to MAX_AMOUNT", () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -3n * MAX_AMOUNT, max: 3n * MAX_AMOUNT }), (cost) => {
      const bounded = signedCost(cost)
      ok(bounded >= -MAX_AMOUNT && bounded <= MAX_AMOUNT)
      if (cost >= -MAX_AMOUNT && cost <= MAX_AMOUNT) strictEqual(bounded, cost)
      else strictEqual(bounded, cost > 0n ? MAX_AMOUNT : -MAX_AMOUNT)
    })
  )
})
