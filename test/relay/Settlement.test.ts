/**
 * The meter and the bill: which usage is billed for each way a request can
 * end, and that a settlement runs once.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Clock, Effect } from "effect"
import type { Principal } from "../../src/services/Auth.ts"
import type { Hold, QuotaLedger } from "../../src/billing/QuotaLedger.ts"
import type { UsageLog, UsageRow } from "../../src/billing/UsageLog.ts"
import { toFixed } from "../../src/domain/Pricing.ts"
import { UpstreamFailed } from "../../src/errors/GatewayError.ts"
import { applyDelta, billedUsage, emptyMeter, makeSettlement, type Meter } from "../../src/relay/Settlement.ts"

const meter = (overrides: Partial<Meter>): Meter => ({ ...emptyMeter, ...overrides })

Deno.test("billedUsage: a final usage is billed as reported", () => {
  deepStrictEqual(
    billedUsage(meter({ usage: { inputTokens: 10, outputTokens: 2 }, final: true, deliveredCharacters: 400 }), 99),
    { inputTokens: 10, outputTokens: 2 }
  )
})

Deno.test("billedUsage: a stream cut before its final usage bills the larger of reported and delivered output", () => {
  // Anthropic's message_start reports output_tokens: 1; 400 characters reached the caller.
  const cut = meter({ usage: { inputTokens: 10, outputTokens: 1 }, deliveredCharacters: 400, status: 502 })
  deepStrictEqual(billedUsage(cut, 99), { inputTokens: 10, outputTokens: 100 })
  const ahead = meter({ usage: { inputTokens: 10, outputTokens: 300 }, deliveredCharacters: 400, status: 502 })
  strictEqual(billedUsage(ahead, 99)?.outputTokens, 300)
})

Deno.test("billedUsage: no usage reported: the prompt estimate and what was delivered; nothing delivered costs nothing", () => {
  deepStrictEqual(billedUsage(meter({ deliveredCharacters: 9, status: 502 }), 42), { inputTokens: 42, outputTokens: 3 })
  strictEqual(billedUsage(meter({ status: 502 }), 42), undefined)
  deepStrictEqual(billedUsage(meter({}), 42), { inputTokens: 0, outputTokens: 0 })
})

Deno.test("applyDelta: usage, the final flag, delivered characters and a failure's status", () => {
  const failure = new UpstreamFailed({
    kind: "stream-broken",
    status: 0,
    message: "cut sk-test-abcdefghijklmnopqrstuvwxyz012345"
  })
  const next = applyDelta(meter({ deliveredCharacters: 3 }), {
    usage: { inputTokens: 1, outputTokens: 1 },
    final: false,
    finished: false,
    deliveredCharacters: 4,
    deliveredText: undefined,
    failure,
    answerId: undefined,
    answer: undefined
  })
  strictEqual(next.deliveredCharacters, 7)
  strictEqual(next.status, 502)
  strictEqual(next.error?.startsWith("stream-broken: cut "), true)
  strictEqual(next.error?.includes("abcdefghijklmnopqrstuvwxyz012345"), false, "key-like text is masked")
})

const principal: Principal = {
  tokenId: 1n,
  tokenName: "main",
  userId: 2n,
  group: "default",
  models: undefined,
  unlimitedQuota: false,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
}

Deno.test("makeSettlement: settles once, refunds extensions first, logs one row with what was charged", async () => {
  const settled: Array<[bigint, bigint]> = []
  const rows: Array<UsageRow> = []
  const released: Array<number> = []
  const ledger = {
    settle: (hold: Hold, cost: bigint, onBooked?: (charged: bigint) => void) =>
      Effect.sync(() => {
        settled.push([hold.amount, cost])
        onBooked?.(cost)
        return cost
      })
  } as unknown as typeof QuotaLedger.Service
  const usageLog = { record: (row: UsageRow) => rows.push(row) } as unknown as typeof UsageLog.Service
  const settlement = makeSettlement({
    ledger,
    usageLog,
    principal,
    requestId: "r1",
    model: "gpt-test",
    stream: true,
    price: { input: toFixed(2), output: toFixed(8), perImage: undefined, perSecond: undefined, free: false } as never,
    ratio: 1_000_000_000n,
    promptTokens: 5,
    started: Date.now(),
    clock: Clock.Clock.defaultValue(),
    permit: { release: (tokens: number) => Effect.sync(() => void released.push(tokens)) },
    onAnswer: undefined
  })
  settlement.addHold({ tokenId: 1n, userId: 2n, amount: 100n, settled: false })
  settlement.addHold({ tokenId: 1n, userId: 2n, amount: 30n, settled: false })
  settlement.update((m) => ({ ...m, usage: { inputTokens: 10, outputTokens: 2 }, final: true }))
  await Effect.runPromise(settlement.settle(undefined, 1))
  await Effect.runPromise(settlement.settle(undefined, 1))
  await Effect.runPromise(settlement.abandon)
  deepStrictEqual(settled, [[30n, 0n], [100n, 36n]])
  strictEqual(rows.length, 1)
  strictEqual(rows[0].cost, 36n)
  strictEqual(rows[0].completionTokens, 2)
  deepStrictEqual(released, [12])
})

Deno.test("makeSettlement: absorb takes a stream delta into the meter as applyDelta does", () => {
  const settlement = makeSettlement({
    ledger: {} as typeof QuotaLedger.Service,
    usageLog: {} as typeof UsageLog.Service,
    principal,
    requestId: "r2",
    model: "gpt-test",
    stream: true,
    price: {} as never,
    ratio: 1_000_000_000n,
    promptTokens: 5,
    started: Date.now(),
    clock: Clock.Clock.defaultValue(),
    permit: { release: () => Effect.void },
    onAnswer: undefined
  })
  const deltas = [
    { usage: { inputTokens: 4, outputTokens: 1 }, final: false, deliveredCharacters: 10, failure: undefined },
    {
      usage: undefined,
      final: false,
      deliveredCharacters: 6,
      failure: new UpstreamFailed({ kind: "stream-broken", status: 0, message: "cut" })
    }
  ].map((delta) => ({ ...delta, finished: false, deliveredText: undefined, answerId: undefined, answer: undefined }))
  let expected = emptyMeter
  for (const delta of deltas) {
    settlement.absorb(delta)
    expected = applyDelta(expected, delta)
  }
  deepStrictEqual({ ...settlement.meter() }, expected)
})
