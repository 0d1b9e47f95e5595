/**
 * The router's try order over plain snapshots: priority tiers highest first,
 * channels in cooldown after every ready one, disabled channels and keys left
 * out, each channel's keys in rotation, the model mapped per channel, the
 * token's allow-list applied; and, for any catalog, exactly one candidate per
 * enabled key of an enabled channel serving the model. Draws come from a
 * seeded `Random`, so the order is reproducible.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  type Candidate,
  isAllowed,
  type KeyCursor,
  keysInOrder,
  modelsFor,
  orderCandidates
} from "../../../src/services/routing/CandidateOrder.ts"
import { type HealthBook, healthOf } from "../../../src/services/routing/ChannelHealth.ts"
import { channel, principalOf, seeded, snapshotOf } from "./Fixtures.ts"

const MODEL = "gpt-test"

/** `channel-id/key` for each candidate, in order. */
const names = (candidates: ReadonlyArray<Candidate>) =>
  candidates.map((candidate) => `${candidate.channel.id}/${candidate.key.position}`)

Deno.test("candidates: tiers highest first, cooling channels after every ready one, disabled ones left out", () => {
  const snapshot = snapshotOf([
    channel(1, { priority: 0 }),
    channel(2, { priority: 10 }),
    channel(3, { priority: 5 }),
    channel(4, { priority: 10, enabled: false }),
    channel(5, { priority: 5, keys: [false] })
  ])
  const book: HealthBook = new Map()
  healthOf(book, 2).cooldownUntil = 2_000
  const order = (now: number) =>
    names(orderCandidates(snapshot, principalOf(), MODEL, now, book, new Map(), seeded("tiers")))
  deepStrictEqual(order(1_999), ["3/0", "1/0", "2/0"])
  deepStrictEqual(order(2_000), ["2/0", "3/0", "1/0"])
})

Deno.test("candidates: the model mapped per channel; the token's allow-list and the group decide; none is empty", () => {
  const snapshot = snapshotOf([channel(1, { modelMapping: { [MODEL]: "vendor-model" } }), channel(2)])
  const candidates = orderCandidates(snapshot, principalOf(), MODEL, 0, new Map(), new Map(), seeded("map"))
  deepStrictEqual(
    candidates.map((candidate) => [candidate.channel.id, candidate.upstreamModel]).sort(),
    [[1, "vendor-model"], [2, MODEL]]
  )
  const none = (group: string, models: ReadonlyArray<string> | undefined, model = MODEL) =>
    orderCandidates(snapshot, principalOf(group, models), model, 0, new Map(), new Map(), seeded("none")).length
  strictEqual(none("default", ["other"]), 0)
  strictEqual(none("vip", undefined), 0)
  strictEqual(none("default", undefined, "unknown"), 0)
  strictEqual(none("default", [MODEL]), 2)
})

Deno.test("candidates: each call starts one key further along; disabled keys never appear", () => {
  const item = channel(1, { keys: [true, false, true, true] })
  const cursor: KeyCursor = new Map()
  const positions = () => keysInOrder(cursor, item).map((key) => key.position)
  deepStrictEqual(positions(), [0, 2, 3])
  deepStrictEqual(positions(), [2, 3, 0])
  deepStrictEqual(positions(), [3, 0, 2])
  deepStrictEqual(positions(), [0, 2, 3])
  deepStrictEqual(keysInOrder(cursor, channel(2, { keys: [false, true] })).map((key) => key.position), [1])
  strictEqual(cursor.has(2), false)
})

Deno.test("candidates: one seed gives one order; the shares inside a tier follow the weights", () => {
  const snapshot = snapshotOf([channel(1, { weight: 1 }), channel(2, { weight: 3 }), channel(3, { weight: 6 })])
  const orders = (seed: string) => {
    const draw = seeded(seed)
    return Array.from(
      { length: 2_000 },
      () => names(orderCandidates(snapshot, principalOf(), MODEL, 0, new Map(), new Map(), draw)).join()
    )
  }
  deepStrictEqual(orders("one"), orders("one"))
  const firsts = orders("shares").map((order) => order.split(",")[0])
  const share = (id: number) => firsts.filter((first) => first === `${id}/0`).length / firsts.length
  ok(Math.abs(share(3) - 0.6) < 0.05 && Math.abs(share(1) - 0.1) < 0.05, `${share(1)} ${share(3)}`)
})

Deno.test("candidates: for any catalog, one candidate per enabled key of each enabled channel, tiers in order", () => {
  const channels = fc.uniqueArray(
    fc.record({
      id: fc.integer({ min: 1, max: 40 }),
      priority: fc.integer({ min: 0, max: 3 }),
      weight: fc.integer({ min: 0, max: 5 }),
      enabled: fc.boolean(),
      keys: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
      cooling: fc.boolean()
    }),
    { selector: (spec) => spec.id, maxLength: 10 }
  )
  fc.assert(
    fc.property(channels, fc.string(), (specs, seed) => {
      const snapshot = snapshotOf(specs.map((spec) => channel(spec.id, spec)))
      const book: HealthBook = new Map()
      for (const spec of specs) if (spec.cooling) healthOf(book, spec.id).cooldownUntil = 10
      const order = orderCandidates(snapshot, principalOf(), MODEL, 5, book, new Map(), seeded(seed))
      const expected = specs.flatMap((spec) =>
        spec.enabled ? spec.keys.flatMap((enabled, position) => enabled ? [`${spec.id}/${position}`] : []) : []
      )
      deepStrictEqual(names(order).toSorted(), expected.toSorted())
      const cooling = (candidate: Candidate) => specs.find((spec) => spec.id === candidate.channel.id)!.cooling
      const firstCooling = order.findIndex(cooling)
      if (firstCooling >= 0) ok(order.slice(firstCooling).every(cooling))
      for (const part of [order.filter((c) => !cooling(c)), order.filter(cooling)]) {
        const priorities = part.map((candidate) => candidate.channel.priority)
        deepStrictEqual(priorities, priorities.toSorted((a, b) => b - a))
      }
    })
  )
})

Deno.test("models: the group's models the token may use, sorted", () => {
  const snapshot = snapshotOf([channel(1, { models: ["b", "a"] }), channel(2, { models: ["c"] })])
  deepStrictEqual(modelsFor(snapshot, principalOf()), ["a", "b", "c"])
  deepStrictEqual(modelsFor(snapshot, principalOf("default", ["c", "a", "z"])), ["a", "c"])
  deepStrictEqual(modelsFor(snapshot, principalOf("vip")), [])
  strictEqual(isAllowed(principalOf("default", []), "a"), false)
})
