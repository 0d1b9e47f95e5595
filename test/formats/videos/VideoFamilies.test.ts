/**
 * The video families as pure functions: default family by name, public task
 * ids (shape, randomness, no relation to anything but the family), the
 * default billed durations, the error envelope by family and route, and
 * asset ids.
 */
import { deepStrictEqual, notStrictEqual, ok, strictEqual } from "node:assert/strict"
import { assetIdOf, isAssetId, newAssetId } from "../../../src/domain/AssetId.ts"
import {
  billedSeconds,
  DEFAULT_VIDEO_SECONDS,
  defaultVideoFamily,
  isVideoFamily,
  isVideoTaskId,
  newVideoTaskId,
  randomToken,
  VIDEO_FAMILIES,
  videoErrorEnvelope
} from "../../../src/formats/videos/VideoFamilies.ts"

Deno.test("defaultVideoFamily: videoa-* → videoa, mini-2.0 → mini-2.0, anything else → openai-video", () => {
  strictEqual(defaultVideoFamily("videoa-2-0-260128"), "videoa")
  strictEqual(defaultVideoFamily("videoa-2-0-fast-260128"), "videoa")
  strictEqual(defaultVideoFamily("mini-2.0"), "mini-2.0")
  strictEqual(defaultVideoFamily("mini-2.0-hd"), "openai-video")
  strictEqual(defaultVideoFamily("videoa"), "openai-video")
  strictEqual(defaultVideoFamily("sora-2"), "openai-video")
  strictEqual(defaultVideoFamily(""), "openai-video")
  ok(VIDEO_FAMILIES.every(isVideoFamily))
  ok(!isVideoFamily("dall-e-3"))
  ok(!isVideoFamily(undefined))
})

Deno.test("newVideoTaskId: mini-2.0_<32 characters> for mini-2.0, video_<32 characters> otherwise; never repeats", () => {
  const mini = newVideoTaskId("mini-2.0")
  ok(/^mini-2\.0_[A-Za-z0-9]{32}$/.test(mini), mini)
  strictEqual(mini.length, "mini-2.0_".length + 32)
  for (const family of ["videoa", "openai-video"] as const) {
    const id = newVideoTaskId(family)
    ok(/^video_[A-Za-z0-9]{32}$/.test(id), id)
    ok(isVideoTaskId(id))
  }
  ok(isVideoTaskId(mini))
  const seen = new Set(Array.from({ length: 2000 }, () => newVideoTaskId("openai-video")))
  strictEqual(seen.size, 2000)
  ok(!isVideoTaskId("video_short"))
  ok(!isVideoTaskId(`video_${"a".repeat(31)}\u0000`))
  ok(!isVideoTaskId(`task_${"a".repeat(32)}`))
})

Deno.test("randomToken: every character of the alphabet turns up, none far more often than another", () => {
  const counts = new Map<string, number>()
  for (const character of randomToken(62 * 400)) counts.set(character, (counts.get(character) ?? 0) + 1)
  strictEqual(counts.size, 62)
  for (const count of counts.values()) ok(count > 250 && count < 600, `count ${count}`)
})

Deno.test("DEFAULT_VIDEO_SECONDS: OpenAI's 4, Ark's 5, mini-2.0's minimum; billedSeconds uses it only when none asked", () => {
  deepStrictEqual(DEFAULT_VIDEO_SECONDS, { videoa: 5, "mini-2.0": 4, "openai-video": 4 })
  strictEqual(billedSeconds("videoa", undefined), 5)
  strictEqual(billedSeconds("openai-video", undefined), 4)
  strictEqual(billedSeconds("openai-video", 12), 12)
  strictEqual(billedSeconds("mini-2.0", 15), 15)
})

Deno.test("videoErrorEnvelope: flat for the first video family on the OpenAI-style routes, gateway elsewhere", () => {
  strictEqual(videoErrorEnvelope("videoa", "videos"), "flat")
  strictEqual(videoErrorEnvelope("videoa", "remix"), "flat")
  strictEqual(videoErrorEnvelope("videoa", "unified"), "gateway")
  strictEqual(videoErrorEnvelope("mini-2.0", "videos"), "gateway")
  strictEqual(videoErrorEnvelope("openai-video", "videos"), "gateway")
  strictEqual(videoErrorEnvelope(undefined, "videos"), "gateway")
})

Deno.test("newAssetId: asset-<13-digit timestamp>-<16 characters>; isAssetId and assetIdOf agree", () => {
  const id = newAssetId(1_764_000_000_123)
  ok(/^asset-1764000000123-[a-z0-9]{16}$/.test(id), id)
  ok(isAssetId(id))
  notStrictEqual(newAssetId(1_764_000_000_123), id)
  strictEqual(assetIdOf(`asset://${id}`), id)
  strictEqual(assetIdOf("https://example.com/a.png"), undefined)
  ok(!isAssetId("asset-1-x"))
  ok(!isAssetId(`${id}\u0000`))
  ok(!isAssetId(`../${id}`))
})
