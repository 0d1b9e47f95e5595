/**
 * The router's health as seen from outside, over plain snapshots: the status
 * view (disabled, cooling or healthy; the cooldown's end in epoch seconds)
 * and what the prober tests (every key of a cooling or down channel, the
 * disabled keys of the others; the channel's test model, else its first
 * model mapped).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { type HealthBook, healthOf } from "../../../src/services/routing/ChannelHealth.ts"
import { healthViews, probeTargets } from "../../../src/services/routing/HealthViews.ts"
import { channel } from "./Fixtures.ts"

Deno.test("health view: disabled, cooling until the end (epoch seconds, floored), else healthy", () => {
  const channels = [channel(1), channel(2, { keys: [false, false] }), channel(3, { enabled: false }), channel(4)]
  const book: HealthBook = new Map()
  const cooling = healthOf(book, 1)
  cooling.cooldownUntil = 90_500
  cooling.failures = 2
  const at = (now: number) => healthViews(channels, book, now).map((view) => [view.state, view.cooldownUntil])
  deepStrictEqual(at(90_499), [["cooling", 90], ["disabled", undefined], ["disabled", undefined], [
    "healthy",
    undefined
  ]])
  deepStrictEqual(at(90_500)[0], ["healthy", undefined])
  const [first, second] = healthViews(channels, book, 0)
  strictEqual(first.consecutiveFailures, 2)
  deepStrictEqual(second.keys, [
    { position: 0, enabled: false, reason: "refused" },
    { position: 1, enabled: false, reason: "refused" }
  ])
})

Deno.test("probe targets: every key of a cooling or down channel, else its disabled keys; the test model first", () => {
  const channels = [
    channel(1, { keys: [true, true] }),
    channel(2, { keys: [true, false], modelMapping: { "gpt-test": "vendor-model" } }),
    channel(3, { keys: [true, true], settings: { test_model: "probe-model" } }),
    channel(4, { keys: [false], enabled: false }),
    channel(5, { keys: [false], models: [] })
  ]
  const book: HealthBook = new Map()
  healthOf(book, 1).cooldownUntil = 1_000
  healthOf(book, 3).down = true
  const targets = (now: number) =>
    probeTargets(channels, book, now).map((target) =>
      `${target.channel.id}/${target.key.position}:${target.upstreamModel}`
    )
  deepStrictEqual(targets(999), [
    "1/0:gpt-test",
    "1/1:gpt-test",
    "2/1:vendor-model",
    "3/0:probe-model",
    "3/1:probe-model"
  ])
  deepStrictEqual(targets(1_000), ["2/1:vendor-model", "3/0:probe-model", "3/1:probe-model"])
})
