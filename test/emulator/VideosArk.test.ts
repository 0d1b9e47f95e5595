/**
 * The emulator's Ark content generation tasks for video, over raw HTTP (Ark
 * has no official TypeScript SDK): submit, poll through queued → running →
 * succeeded with the vendor's fields, the result URL served without the key
 * (with `Range`), failures on demand, cancel, expiry, the checks Ark makes
 * (each naming its `param`), and the key.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { MP4_BYTES } from "../../emulator/Mp4.ts"
import { withEmulator } from "./Support.ts"

const KEY = "sk-test-ark"
/** A phase step of the emulator's tasks: long enough that a loaded machine still sees each state it polls for. */
const STEP = 250
const TASKS = "/api/v3/contents/generations/tasks"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const call = (url: string, method: string, path: string, body?: unknown, key = KEY) =>
  fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const submit = async (url: string, body: Record<string, unknown>): Promise<string> => {
  const response = await call(url, "POST", TASKS, body)
  strictEqual(response.status, 200)
  const answer = await response.json()
  ok(/^cgt-\d{14}-[0-9a-f]{5}$/.test(answer.id), answer.id)
  deepStrictEqual(Object.keys(answer), ["id"])
  return answer.id
}

const text = (prompt: string) => [{ type: "text", text: prompt }]

/** Polls until the task is final, recording the statuses seen. */
const untilFinal = async (url: string, id: string) => {
  const seen: Array<string> = []
  for (let attempt = 0; attempt < 100; attempt++) {
    const task = await (await call(url, "GET", `${TASKS}/${id}`)).json()
    if (seen.at(-1) !== task.status) seen.push(task.status)
    if (!["queued", "running"].includes(task.status)) return { task, seen }
    await sleep(STEP / 4)
  }
  throw new Error(`Task ${id} never finished.`)
}

Deno.test("emulator ark videos: a task runs to succeeded with the vendor's fields; its URL needs no key", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const id = await submit(emulator.url, {
      model: "doubao-seedance-2-0-260128",
      content: [
        { type: "text", text: "a fox in the snow" },
        { type: "image_url", image_url: { url: "https://example.com/first.png" }, role: "first_frame" },
        { type: "image_url", image_url: { url: "https://example.com/last.png" }, role: "last_frame" }
      ],
      ratio: "16:9",
      duration: 5,
      resolution: "720p",
      watermark: false,
      generate_audio: true,
      seed: 42
    })
    const first = await (await call(emulator.url, "GET", `${TASKS}/${id}`)).json()
    strictEqual(first.status, "queued")
    strictEqual(first.error, null)
    strictEqual(first.content, undefined)
    const { task, seen } = await untilFinal(emulator.url, id)
    deepStrictEqual(seen.at(-1), "succeeded")
    ok(seen.includes("running"), seen.join(", "))
    strictEqual(task.model, "doubao-seedance-2-0-260128")
    strictEqual(task.duration, 5)
    strictEqual(task.ratio, "16:9")
    strictEqual(task.resolution, "720p")
    strictEqual(task.framespersecond, 24)
    strictEqual(task.seed, 42)
    strictEqual(task.generate_audio, true)
    strictEqual(task.execution_expires_after, 172800)
    // The vendor's own sample: 720p 16:9, 5 s → 108,900 tokens.
    deepStrictEqual(task.usage, { completion_tokens: 108900, total_tokens: 108900 })
    ok(task.updated_at >= task.created_at)
    const url: string = task.content.video_url
    ok(/\/_emulator\/videos\/[0-9a-f]{32}\.mp4$/.test(url), url)
    const video = await fetch(url)
    strictEqual(video.status, 200)
    strictEqual(video.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await video.arrayBuffer())
    strictEqual(bytes.length, MP4_BYTES)
    const tail = await fetch(url, { headers: { range: "bytes=-16" } })
    strictEqual(tail.status, 206)
    deepStrictEqual(new Uint8Array(await tail.arrayBuffer()), bytes.slice(-16))
    const guessed = await fetch(url.replace(/[0-9a-f]{32}/, "0".repeat(32)))
    strictEqual(guessed.status, 404)
    await guessed.body?.cancel()
  })
})

