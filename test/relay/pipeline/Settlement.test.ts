/**
 * The bill: that a settlement runs once, and takes a stream's deltas as the
 * meter's rules do (the rules themselves: `test/billing/Meter.test.ts`).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Clock, Effect } from "effect"
import type { Principal } from "../../../src/services/Auth.ts"
import type { Ledger } from "../../../src/billing/Ledger.ts"
import type { Hold } from "../../../src/billing/QuotaLedger.ts"
import type { UsageRow } from "../../../src/billing/UsageLog.ts"
import { toFixed } from "../../../src/domain/Pricing.ts"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { applyDelta, emptyMeter } from "../../../src/billing/Meter.ts"
import { makeSettlement } from "../../../src/relay/pipeline/Settlement.ts"

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
  // A ledger double: what it was asked to book and release, and the rows it was given.
  const ledger = {
    book: (hold: Hold | undefined, cost: bigint, row: (charged: bigint) => UsageRow) =>
      Effect.sync(() => {
        settled.push([hold?.amount ?? 0n, cost])
        rows.push(row(cost))
        return cost
      }),
    release: (hold: Hold) => Effect.sync(() => void settled.push([hold.amount, 0n])),
    record: (row: UsageRow) => rows.push(row)
  } as unknown as typeof Ledger.Service
  const settlement = makeSettlement({
    ledger,
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
    ledger: {} as typeof Ledger.Service,
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
