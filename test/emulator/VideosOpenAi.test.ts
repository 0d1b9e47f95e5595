/**
 * The emulator's OpenAI videos API through the official `openai` SDK (create
 * sends multipart, remix JSON, downloadContent reads bytes) and raw HTTP (JSON
 * create, `Range`, refusals), with tasks moving queued → in_progress →
 * completed or failed on a short step, the key checked, and the task store
 * bounded.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI, { toFile } from "openai"
import { MP4_BYTES, mp4For } from "../../emulator/Mp4.ts"
import { rangeOf } from "../../emulator/VideoContent.ts"
import { makeVideoTasks, outcomeOf, PROMPT_BUDGET } from "../../emulator/VideoTasks.ts"
import { withEmulator } from "./Support.ts"

const KEY = "sk-test-videos"
/** A phase step of the emulator's tasks: long enough that a loaded machine still sees each state it polls for. */
const STEP = 250

const client = (url: string, apiKey = KEY) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `retrieve` until the video is final, recording each status seen. */
const untilFinal = async (openai: OpenAI, id: string) => {
  const seen: Array<string> = []
  for (let attempt = 0; attempt < 100; attempt++) {
    const video = await openai.videos.retrieve(id)
    if (seen.at(-1) !== video.status) seen.push(video.status)
    if (video.status === "completed" || video.status === "failed") return { video, seen }
    await sleep(STEP / 4)
  }
  throw new Error(`Video ${id} never finished.`)
}

const post = (url: string, path: string, body: unknown, key = KEY) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body)
  })

Deno.test("emulator videos: the MP4 bytes are a stable size, sniff as MP4, and differ per seed", () => {
  const bytes = mp4For(7, 8)
  strictEqual(bytes.length, MP4_BYTES)
  strictEqual(new TextDecoder().decode(bytes.slice(4, 8)), "ftyp")
  strictEqual(new TextDecoder().decode(bytes.slice(8, 12)), "isom")
  strictEqual(new TextDecoder().decode(bytes.slice(32, 36)), "moov")
  // mvhd duration at timescale 1000: 8 seconds.
  strictEqual(new DataView(bytes.buffer).getUint32(60), 8000)
  deepStrictEqual(mp4For(7, 8), bytes)
  ok(mp4For(8, 8).some((byte, index) => byte !== bytes[index]))
})

Deno.test("emulator videos: Range headers as RFC 9110 reads them", () => {
  deepStrictEqual(rangeOf(null, 100), undefined)
  deepStrictEqual(rangeOf("bytes=0-9", 100), { start: 0, end: 9 })
  deepStrictEqual(rangeOf("bytes=90-", 100), { start: 90, end: 99 })
  deepStrictEqual(rangeOf("bytes=-10", 100), { start: 90, end: 99 })
  deepStrictEqual(rangeOf("bytes=50-500", 100), { start: 50, end: 99 })
  strictEqual(rangeOf("bytes=100-", 100), "unsatisfiable")
  strictEqual(rangeOf("bytes=9-3", 100), "unsatisfiable")
  strictEqual(rangeOf("bytes=0-1,5-6", 100), undefined)
  strictEqual(rangeOf("items=0-1", 100), undefined)
})

Deno.test("emulator videos: prompt markers choose the outcome; the store keeps at most its cap", () => {
  strictEqual(outcomeOf("a cat"), "succeed")
  strictEqual(outcomeOf("an unsafe cat"), "content_policy")
  strictEqual(outcomeOf("a broken cat"), "fail")
  strictEqual(outcomeOf("cats expire"), "expire")
  strictEqual(outcomeOf("stall the cat"), "stall")
  const store = makeVideoTasks(10, 3)
  const ids = ["a", "b", "c", "d", "e"].map((id) =>
    store.add({ id, vendor: "openai", model: "m", prompt: "p", seconds: 4, size: "1x1", extras: {} }).id
  )
  strictEqual(store.size(), 3)
  strictEqual(store.get("openai", ids[0]), undefined)
  strictEqual(store.get("openai", ids[1]), undefined)
  ok(store.get("openai", "e") !== undefined)
  strictEqual(store.get("ark", "e"), undefined)
  const task = store.get("openai", "e")!
  deepStrictEqual(store.stateOf(task, task.createdAt), { phase: "queued", progress: 0 })
  strictEqual(store.stateOf(task, task.createdAt + 25).phase, "running")
  strictEqual(store.stateOf(task, task.createdAt + 25).progress, 50)
  deepStrictEqual(store.stateOf(task, task.createdAt + 40), {
    phase: "succeeded",
    progress: 100,
    finishedAt: task.createdAt + 40
  })
  strictEqual(store.byToken(task.contentToken), task)
  strictEqual(store.cancel(task, task.createdAt + 40), false)
  store.remove(task)
  strictEqual(store.get("openai", "e"), undefined)
  strictEqual(store.byToken(task.contentToken), undefined)
  const stalled = store.add({
    id: "s",
    vendor: "openai",
    model: "m",
    prompt: "stall",
    seconds: 4,
    size: "1x1",
    extras: {}
  })
  strictEqual(store.stateOf(stalled, stalled.createdAt + 1_000_000).phase, "running")
})

