/**
 * The first video family's extra field "billed usage (integer, passed through
 * when returned)": a task on Ark (the first family's vendor) carries `usage`,
 * the `usage.completion_tokens` Ark reported for it, once completed; a vendor
 * that reports none (OpenAI) adds no field.
 */
import { ok, strictEqual } from "node:assert/strict"
import { ALICE, eventually, startVideoGateway, videoClient } from "../support/VideoGateway.ts"

Deno.test("videos: the vendor's billed usage is passed through on the video object once reported", async () => {
  const gateway = await startVideoGateway()
  const headers = { authorization: `Bearer ${ALICE}` }
  const read = async (id: string) => await (await fetch(`${gateway.url}/v1/videos/${id}`, { headers })).json()
  try {
    const client = videoClient(gateway)
    const ark = await client.videos.create({ model: "seedance-video" as "sora-2", prompt: "a harbour", seconds: "8" })
    strictEqual((ark as unknown as { usage?: unknown }).usage, undefined, "nothing reported at submit")
    let video: { status: string; usage?: number } = { status: "queued" }
    await eventually(async () => (video = await read(ark.id)).status === "completed")
    const polled = gateway.emulator.requests.findLast((request) =>
      request.method === "GET" && request.path.startsWith("/api/v3/contents/generations/tasks/")
    )!
    const upstream = await fetch(`${gateway.emulator.url}${polled.path}`, {
      headers: { authorization: "Bearer sk-test-up-video-ark" }
    })
    const reported = (await upstream.json()).usage.completion_tokens
    ok(Number.isInteger(reported) && reported > 0, String(reported))
    strictEqual(video.usage, reported)
    const unified = await (await fetch(`${gateway.url}/v1/video/generations/${ark.id}`, { headers })).json()
    strictEqual(unified.data.status, "succeeded")

    const openai = await client.videos.create({ model: "sora-2", prompt: "a harbour", seconds: "4" })
    let other: { status: string; usage?: number } = { status: "queued" }
    await eventually(async () => (other = await read(openai.id)).status === "completed")
    strictEqual("usage" in other, false)
  } finally {
    await gateway.close()
  }
})
