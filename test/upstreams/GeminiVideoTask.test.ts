/**
 * The Veo (Gemini API) video wire against the emulator over HTTP, through the
 * `gemini` channel type's `VideoAdapter`: an operation submitted and polled
 * until done (its video downloaded with the key, which the emulator demands)
 * and until failed, a submit the vendor refuses, and a content URI on another
 * host refused before the key could go there.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { VideoRequest } from "../../src/canonical/Video.ts"
import { MP4_BYTES } from "../../emulator/Mp4.ts"
import { UpstreamFailed } from "../../src/errors/GatewayError.ts"
import { geminiVideoWire } from "../../src/formats/gemini/videos/Wire.ts"
import type { Channel } from "../../src/upstreams/Adapter.ts"
import { withEmulator } from "../emulator/Support.ts"
import { runTask } from "../support/VideoTaskRun.ts"

const KEY = "sk-test-gemini-channel"
const STEP = 30
const MODEL = "veo-3.1-generate-preview"

const channel = (url: string): Channel => ({ type: "gemini", baseUrl: `${url}/v1beta`, settings: {} })

const request = (prompt: string, fields: Partial<VideoRequest> = {}): VideoRequest => ({
  model: "videoa-2-0-260128",
  prompt,
  references: [],
  ...fields
})

Deno.test("gemini video task over HTTP: submitted, polled to done, the video downloaded with the key", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const run = await runTask(
      geminiVideoWire,
      channel(emulator.url),
      KEY,
      request("a lighthouse at dusk", {
        seconds: 6,
        aspectRatio: "9:16",
        resolution: "1080p",
        references: [{ kind: "image", role: "first_frame", ref: "data:image/png;base64,iVBORw0KGgo=" }],
        metadata: { negativePrompt: "rain" }
      }),
      MODEL,
      STEP / 3
    )
    ok(!("refused" in run) && !("kind" in run.last))
    ok(run.upstreamId.startsWith(`models/${MODEL}/operations/`))
    ok(run.states.length > 1)
    deepStrictEqual([...new Set(run.states.map((state) => state.status))], ["in_progress", "completed"])
    strictEqual(run.last.content?.withKey, true)
    const submitted = emulator.requests.find((item) => item.method === "POST")!
    strictEqual(submitted.path, `/v1beta/models/${MODEL}:predictLongRunning`)
    strictEqual(submitted.key, KEY)
    deepStrictEqual(submitted.body, {
      instances: [{
        prompt: "a lighthouse at dusk",
        image: { bytesBase64Encoded: "iVBORw0KGgo=", mimeType: "image/png" }
      }],
      parameters: { negativePrompt: "rain", aspectRatio: "9:16", resolution: "1080p", durationSeconds: 6 }
    })
    const content = run.content!
    strictEqual(content.headers["x-goog-api-key"], KEY)
    strictEqual(content.response.status, 200)
    const bytes = await content.response.bytes()
    strictEqual(bytes.length, MP4_BYTES)
    strictEqual(new DataView(bytes.buffer).getUint32(60), 6000)
  })
})

Deno.test("gemini video task over HTTP: failed operations give a structured code and a caller-safe message", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const broken = await runTask(geminiVideoWire, channel(emulator.url), KEY, request("broken"), MODEL, STEP / 3)
    ok(!("refused" in broken) && !("kind" in broken.last))
    deepStrictEqual(broken.last, {
      status: "failed",
      progress: 100,
      error: { code: "internal", message: "Video generation failed due to an internal error." }
    })
    const unsafe = await runTask(geminiVideoWire, channel(emulator.url), KEY, request("unsafe"), MODEL, STEP / 3)
    ok(!("refused" in unsafe) && !("kind" in unsafe.last))
    strictEqual(unsafe.last.error?.code, "content_policy")
    strictEqual(unsafe.content, undefined)
  })
})

Deno.test("gemini video task over HTTP: refused submits, and a video URI on another host is never fetched", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const urlImage = await runTask(
      geminiVideoWire,
      channel(emulator.url),
      KEY,
      request("x", { references: [{ kind: "image", role: "first_frame", ref: "https://example.com/a.png" }] }),
      MODEL,
      STEP
    )
    ok("refused" in urlImage)
    strictEqual(urlImage.refused.kind, "rejected")
    const wrongKey = await runTask(geminiVideoWire, channel(emulator.url), "sk-test-wrong", request("x"), MODEL, STEP)
    ok("refused" in wrongKey)
    strictEqual(wrongKey.refused.kind, "unauthorized")

    // A vendor answer naming a foreign host: refused as bad-body, and no request leaves for it.
    emulator.setFaults([{
      match: { path: "/operations/" },
      status: 200,
      body: {
        name: "models/veo/operations/abc",
        done: true,
        response: {
          generateVideoResponse: { generatedSamples: [{ video: { uri: "https://collector.example/steal" } }] }
        }
      }
    }])
    const foreign = await runTask(geminiVideoWire, channel(emulator.url), KEY, request("x"), MODEL, STEP)
    ok(!("refused" in foreign))
    ok(foreign.last instanceof UpstreamFailed)
    strictEqual(foreign.last.kind, "bad-body")
    strictEqual(foreign.content, undefined)
  })
})
