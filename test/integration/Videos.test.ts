/**
 * The OpenAI-style video routes through the official `openai` SDK against the
 * emulator: create (multipart, as the SDK sends it) → queued with progress 0
 * and the pre-charge → completed with `completed_at`, progress 100 and a URL
 * on the gateway's content route; content downloaded (whole and by `Range`);
 * remix on the original channel; a failed task reads 200 `failed` with its
 * error and is refunded; another user can neither read, remix nor download
 * the task; the upstream id appears in no response body or header.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import {
  ALICE,
  BOB,
  eventually,
  startVideoGateway,
  upstreamIdsOf,
  usageOf,
  VIDEO_CHANNELS,
  videoClient,
  videoCostOf
} from "../support/VideoGateway.ts"

for (const row of VIDEO_CHANNELS) {
  Deno.test(`videos (${row.type}): create → queued → completed, billed, content and remix through the SDK`, async () => {
    const gateway = await startVideoGateway()
    try {
      const client = videoClient(gateway)
      const created = await client.videos.create({ model: row.model as "sora-2", prompt: "a calm lake", seconds: "8" })
      strictEqual(created.status, "queued")
      strictEqual(created.progress, 0)
      strictEqual(created.seconds, "8")
      ok(/^video_[A-Za-z0-9]{32}$/.test(created.id), created.id)
      strictEqual((created as unknown as { task_id: string }).task_id, created.id)
      strictEqual((created as unknown as { url: unknown }).url, null)
      await eventually(async () => (await usageOf(gateway)).used === videoCostOf(8))

      let video = created
      await eventually(async () => {
        video = await client.videos.retrieve(created.id)
        return video.status === "completed"
      })
      strictEqual(video.progress, 100)
      ok(typeof video.completed_at === "number" && video.completed_at >= video.created_at)
      const url = (video as unknown as { url: string }).url
      strictEqual(url, `${gateway.url}/v1/videos/${created.id}/content`)

      const content = await client.videos.downloadContent(created.id)
      const bytes = new Uint8Array(await content.arrayBuffer())
      strictEqual(content.headers.get("content-type"), "video/mp4")
      strictEqual(Number(content.headers.get("content-length")), bytes.length)
      ok(bytes.length > 16)
      strictEqual(new TextDecoder().decode(bytes.subarray(4, 8)), "ftyp")

      const ranged = await fetch(url, { headers: { authorization: `Bearer ${ALICE}`, range: "bytes=4-7" } })
      strictEqual(ranged.status, 206)
      strictEqual(ranged.headers.get("content-range"), `bytes 4-7/${bytes.length}`)
      deepStrictEqual(new Uint8Array(await ranged.arrayBuffer()), bytes.subarray(4, 8))

      if (row.remix) {
        const remixed = await client.videos.remix(created.id, { prompt: "the same lake at night" })
        strictEqual(remixed.status, "queued")
        ok(remixed.id !== created.id)
        strictEqual(remixed.remixed_from_video_id, created.id)
        await eventually(async () => (await client.videos.retrieve(remixed.id)).status === "completed")
        await eventually(async () => (await usageOf(gateway)).used === 2 * videoCostOf(8))
      } else {
        // The vendor cannot remix: a clear 400 naming the original, nothing charged.
        const error = await client.videos.remix(created.id, { prompt: "the same lake at night" }).then(
          () => undefined,
          (error) => error
        )
        strictEqual(error?.status, 400)
        strictEqual(error?.error?.param, "video_id")
        strictEqual((await usageOf(gateway)).used, videoCostOf(8))
      }

      // Bob sees none of it: read, remix, download, unified read all 404.
      const bob = videoClient(gateway, BOB)
      for (
        const attempt of [
          () => bob.videos.retrieve(created.id),
          () => bob.videos.remix(created.id, { prompt: "mine now" }),
          () => bob.videos.downloadContent(created.id)
        ]
      ) {
        const error = await attempt().then(() => undefined, (error) => error)
        strictEqual(error?.status, 404)
        strictEqual(error?.error?.code, "task_not_exist")
      }
      const unified = await fetch(`${gateway.url}/v1/video/generations/${created.id}`, {
        headers: { authorization: `Bearer ${BOB}` }
      })
      strictEqual(unified.status, 404)
      deepStrictEqual(await unified.json(), { code: "task_not_exist", message: "task_origin_not_exist", data: null })
      strictEqual((await usageOf(gateway, BOB)).used, 0)
    } finally {
      await gateway.close()
    }
  })

  Deno.test(`videos (${row.type}): a failed task reads 200 failed with its error, and is refunded once`, async () => {
    const gateway = await startVideoGateway()
    try {
      const client = videoClient(gateway)
      const created = await client.videos.create({ model: row.model as "sora-2", prompt: "something unsafe" })
      strictEqual(created.status, "queued")
      // No seconds: the family's default (4) is charged.
      await eventually(async () => (await usageOf(gateway)).used === videoCostOf(4))
      let video = created
      await eventually(async () => {
        video = await client.videos.retrieve(created.id)
        return video.status === "failed"
      })
      strictEqual(video.progress, 100)
      // Every vendor's moderation refusal reads as the one code (spec "Errors" rule 2: e.g. `content_policy`).
      strictEqual(video.error?.code, "content_policy")
      ok((video.error?.message.length ?? 0) > 0)
      strictEqual(video.completed_at, null)
      const unified = await (await fetch(`${gateway.url}/v1/video/generations/${created.id}`, {
        headers: { authorization: `Bearer ${ALICE}` }
      })).json()
      deepStrictEqual(unified, {
        code: "success",
        message: "",
        data: {
          task_id: created.id,
          status: "failed",
          url: "",
          format: "mp4",
          metadata: null,
          error: { code: video.error?.code, message: video.error?.message }
        }
      })
      await eventually(async () => (await usageOf(gateway)).used === 0)
      const usage = await usageOf(gateway)
      strictEqual(usage.available, 100_000_000)
      // Reading it again changes nothing: the refund was made once.
      await client.videos.retrieve(created.id)
      await new Promise((resolve) => setTimeout(resolve, 300))
      strictEqual((await usageOf(gateway)).used, 0)
      const download = await fetch(`${gateway.url}/v1/videos/${created.id}/content`, {
        headers: { authorization: `Bearer ${ALICE}` }
      })
      strictEqual(download.status, 400)
      strictEqual((await download.json()).error.param, "task_id")
    } finally {
      await gateway.close()
    }
  })
}

Deno.test("videos: no response body or header holds an upstream task id", async () => {
  const gateway = await startVideoGateway()
  const seen: Array<string> = []
  const record = async (response: Response) => {
    seen.push(JSON.stringify([...response.headers]))
    seen.push(new TextDecoder("latin1").decode(await response.arrayBuffer()))
  }
  try {
    const headers = { authorization: `Bearer ${ALICE}`, "content-type": "application/json" }
    for (const row of VIDEO_CHANNELS) {
      const submit = await fetch(`${gateway.url}/v1/videos`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: row.model, prompt: "a quiet street", seconds: "4" })
      })
      const { id } = await submit.clone().json()
      await record(submit)
      const unified = await fetch(`${gateway.url}/v1/video/generations`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: row.model, prompt: "a busy street", duration: 4 })
      })
      const { task_id: unifiedId } = await unified.clone().json()
      await record(unified)
      await eventually(async () => {
        const response = await fetch(`${gateway.url}/v1/videos/${id}`, { headers })
        const body = await response.clone().json()
        await record(response)
        return body.status === "completed"
      })
      await eventually(async () => {
        const response = await fetch(`${gateway.url}/v1/video/generations/${unifiedId}`, { headers })
        const body = await response.clone().json()
        await record(response)
        return body.data.status === "succeeded"
      })
      await record(await fetch(`${gateway.url}/v1/videos/${id}/content`, { headers }))
      await record(
        await fetch(`${gateway.url}/v1/videos/${id}/remix`, {
          method: "POST",
          headers,
          body: JSON.stringify({ model: row.model, prompt: "again" })
        })
      )
    }
    // No vendor content location either (Ark's signed URL, Veo's file URI).
    for (const text of seen) ok(!text.includes("/_emulator/") && !text.includes("/v1beta/files/"), text.slice(0, 200))
    const upstream = upstreamIdsOf(gateway)
    ok(upstream.length >= 2 * VIDEO_CHANNELS.length, `upstream ids seen: ${upstream.length}`)
    for (const upstreamId of upstream) {
      for (const text of seen) ok(!text.includes(upstreamId), "an upstream id leaked into a response")
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("videos: the SDK's create with an uploaded input_reference reaches the upstream as an image reference", async () => {
  const gateway = await startVideoGateway()
  try {
    const png = Uint8Array.from(
      atob(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
      ),
      (char) => char.charCodeAt(0)
    )
    const client = videoClient(gateway)
    const created = await client.videos.create({
      model: "sora-2",
      prompt: "animate this pixel",
      seconds: "4",
      input_reference: new File([png], "frame.png", { type: "image/png" })
    })
    strictEqual(created.status, "queued")
    const submit = gateway.emulator.requests.find((request) =>
      request.method === "POST" && request.path === "/v1/videos"
    )
    const body = submit?.body as { input_reference?: { image_url?: string } } | undefined
    ok(body?.input_reference?.image_url?.startsWith("data:image/png;base64,"), JSON.stringify(body).slice(0, 200))
    await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed")
  } finally {
    await gateway.close()
  }
})