Deno.test("emulator ark videos: failures on demand, expiry, and cancel of a queued task", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const unsafe = await untilFinal(emulator.url, await submit(emulator.url, { model: "m", content: text("unsafe") }))
    strictEqual(unsafe.task.status, "failed")
    strictEqual(unsafe.task.error.code, "OutputVideoSensitiveContentDetected")
    strictEqual(unsafe.task.content, undefined)
    strictEqual(unsafe.task.usage, undefined)
    const broken = await untilFinal(emulator.url, await submit(emulator.url, { model: "m", content: text("broken") }))
    strictEqual(broken.task.status, "failed")
    strictEqual(broken.task.error.code, "InternalServiceError")
    const expired = await untilFinal(emulator.url, await submit(emulator.url, { model: "m", content: text("expire") }))
    deepStrictEqual(expired.seen, ["queued", "expired"])

    const queued = await submit(emulator.url, { model: "m", content: text("a cat") })
    const cancel = await call(emulator.url, "DELETE", `${TASKS}/${queued}`)
    strictEqual(cancel.status, 200)
    deepStrictEqual(await cancel.json(), {})
    const cancelled = await (await call(emulator.url, "GET", `${TASKS}/${queued}`)).json()
    strictEqual(cancelled.status, "cancelled")
    // A finished task's record is deleted.
    const removed = await call(emulator.url, "DELETE", `${TASKS}/${queued}`)
    strictEqual(removed.status, 200)
    await removed.body?.cancel()
    const gone = await call(emulator.url, "GET", `${TASKS}/${queued}`)
    strictEqual(gone.status, 404)
    strictEqual((await gone.json()).error.code, "ResourceNotFound")
    // A running task cannot be cancelled.
    const running = await submit(emulator.url, { model: "m", content: text("stall") })
    await sleep(STEP * 1.5)
    const refused = await call(emulator.url, "DELETE", `${TASKS}/${running}`)
    strictEqual(refused.status, 400)
    await refused.body?.cancel()
  })
})

Deno.test("emulator ark videos: the checks Ark makes, each naming its param", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const image = (url: string, role?: string) => ({ type: "image_url", image_url: { url }, ...(role ? { role } : {}) })
    const png = "https://example.com/a.png"
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ content: text("x") }, "model"],
      [{ model: "m" }, "content"],
      [{ model: "m", content: [] }, "content"],
      [{ model: "m", content: [{ type: "text", text: "" }] }, "content.text"],
      [{ model: "m", content: [...text("a"), ...text("b")] }, "content.text"],
      [{ model: "m", content: [{ type: "image", image: {} }] }, "content.type"],
      [{ model: "m", content: [image("ftp://x")] }, "content.image_url.url"],
      [{ model: "m", content: [image(png, "last_frame")] }, "content.role"],
      [{ model: "m", content: [image(png, "first_frame"), image(png, "reference_image")] }, "content.role"],
      [{ model: "m", content: Array.from({ length: 10 }, () => image(png, "reference_image")) }, "content.image_url"],
      [{ model: "m", content: [{ type: "video_url", video_url: { url: png }, role: "first_frame" }] }, "content.role"],
      [{ model: "m", content: text("x"), ratio: "2:1" }, "ratio"],
      [{ model: "m", content: text("x"), duration: 1 }, "duration"],
      [{ model: "m", content: text("x"), duration: 4.5 }, "duration"],
      [{ model: "m", content: text("x"), resolution: "4k" }, "resolution"],
      [{ model: "m", content: text("x"), watermark: "no" }, "watermark"],
      [{ model: "m", content: text("x"), generate_audio: 1 }, "generate_audio"],
      [{ model: "m", content: text("x"), seed: -2 }, "seed"],
      [{ model: "m", content: text("x"), execution_expires_after: 60 }, "execution_expires_after"]
    ]
    for (const [body, param] of refusals) {
      const response = await call(emulator.url, "POST", TASKS, body)
      strictEqual(response.status, 400, JSON.stringify(body).slice(0, 100))
      const error = (await response.json()).error
      strictEqual(error.param, param, JSON.stringify(body).slice(0, 100))
      strictEqual(error.type, "BadRequest")
    }
    // References by role: images, a video and an audio (asset ids and data URIs too); adaptive ratio is reported.
    const id = await submit(emulator.url, {
      model: "m",
      content: [
        ...text("x"),
        image("asset://asset-20260101-abc", "reference_image"),
        image("data:image/png;base64,iVBORw0KGgo=", "reference_image"),
        { type: "video_url", video_url: { url: "https://example.com/v.mp4" }, role: "reference_video" },
        { type: "audio_url", audio_url: { url: "https://example.com/a.mp3" }, role: "reference_audio" }
      ],
      duration: -1
    })
    const task = await (await call(emulator.url, "GET", `${TASKS}/${id}`)).json()
    strictEqual(task.ratio, "16:9")
    strictEqual(task.duration, 5)
    // An image alone (the first frame by default) needs no text.
    await submit(emulator.url, { model: "m", content: [image(png)] })
  })
})

Deno.test("emulator ark videos: the key is checked on submit, poll and cancel", async () => {
  await withEmulator({ videoStepMs: STEP, validKeys: [KEY] }, async (emulator) => {
    const id = await submit(emulator.url, { model: "m", content: text("x") })
    for (
      const [method, path, body] of [["POST", TASKS, { model: "m", content: text("x") }], ["GET", `${TASKS}/${id}`], [
        "DELETE",
        `${TASKS}/${id}`
      ]] as const
    ) {
      const response = await call(emulator.url, method, path, body, "sk-test-wrong")
      strictEqual(response.status, 401)
      await response.body?.cancel()
    }
    strictEqual((await (await call(emulator.url, "GET", `${TASKS}/${id}`)).json()).status, "queued")
  })
})