Deno.test("emulator videos: the store also keeps its prompts within a character budget", () => {
  const store = makeVideoTasks(10, 1_000)
  const prompt = "p".repeat(Math.ceil(PROMPT_BUDGET / 4))
  for (const id of ["a", "b", "c", "d", "e"]) {
    store.add({ id, vendor: "openai", model: "m", prompt, seconds: 4, size: "1x1", extras: {} })
  }
  // Four prompts fill the budget exactly; the fifth pushes the oldest out.
  strictEqual(store.size(), 4)
  strictEqual(store.get("openai", "a"), undefined)
  ok(store.get("openai", "b") !== undefined)
})

Deno.test("emulator videos: SDK create (multipart), retrieve through the states, download with Range", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const openai = client(emulator.url)
    const created = await openai.videos.create({
      prompt: "a cat on a skateboard",
      model: "sora-2",
      seconds: "8",
      size: "1280x720",
      input_reference: await toFile(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), "ref.png", { type: "image/png" })
    })
    const request = emulator.requests.at(-1)!
    ok(request.headers["content-type"].startsWith("multipart/form-data"))
    deepStrictEqual(request.body, {
      prompt: "a cat on a skateboard",
      model: "sora-2",
      seconds: "8",
      size: "1280x720",
      input_reference: { filename: "ref.png", type: "image/png", size: 4 }
    })
    ok(/^video_[0-9a-f]{48}$/.test(created.id))
    strictEqual(created.object, "video")
    strictEqual(created.status, "queued")
    strictEqual(created.progress, 0)
    strictEqual(created.seconds, "8")
    strictEqual(created.size, "1280x720")
    strictEqual(created.completed_at, null)
    strictEqual(created.error, null)
    strictEqual(created.remixed_from_video_id, null)

    const { video, seen } = await untilFinal(openai, created.id)
    deepStrictEqual(seen.at(-1), "completed")
    ok(seen.includes("in_progress"), `saw ${seen.join(", ")}`)
    strictEqual(video.progress, 100)
    ok(video.completed_at !== null && video.completed_at >= video.created_at)
    strictEqual(video.expires_at, video.completed_at! + 3600)

    const download = await openai.videos.downloadContent(created.id)
    strictEqual(download.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await download.arrayBuffer())
    strictEqual(bytes.length, MP4_BYTES)
    strictEqual(new TextDecoder().decode(bytes.slice(4, 8)), "ftyp")
    const again = await openai.videos.downloadContent(created.id)
    deepStrictEqual(new Uint8Array(await again.arrayBuffer()), bytes)

    const ranged = await fetch(`${emulator.url}/v1/videos/${created.id}/content`, {
      headers: { authorization: `Bearer ${KEY}`, range: "bytes=100-199" }
    })
    strictEqual(ranged.status, 206)
    strictEqual(ranged.headers.get("content-range"), `bytes 100-199/${MP4_BYTES}`)
    strictEqual(ranged.headers.get("content-length"), "100")
    deepStrictEqual(new Uint8Array(await ranged.arrayBuffer()), bytes.slice(100, 200))
    const past = await fetch(`${emulator.url}/v1/videos/${created.id}/content`, {
      headers: { authorization: `Bearer ${KEY}`, range: `bytes=${MP4_BYTES}-` }
    })
    strictEqual(past.status, 416)
    strictEqual(past.headers.get("content-range"), `bytes */${MP4_BYTES}`)
    await past.body?.cancel()
    const thumbnail = await openai.videos.downloadContent(created.id, { variant: "thumbnail" })
    strictEqual(thumbnail.headers.get("content-type"), "image/png")
    await thumbnail.body?.cancel()
  })
})

Deno.test("emulator videos: SDK remix of a completed video; remix of an unfinished or unknown one refused", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const openai = client(emulator.url)
    const source = await openai.videos.create({ prompt: "a dog", seconds: "4" })
    await rejects(openai.videos.remix(source.id, { prompt: "a dog, in the rain" }), (error: unknown) => {
      ok(error instanceof OpenAI.BadRequestError)
      return true
    })
    await untilFinal(openai, source.id)
    const remix = await openai.videos.remix(source.id, { prompt: "a dog, in the rain" })
    strictEqual(emulator.requests.at(-1)?.headers["content-type"], "application/json")
    strictEqual(remix.remixed_from_video_id, source.id)
    strictEqual(remix.status, "queued")
    strictEqual(remix.prompt, "a dog, in the rain")
    strictEqual(remix.seconds, "4")
    const done = await untilFinal(openai, remix.id)
    strictEqual(done.video.status, "completed")
    await rejects(openai.videos.remix("video_unknown", { prompt: "x" }), (error: unknown) => {
      ok(error instanceof OpenAI.NotFoundError)
      strictEqual((error as InstanceType<typeof OpenAI.NotFoundError>).code, "video_not_found")
      return true
    })
  })
})

