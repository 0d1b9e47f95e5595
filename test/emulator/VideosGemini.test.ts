/**
 * The emulator's Veo task API as the Gemini API speaks it: submit over REST
 * (`predictLongRunning`; `@google/genai` 3.1 sends `models.generateVideos`
 * only in its Vertex mode, whose wire differs), poll with the official SDK's
 * `operations.getVideosOperation` and over REST until done, download the URI
 * with the key only, failures on demand, and the parameter checks.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import { GenerateVideosOperation, GoogleGenAI } from "@google/genai"
import { MP4_BYTES } from "../../emulator/Mp4.ts"
import { withEmulator } from "./Support.ts"

const KEY = "sk-test-gemini"
/** A phase step of the emulator's tasks: long enough that a loaded machine still sees each state it polls for. */
const STEP = 250
const MODEL = "veo-3.1-generate-preview"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const submit = (url: string, body: unknown, key = KEY, model = MODEL) =>
  fetch(`${url}/v1beta/models/${model}:predictLongRunning`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": key },
    body: JSON.stringify(body)
  })

const started = async (url: string, body: unknown): Promise<string> => {
  const response = await submit(url, body)
  strictEqual(response.status, 200)
  const operation = await response.json()
  ok(new RegExp(`^models/${MODEL}/operations/[0-9a-f]{12}$`).test(operation.name), operation.name)
  deepStrictEqual(Object.keys(operation), ["name"])
  return operation.name
}

/** Polls through the SDK until done. */
const untilDone = async (genai: GoogleGenAI, name: string) => {
  let operation = new GenerateVideosOperation()
  operation.name = name
  let polls = 0
  for (; polls < 100 && operation.done !== true; polls++) {
    operation = await genai.operations.getVideosOperation({ operation })
    if (operation.done !== true) await sleep(STEP / 4)
  }
  return { operation, polls }
}

Deno.test("emulator gemini videos: predictLongRunning, SDK polling to done, download with the key only", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: emulator.url, apiVersion: "v1beta" } })
    const name = await started(emulator.url, {
      instances: [{
        prompt: "a lighthouse at dusk",
        image: { bytesBase64Encoded: "iVBORw0KGgo=", mimeType: "image/png" },
        lastFrame: { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }
      }],
      parameters: { aspectRatio: "9:16", durationSeconds: 6, resolution: "1080p", negativePrompt: "rain" }
    })
    const running = await (await fetch(`${emulator.url}/v1beta/${name}`, { headers: { "x-goog-api-key": KEY } }))
      .json()
    deepStrictEqual(running, { name })
    const { operation, polls } = await untilDone(genai, name)
    ok(polls > 1)
    strictEqual(operation.done, true)
    strictEqual(operation.error, undefined)
    const uri = operation.response?.generatedVideos?.[0]?.video?.uri
    ok(
      uri !== undefined && uri.startsWith(`${emulator.url}/v1beta/files/`) && uri.endsWith(":download?alt=media"),
      String(uri)
    )

    const withHeader = await fetch(uri, { headers: { "x-goog-api-key": KEY } })
    strictEqual(withHeader.status, 200)
    strictEqual(withHeader.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await withHeader.arrayBuffer())
    strictEqual(bytes.length, MP4_BYTES)
    // mvhd duration at timescale 1000: the 6 seconds asked.
    strictEqual(new DataView(bytes.buffer).getUint32(60), 6000)
    const withQuery = await fetch(`${uri}&key=${KEY}`, { headers: { range: "bytes=0-7" } })
    strictEqual(withQuery.status, 206)
    deepStrictEqual(new Uint8Array(await withQuery.arrayBuffer()), bytes.slice(0, 8))
    const anonymous = await fetch(uri)
    strictEqual(anonymous.status, 401)
    strictEqual((await anonymous.json()).error.status, "UNAUTHENTICATED")
    const wrong = await fetch(uri, { headers: { "x-goog-api-key": "sk-test-wrong" } })
    strictEqual(wrong.status, 401)
    await wrong.body?.cancel()
  })
})

