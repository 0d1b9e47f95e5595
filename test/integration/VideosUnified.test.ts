/**
 * The unified video routes with raw HTTP, the async image task, the deadline
 * and the re-pricing on the actual duration:
 * - `POST /v1/video/generations` answers the unified submit response; `GET
 *   /v1/video/generations/{id}` the unified wrapper, `processing` while it
 *   runs and `succeeded` with the content URL and metadata when done; an
 *   invalid key and an unknown task answer the flat `{code, message, data:
 *   null}`;
 * - `POST /v1/images/generations/async` answers `{id, task_id}` and the task
 *   ends with the sync route's `data[]`, billed per image; another user's
 *   read is 404;
 * - a task that never finishes fails at its deadline with code `timeout` and
 *   is refunded;
 * - a task billed at the family's default duration (5 s) that comes back 4 s
 *   long is re-priced: the difference is refunded;
 * - an `asset://` reference is sent upstream as the asset's URL, and only its
 *   owner may use it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import {
  ALICE,
  BOB,
  eventually,
  startVideoGateway,
  usageOf,
  videoClient,
  videoCostOf
} from "../support/VideoGateway.ts"
import { startMediaServer } from "../support/MediaServer.ts"

const json = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" })

Deno.test("unified video routes: submit, wrapper while running and when done, flat errors", async () => {
  const gateway = await startVideoGateway()
  try {
    const submitted = await fetch(`${gateway.url}/v1/video/generations`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ model: "sora-2", prompt: "a windmill", seconds: "8", size: "1280x720" })
    })
    strictEqual(submitted.status, 200)
    const submit = await submitted.json()
    deepStrictEqual(Object.keys(submit).sort(), [
      "created_at",
      "id",
      "model",
      "object",
      "progress",
      "status",
      "task_id"
    ])
    strictEqual(submit.task_id, submit.id)
    strictEqual(submit.object, "video")
    strictEqual(submit.status, "queued")
    strictEqual(submit.progress, 0)

    const seen = new Set<string>()
    let done: Record<string, unknown> = {}
    await eventually(async () => {
      const response = await fetch(`${gateway.url}/v1/video/generations/${submit.id}`, { headers: json(ALICE) })
      strictEqual(response.status, 200)
      const body = await response.json()
      strictEqual(body.code, "success")
      strictEqual(body.message, "")
      seen.add(body.data.status)
      done = body.data
      return body.data.status === "succeeded"
    })
    ok([...seen].every((status) => ["queued", "processing", "succeeded"].includes(status)), [...seen].join())
    strictEqual(done.task_id, submit.id)
    strictEqual(done.url, `${gateway.url}/v1/videos/${submit.id}/content`)
    strictEqual(done.format, "mp4")
    deepStrictEqual(done.metadata, { duration: 8, width: 1280, height: 720, fps: 0 })
    strictEqual(done.error, null)
    // The same task in the OpenAI-style shape.
    const same = await videoClient(gateway).videos.retrieve(submit.id)
    strictEqual(same.status, "completed")

    const badKey = await fetch(`${gateway.url}/v1/video/generations/${submit.id}`, { headers: json("sk-test-nobody") })
    strictEqual(badKey.status, 401)
    const badKeyBody = await badKey.json()
    deepStrictEqual(Object.keys(badKeyBody).sort(), ["code", "data", "message"])
    strictEqual(badKeyBody.code, "invalid_api_key")
    strictEqual(badKeyBody.data, null)

    const unknown = await fetch(`${gateway.url}/v1/video/generations/video_${"a".repeat(32)}`, {
      headers: json(ALICE)
    })
    strictEqual(unknown.status, 404)
    deepStrictEqual(await unknown.json(), { code: "task_not_exist", message: "task_origin_not_exist", data: null })

    const unpriced = await fetch(`${gateway.url}/v1/video/generations`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ model: "video-unpriced", prompt: "a windmill" })
    })
    strictEqual(unpriced.status, 400)
    strictEqual((await unpriced.json()).error.code, "model_price_not_set")
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(8))
  } finally {
    await gateway.close()
  }
})

Deno.test("async images: {id, task_id} at once, then the sync route's data[], billed per image", async () => {
  const gateway = await startVideoGateway()
  try {
    const submitted = await fetch(`${gateway.url}/v1/images/generations/async`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ model: "dall-e-2", prompt: "a blue square", n: 2, size: "256x256" })
    })
    strictEqual(submitted.status, 200)
    const { id, task_id } = await submitted.json()
    strictEqual(task_id, id)
    ok(/^imgtask_[0-9a-f]{32}$/.test(id), id)
    let task: Record<string, unknown> = {}
    await eventually(async () => {
      const response = await fetch(`${gateway.url}/v1/images/generations/async/${id}`, { headers: json(ALICE) })
      task = await response.json()
      return task.status === "completed"
    })
    strictEqual(task.progress, 100)
    const data = task.data as Array<{ url?: string }>
    strictEqual(data.length, 2)
    ok(data.every((item) => typeof item.url === "string" && item.url.length > 0))
    await eventually(async () => (await usageOf(gateway)).used === 2 * 20_000)

    const bob = await fetch(`${gateway.url}/v1/images/generations/async/${id}`, { headers: json(BOB) })
    strictEqual(bob.status, 404)
    strictEqual((await bob.json()).error.code, "task_not_exist")
    // A video read of an image task is not found either.
    const asVideo = await fetch(`${gateway.url}/v1/videos/${id}`, { headers: json(ALICE) })
    strictEqual(asVideo.status, 404)

    const invalid = await fetch(`${gateway.url}/v1/images/generations/async`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ model: "dall-e-2", prompt: "a blue square", size: "300x300" })
    })
    strictEqual(invalid.status, 400)
    strictEqual((await invalid.json()).error.param, "size")
    strictEqual((await usageOf(gateway)).used, 2 * 20_000)
  } finally {
    await gateway.close()
  }
})

Deno.test("tasks: a task past its deadline fails with code timeout and is refunded", async () => {
  const gateway = await startVideoGateway({ settings: { task_deadline_seconds: 1 } })
  try {
    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "stall forever", seconds: "4" })
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(4))
    let video = created
    await eventually(async () => {
      video = await client.videos.retrieve(created.id)
      return video.status === "failed"
    })
    strictEqual(video.error?.code, "timeout")
    strictEqual(video.progress, 100)
    await eventually(async () => (await usageOf(gateway)).used === 0)
  } finally {
    await gateway.close()
  }
})

Deno.test("tasks: billed at the family's default duration, re-priced on the actual one", async () => {
  const gateway = await startVideoGateway()
  try {
    // videoa bills 5 s when no duration is given; the upstream makes its own default, 4 s.
    const submitted = await fetch(`${gateway.url}/v1/videos`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ model: "videoa-2-0-260128", prompt: "a lighthouse at dusk" })
    })
    strictEqual(submitted.status, 200)
    const { id } = await submitted.json()
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(5))
    let body: Record<string, unknown> = {}
    await eventually(async () => {
      body = await (await fetch(`${gateway.url}/v1/videos/${id}`, { headers: json(ALICE) })).json()
      return body.status === "completed"
    })
    strictEqual(body.duration, 4)
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(4))
  } finally {
    await gateway.close()
  }
})

Deno.test("assets: an asset:// reference reaches the upstream as the asset's URL, for its owner only", async () => {
  const media = startMediaServer()
  const gateway = await startVideoGateway({ settings: { media_allow_hosts: ["127.0.0.1"] } })
  try {
    const registered = await fetch(`${gateway.url}/api/asset/create`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ url: `${media.base}/pixel.png` })
    })
    strictEqual(registered.status, 200)
    const assetId = (await registered.json()).Result.Id as string
    await eventually(async () => {
      const found = await fetch(`${gateway.url}/api/asset/get?id=${assetId}`, { headers: json(ALICE) })
      return (await found.json()).Result.Status === "Active"
    })
    const submitted = await fetch(`${gateway.url}/v1/videos`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({ model: "sora-2", prompt: "animate the pixel", image: `asset://${assetId}` })
    })
    strictEqual(submitted.status, 200)
    const sent = gateway.emulator.requests.find((request) => request.method === "POST" && request.path === "/v1/videos")
    deepStrictEqual((sent?.body as { input_reference?: unknown }).input_reference, {
      image_url: `${media.base}/pixel.png`
    })
    // Bob cannot use Alice's asset: a 400 naming the field, nothing sent, nothing charged.
    const stolen = await fetch(`${gateway.url}/v1/videos`, {
      method: "POST",
      headers: json(BOB),
      body: JSON.stringify({ model: "sora-2", prompt: "animate the pixel", image: `asset://${assetId}` })
    })
    strictEqual(stolen.status, 400)
    strictEqual((await stolen.json()).error.param, "image")
    strictEqual(gateway.emulator.requests.filter((request) => request.path === "/v1/videos").length, 1)
    strictEqual((await usageOf(gateway, BOB)).used, 0)
  } finally {
    await gateway.close()
    await media.close()
  }
})

Deno.test("mini-2.0: the OpenAI-style object in queued state, its id shape, metadata {} and duration", async () => {
  const gateway = await startVideoGateway()
  try {
    const submitted = await fetch(`${gateway.url}/v1/videos`, {
      method: "POST",
      headers: json(ALICE),
      body: JSON.stringify({
        model: "mini-2.0",
        prompt: "a paper boat",
        duration: 5,
        ratio: "16:9",
        resolution: "480p"
      })
    })
    strictEqual(submitted.status, 200)
    const video = await submitted.json()
    ok(/^mini-2\.0_[A-Za-z0-9]{32}$/.test(video.id), video.id)
    strictEqual(video.task_id, video.id)
    strictEqual(video.object, "video")
    strictEqual(video.status, "queued")
    strictEqual(video.progress, 0)
    strictEqual(video.seconds, "5")
    strictEqual(video.duration, 5)
    deepStrictEqual(video.metadata, {})
    strictEqual(video.url, null)
    strictEqual(video.error, null)
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(5))
  } finally {
    await gateway.close()
  }
})