Deno.test("emulator videos: failures on demand — content policy and generic — and no content for them", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const openai = client(emulator.url)
    const unsafe = await openai.videos.create({ prompt: "something unsafe" })
    const blocked = await untilFinal(openai, unsafe.id)
    strictEqual(blocked.video.status, "failed")
    deepStrictEqual(blocked.video.error, {
      code: "moderation_blocked",
      message: "Your request was blocked by our moderation system."
    })
    const broken = await openai.videos.create({ prompt: "a broken render" })
    const failed = await untilFinal(openai, broken.id)
    strictEqual(failed.video.status, "failed")
    strictEqual(failed.video.error?.code, "video_generation_failed")
    await rejects(openai.videos.downloadContent(broken.id), (error: unknown) => {
      ok(error instanceof OpenAI.NotFoundError)
      return true
    })
  })
})

Deno.test("emulator videos: JSON create with {image_url}, and the fields OpenAI refuses, each naming its param", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const ok200 = await post(emulator.url, "/v1/videos", {
      prompt: "x",
      seconds: 12,
      input_reference: { image_url: "https://example.com/a.png" }
    })
    strictEqual(ok200.status, 200)
    strictEqual((await ok200.json()).seconds, "12")
    const refusals: Array<[unknown, string]> = [
      [{}, "prompt"],
      [{ prompt: "" }, "prompt"],
      [{ prompt: "x".repeat(32_001) }, "prompt"],
      [{ prompt: "x", seconds: "5" }, "seconds"],
      [{ prompt: "x", size: "1792x1024" }, "size"],
      [{ prompt: "x", model: 7 }, "model"],
      [{ prompt: "x", input_reference: "https://example.com/a.png" }, "input_reference"],
      [{ prompt: "x", metadata: {} }, "metadata"]
    ]
    for (const [body, param] of refusals) {
      const response = await post(emulator.url, "/v1/videos", body)
      strictEqual(response.status, 400, JSON.stringify(body).slice(0, 80))
      const error = (await response.json()).error
      strictEqual(error.param, param)
      strictEqual(error.type, "invalid_request_error")
    }
    const pro = await post(emulator.url, "/v1/videos", { prompt: "x", model: "sora-2-pro", size: "1792x1024" })
    strictEqual(pro.status, 200)
    await pro.body?.cancel()
    // A model that is not OpenAI's own stands in for a compatible vendor: any whole seconds 1–60, any WxH.
    const other = await post(emulator.url, "/v1/videos", {
      prompt: "x",
      model: "mini-2.0",
      seconds: "15",
      size: "854x480"
    })
    strictEqual(other.status, 200)
    strictEqual((await other.json()).seconds, "15")
    const form = new FormData()
    form.set("prompt", "x")
    form.set("input_reference", new File([new Uint8Array(3)], "a.gif", { type: "image/gif" }))
    const gif = await fetch(`${emulator.url}/v1/videos`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}` },
      body: form
    })
    strictEqual(gif.status, 400)
    strictEqual((await gif.json()).error.param, "input_reference")
  })
})

Deno.test("emulator videos: the key is checked on every route; unknown ids are 404", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const good = client(emulator.url)
    const wrong = client(emulator.url, "sk-test-wrong")
    await rejects(wrong.videos.create({ prompt: "x" }), OpenAI.AuthenticationError)
    const video = await good.videos.create({ prompt: "x" })
    await rejects(wrong.videos.retrieve(video.id), OpenAI.AuthenticationError)
    await rejects(wrong.videos.remix(video.id, { prompt: "y" }), OpenAI.AuthenticationError)
    await rejects(wrong.videos.downloadContent(video.id), OpenAI.AuthenticationError)
    await rejects(good.videos.retrieve("video_nope"), OpenAI.NotFoundError)
    await rejects(good.videos.downloadContent("video_nope"), OpenAI.NotFoundError)
  })
})

Deno.test("emulator videos: faults apply to the video routes, and reset forgets the tasks", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const openai = client(emulator.url)
    emulator.setFaults([{ match: { path: "/v1/videos" }, status: 500, times: 1 }])
    await rejects(openai.videos.create({ prompt: "x" }), OpenAI.InternalServerError)
    const video = await openai.videos.create({ prompt: "x" })
    emulator.reset()
    await rejects(openai.videos.retrieve(video.id), OpenAI.NotFoundError)
  })
})