Deno.test("emulator gemini videos: without checked keys the download still needs some key", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: emulator.url, apiVersion: "v1beta" } })
    const { operation } = await untilDone(
      genai,
      await started(emulator.url, { instances: [{ prompt: "x" }], parameters: { sampleCount: 2 } })
    )
    const samples = operation.response?.generatedVideos ?? []
    strictEqual(samples.length, 2)
    const anonymous = await fetch(samples[1].video!.uri!)
    strictEqual(anonymous.status, 403)
    strictEqual((await anonymous.json()).error.status, "PERMISSION_DENIED")
    const first = new Uint8Array(await (await fetch(`${samples[0].video!.uri!}&key=k`)).arrayBuffer())
    const second = new Uint8Array(await (await fetch(`${samples[1].video!.uri!}&key=k`)).arrayBuffer())
    ok(first.some((byte, index) => byte !== second[index]))
  })
})

Deno.test("emulator gemini videos: content-policy stops and failures on demand", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: emulator.url, apiVersion: "v1beta" } })
    const filtered = await untilDone(genai, await started(emulator.url, { instances: [{ prompt: "unsafe" }] }))
    strictEqual(filtered.operation.error, undefined)
    strictEqual(filtered.operation.response?.raiMediaFilteredCount, 1)
    strictEqual(filtered.operation.response?.generatedVideos, undefined)
    ok((filtered.operation.response?.raiMediaFilteredReasons ?? []).length === 1)
    const broken = await untilDone(genai, await started(emulator.url, { instances: [{ prompt: "broken" }] }))
    deepStrictEqual(broken.operation.error, { code: 13, message: "Video generation failed due to an internal error." })
    const expired = await untilDone(genai, await started(emulator.url, { instances: [{ prompt: "expire" }] }))
    strictEqual(expired.operation.error?.code, 4)
    const unknown = new GenerateVideosOperation()
    unknown.name = `models/${MODEL}/operations/000000000000`
    await rejects(genai.operations.getVideosOperation({ operation: unknown }))
  })
})

Deno.test("emulator gemini videos: the checks the Gemini API makes", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const image = { bytesBase64Encoded: "iVBORw0KGgo=", mimeType: "image/png" }
    const refusals: Array<[unknown, RegExp]> = [
      [{}, /instances/],
      [{ instances: [{ prompt: "a" }, { prompt: "b" }] }, /instances/],
      [{ instances: [{}] }, /prompt/],
      [{ instances: [{ prompt: "x".repeat(32_001) }] }, /prompt/],
      [{ instances: [{ prompt: "x", image: { uri: "https://example.com/a.png" } }] }, /image/],
      [{ instances: [{ prompt: "x", lastFrame: image }] }, /lastFrame requires image/],
      [{ instances: [{ prompt: "x", referenceImages: [{ image, referenceType: "pose" }] }] }, /referenceImages/],
      [{ instances: [{ prompt: "x", video: "https://example.com/v.mp4" }] }, /video/],
      [{ instances: [{ prompt: "x" }], parameters: { aspectRatio: "1:1" } }, /aspectRatio/],
      [{ instances: [{ prompt: "x" }], parameters: { durationSeconds: 12 } }, /durationSeconds/],
      [{ instances: [{ prompt: "x" }], parameters: { resolution: "480p" } }, /resolution/],
      [{ instances: [{ prompt: "x" }], parameters: { personGeneration: "everyone" } }, /personGeneration/],
      [{ instances: [{ prompt: "x" }], parameters: { sampleCount: 5 } }, /sampleCount/],
      [{ instances: [{ prompt: "x" }], parameters: { generateAudio: true } }, /generateAudio` isn't supported/]
    ]
    for (const [body, message] of refusals) {
      const response = await submit(emulator.url, body)
      strictEqual(response.status, 400, JSON.stringify(body).slice(0, 100))
      const error = (await response.json()).error
      strictEqual(error.status, "INVALID_ARGUMENT")
      ok(message.test(error.message), `${error.message} for ${JSON.stringify(body).slice(0, 100)}`)
    }
    // Duration as its digits, an image alone, reference images.
    await started(emulator.url, { instances: [{ image }], parameters: { durationSeconds: "4" } })
    await started(emulator.url, {
      instances: [{ prompt: "x", referenceImages: [{ image, referenceType: "asset" }] }]
    })
    const wrong = await submit(emulator.url, { instances: [{ prompt: "x" }] }, "sk-test-wrong")
    strictEqual(wrong.status, 401)
    strictEqual((await wrong.json()).error.status, "UNAUTHENTICATED")
  })
})
