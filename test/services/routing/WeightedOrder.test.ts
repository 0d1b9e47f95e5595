/**
 * The weighted order inside a priority tier, drawn from a seeded Effect
 * `Random`: the shares follow the weights, and one seed gives one sequence of
 * orders on every run, so the test cannot flake. Whatever the weights and
 * the draws, the order is a permutation with the zero weights last.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Random } from "effect"
import fc from "fast-check"
import { weightedOrder } from "../../../src/services/routing/WeightedOrder.ts"

/** A draw in [0, 1) from Effect's `Random` seeded with `seed`. */
const seeded = (seed: string): () => number =>
  Effect.runSync(Effect.map(Random.Random, (random) => () => random.nextDoubleUnsafe()).pipe(Random.withSeed(seed)))

const channels = [{ name: "a", weight: 1 }, { name: "b", weight: 3 }, { name: "c", weight: 6 }]

/** How often each channel came first in `rounds` orders drawn from `random`. */
const firstPicks = (random: () => number, rounds: number) => {
  const picks = new Map<string, number>()
  for (let index = 0; index < rounds; index++) {
    const first = weightedOrder(channels, (channel) => channel.weight, random)[0]
    picks.set(first.name, (picks.get(first.name) ?? 0) + 1)
  }
  return picks
}

Deno.test("weightedOrder: over 10,000 seeded picks each channel's share is within 3 points of its weight's share", () => {
  const total = channels.reduce((sum, channel) => sum + channel.weight, 0)
  const picks = firstPicks(seeded("weighted-order"), 10_000)
  for (const channel of channels) {
    const share = (picks.get(channel.name) ?? 0) / 10_000
    const expected = channel.weight / total
    ok(Math.abs(share - expected) <= 0.03, `${channel.name}: ${share} vs ${expected}`)
  }
})

Deno.test("weightedOrder: one seed gives one sequence of orders; another seed another", () => {
  const orders = (random: () => number) =>
    Array.from(
      { length: 20 },
      () => weightedOrder(channels, (channel) => channel.weight, random).map((channel) => channel.name).join("")
    )
  deepStrictEqual(orders(seeded("one")), orders(seeded("one")))
  ok(orders(seeded("one")).join() !== orders(seeded("two")).join())
})

Deno.test("weightedOrder: every item appears once; zero weights go last", () => {
  const order = weightedOrder([{ id: 1, w: 0 }, { id: 2, w: 5 }, { id: 3, w: 1 }], (item) => item.w, seeded("zero"))
  strictEqual(order.length, 3)
  strictEqual(order[2].id, 1)
})

Deno.test("weightedOrder: a draw just below 1 picks the last of the pool, a draw of 0 the first", () => {
  const names = (draw: number) => weightedOrder(channels, (channel) => channel.weight, () => draw).map((c) => c.name)
  deepStrictEqual(names(0), ["a", "b", "c"])
  deepStrictEqual(names(0.999999), ["c", "b", "a"])
})

Deno.test("weightedOrder: for any weights and draws, a permutation of the items with the zero weights last, in place", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1_000 })), { maxLength: 12 }),
      fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
      (weights, draws) => {
        const items = weights.map((weight, id) => ({ id, weight }))
        const order = weightedOrder(items, (item) => item.weight, () => draws.next().value)
        deepStrictEqual(order.map((item) => item.id).toSorted((a, b) => a - b), items.map((item) => item.id))
        const firstZero = order.findIndex((item) => item.weight === 0)
        if (firstZero >= 0) ok(order.slice(firstZero).every((item) => item.weight === 0))
        // The zero weights keep their given order.
        deepStrictEqual(order.filter((item) => item.weight === 0), items.filter((item) => item.weight === 0))
      }
    )
  )
})
