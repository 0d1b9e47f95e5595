/**
 * The meter's pure rules, with plain values: which usage is billed for each
 * way a request can end, how a stream step's delta moves the meter, and the
 * cost as USD.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { UpstreamFailed } from "../../src/errors/GatewayError.ts"
import {
  applyDelta,
  billedUsage,
  billsDelivered,
  costHeader,
  costUsd,
  emptyMeter,
  type Meter
} from "../../src/billing/Meter.ts"

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

Deno.test("billedUsage: a cut stream's delivered part is never billed above the output the hold was sized for", () => {
  const cut = meter({ usage: { inputTokens: 10, outputTokens: 1 }, deliveredCharacters: 4000, status: 502 })
  strictEqual(billedUsage(cut, 99, { outputCap: 50 })?.outputTokens, 50)
  strictEqual(billedUsage(cut, 99, { deliveredTokens: 20, outputCap: 50 })?.outputTokens, 20)
})

Deno.test("billsDelivered: only an answer without a final usage that delivered something is estimated", () => {
  strictEqual(billsDelivered(meter({ deliveredCharacters: 4 })), true)
  strictEqual(billsDelivered(meter({ deliveredCharacters: 4, usage: { inputTokens: 1, outputTokens: 1 } })), true)
  strictEqual(
    billsDelivered(meter({ deliveredCharacters: 4, usage: { inputTokens: 1, outputTokens: 1 }, final: true })),
    false
  )
  strictEqual(billsDelivered(meter({})), false)
})

Deno.test("applyDelta: after the final usage a later usage changes nothing", () => {
  const delta = {
    final: false,
    finished: false,
    deliveredCharacters: 0,
    deliveredText: undefined,
    failure: undefined,
    answerId: undefined,
    answer: undefined
  }
  const final = applyDelta(emptyMeter, { ...delta, usage: { inputTokens: 3, outputTokens: 4 }, final: true })
  const later = applyDelta(final, { ...delta, usage: { inputTokens: 9, outputTokens: 9 } })
  deepStrictEqual(later.usage, { inputTokens: 3, outputTokens: 4 })
  strictEqual(later.final, true)
  strictEqual(emptyMeter.usage, undefined, "applyDelta leaves its input alone")
})

Deno.test("costHeader and costUsd: quota units as USD, exact to six decimals", () => {
  strictEqual(costHeader(1_234_567n), "1.234567")
  strictEqual(costHeader(-1n), "-0.000001")
  strictEqual(costHeader(0n), "0.000000")
  strictEqual(costUsd(123n), 0.000123)
})
