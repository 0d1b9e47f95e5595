import { ok, strictEqual } from "node:assert/strict"
import { weightedOrder } from "../../src/services/ChannelRouter.ts"

Deno.test("weightedOrder: over 10,000 picks each channel's share is within 3 points of its weight's share", () => {
  const channels = [{ name: "a", weight: 1 }, { name: "b", weight: 3 }, { name: "c", weight: 6 }]
  const total = channels.reduce((sum, channel) => sum + channel.weight, 0)
  const picks = new Map<string, number>()
  for (let index = 0; index < 10_000; index++) {
    const first = weightedOrder(channels, (channel) => channel.weight)[0]
    picks.set(first.name, (picks.get(first.name) ?? 0) + 1)
  }
  for (const channel of channels) {
    const share = (picks.get(channel.name) ?? 0) / 10_000
    const expected = channel.weight / total
    ok(Math.abs(share - expected) <= 0.03, `${channel.name}: ${share} vs ${expected}`)
  }
})

Deno.test("weightedOrder: every item appears once; zero weights go last", () => {
  const order = weightedOrder([{ id: 1, w: 0 }, { id: 2, w: 5 }, { id: 3, w: 1 }], (item) => item.w)
  strictEqual(order.length, 3)
  strictEqual(order[2].id, 1)
})
