/**
 * The video content download goes the relays' way (`relay/VideoContentRelay.ts`): the task's channel, its video
 * adapter, and the channel's health. Against the emulator: content the vendor no longer holds (404) is a 400 that
 * leaves the channel healthy; vendor failures of the download count towards the channel's cooldown, as a billed
 * call's do, and a download that works ends it; downloads are never billed.
 */
import { ok, strictEqual } from "node:assert/strict"
import { ALICE, eventually, startVideoGateway, usageOf, videoClient, videoCostOf } from "../support/VideoGateway.ts"

/** The operator's secret for the per-channel detail of `GET /api/status`. */
const STATUS_TOKEN = "sk-test-status-video-0001"

Deno.test("video content: an expired vendor copy is a 400; download failures and successes reach the channel's health", async () => {
  const gateway = await startVideoGateway({ settings: { cooldown_failures: 2, status_token: STATUS_TOKEN } })
  try {
    const stateOf = async (): Promise<string> => {
      const status = await (await fetch(`${gateway.url}/api/status`, {
        headers: { authorization: `Bearer ${STATUS_TOKEN}` }
      })).json()
      return status.data.channels.find((channel: { name: string }) => channel.name === "video-openai").state
    }
    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "a calm lake", seconds: "4" })
    await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed")
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(4))
    const url = `${gateway.url}/v1/videos/${created.id}/content`
    const headers = { authorization: `Bearer ${ALICE}` }
    strictEqual(await stateOf(), "healthy")

    // The vendor no longer holds the bytes: the caller's 400, and no word against the channel.
    gateway.emulator.setFaults([{ match: { path: "/content" }, status: 404, times: 3 }])
    for (let index = 0; index < 3; index++) {
      const gone = await fetch(url, { headers })
      strictEqual(gone.status, 400)
      const body = await gone.json()
      strictEqual(body.error.message, "The video is no longer held by the upstream.")
    }
    strictEqual(await stateOf(), "healthy")

    // Two vendor failures in a row (cooldown_failures: 2) put the channel in cooldown, as billed calls would.
    gateway.emulator.setFaults([{ match: { path: "/content" }, status: 500, times: 2 }])
    for (let index = 0; index < 2; index++) {
      const failed = await fetch(url, { headers })
      strictEqual(failed.status, 500)
      await failed.body?.cancel()
    }
    strictEqual(await stateOf(), "cooling")

    // The vendor is back: the download (on the task's own channel, the only one holding the bytes) works, and its
    // success ends the cooldown.
    const content = await fetch(url, { headers })
    strictEqual(content.status, 200)
    strictEqual(content.headers.get("content-type"), "video/mp4")
    strictEqual(content.headers.get("cache-control"), "private, no-store")
    const bytes = new Uint8Array(await content.arrayBuffer())
    ok(bytes.length > 16)
    strictEqual(new TextDecoder().decode(bytes.subarray(4, 8)), "ftyp")
    strictEqual(await stateOf(), "healthy")

    // Downloads, failed or not, are not billed: the task's charge is all there is.
    strictEqual((await usageOf(gateway)).used, videoCostOf(4))
  } finally {
    await gateway.close()
  }
})
