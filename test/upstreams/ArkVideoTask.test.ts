/**
 * The Ark video wire against the emulator over HTTP, through the `ark`
 * channel type's `VideoAdapter`: a task submitted and polled until completed
 * (its bytes fetched from the result URL without the key) and until failed,
 * and a submit the vendor refuses classified as `rejected`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { VideoRequest } from "../../src/canonical/Video.ts"
import { MP4_BYTES } from "../../emulator/Mp4.ts"
import { arkVideoWire } from "../../src/formats/ark/videos/Wire.ts"
import type { Channel } from "../../src/upstreams/Adapter.ts"
import { withEmulator } from "../emulator/Support.ts"
import { runTask } from "../support/VideoTaskRun.ts"

const KEY = "sk-test-ark-channel"
/**
 * The emulator's task step (milliseconds): long enough that the first poll, a third of a step after the submit, sees
 * `queued` even on a loaded machine (at 30 ms a busy run's first poll came after the step).
 */
const STEP = 300
const MODEL = "doubao-seedance-2-0-260128"

const channel = (url: string): Channel => ({ type: "ark", baseUrl: `${url}/api/v3`, settings: {} })

const request = (prompt: string, fields: Partial<VideoRequest> = {}): VideoRequest => ({
  model: "videoa-2-0-260128",
  prompt,
  references: [],
  ...fields
})

Deno.test("ark video task over HTTP: submitted, polled through queued and running to completed, bytes fetched", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const run = await runTask(
      arkVideoWire,
      channel(emulator.url),
      KEY,
      request("a fox in the snow", {
        seconds: 8,
        size: "1280x720",
        watermark: false,
        generateAudio: false,
        references: [
          { kind: "image", role: "first_frame", ref: "https://example.com/first.png" },
          { kind: "image", role: "last_frame", ref: "https://example.com/last.png" }
        ],
        metadata: { seed: 11 }
      }),
      MODEL,
      STEP / 3
    )
    ok(!("refused" in run))
    ok(/^cgt-/.test(run.upstreamId))
    const statuses = [...new Set(run.states.map((state) => state.status))]
    deepStrictEqual(statuses, ["queued", "in_progress", "completed"])
    strictEqual(run.last.status, "completed")
    ok(!("kind" in run.last))
    strictEqual(run.last.seconds, 8)
    strictEqual(run.last.fps, 24)
    strictEqual(run.last.content?.withKey, false)
    ok(run.last.content?.expiresAt !== undefined && run.last.content.expiresAt > Date.now() / 1000 + 86_000)
    // The submit as Ark received it.
    const submitted = emulator.requests.find((item) => item.method === "POST")!
    strictEqual(submitted.headers.authorization, `Bearer ${KEY}`)
    deepStrictEqual(submitted.body, {
      seed: 11,
      model: MODEL,
      content: [
        { type: "text", text: "a fox in the snow" },
        { type: "image_url", image_url: { url: "https://example.com/first.png" }, role: "first_frame" },
        { type: "image_url", image_url: { url: "https://example.com/last.png" }, role: "last_frame" }
      ],
      ratio: "16:9",
      resolution: "720p",
      duration: 8,
      watermark: false,
      generate_audio: false
    })
    // The result URL was fetched without the key, and gave the video.
    const content = run.content!
    strictEqual(content.headers.authorization, undefined)
    strictEqual(content.response.status, 200)
    strictEqual(content.response.headers.get("content-type"), "video/mp4")
    strictEqual((await content.response.bytes()).length, MP4_BYTES)
  })
})

Deno.test("ark video task over HTTP: failed tasks give a structured code and a caller-safe message", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const unsafe = await runTask(arkVideoWire, channel(emulator.url), KEY, request("unsafe"), MODEL, STEP / 3)
    ok(!("refused" in unsafe) && !("kind" in unsafe.last))
    strictEqual(unsafe.last.status, "failed")
    deepStrictEqual(unsafe.last.error, {
      code: "content_policy",
      message: "The request failed because the output video may contain sensitive information."
    })
    strictEqual(unsafe.content, undefined)
    const broken = await runTask(arkVideoWire, channel(emulator.url), KEY, request("broken"), MODEL, STEP / 3)
    ok(!("refused" in broken) && !("kind" in broken.last))
    strictEqual(broken.last.error?.code, "InternalServiceError")
    const expired = await runTask(arkVideoWire, channel(emulator.url), KEY, request("expire"), MODEL, STEP / 3)
    ok(!("refused" in expired) && !("kind" in expired.last))
    deepStrictEqual([expired.last.status, expired.last.error?.code], ["failed", "expired"])
  })
})

Deno.test("ark video task over HTTP: a submit Ark refuses, a wrong key, and a spent account are classified", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const refused = await runTask(
      arkVideoWire,
      channel(emulator.url),
      KEY,
      request("x", { aspectRatio: "2:1" }),
      MODEL,
      STEP
    )
    ok("refused" in refused)
    strictEqual(refused.refused.kind, "rejected")
    ok(refused.refused.message.includes("ratio"))
    const wrongKey = await runTask(arkVideoWire, channel(emulator.url), "sk-test-wrong", request("x"), MODEL, STEP)
    ok("refused" in wrongKey)
    strictEqual(wrongKey.refused.kind, "unauthorized")
    emulator.setFaults([{
      match: { path: "/contents/generations/tasks" },
      status: 403,
      body: { error: { code: "AccountOverdueError", message: "overdue", param: "", type: "Forbidden" } }
    }])
    const overdue = await runTask(arkVideoWire, channel(emulator.url), KEY, request("x"), MODEL, STEP)
    ok("refused" in overdue)
    strictEqual(overdue.refused.kind, "quota")
  })
})
