/**
 * The video content download goes the relays' way (`relay/videos/VideoContentRelay.ts`): the task's channel, its video
 * adapter, and the channel's health. Against the emulator: content the vendor no longer holds (404) is a 400 that
 * leaves the channel healthy; vendor failures of the download count towards the channel's cooldown, as a billed
 * call's do, and a download that works ends it; downloads are never billed.
 *
 * Against a hostile upstream: the bytes are served as the type they are sniffed to be, never the vendor's
 * `Content-Type` (a script sent as `text/html` is an `application/octet-stream` attachment), with `nosniff` and a
 * sandboxing CSP; a content URL the vendor hands over (Ark, Kling) goes through the SSRF guard: one on another
 * loopback host than the channel's is refused and never reached, one on the channel's own host is fetched, and a
 * video past `video_content_max_bytes` is refused.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway } from "../support/Gateway.ts"
import { SCRIPT_PAGE, startHostileUpstream, startInternalServer } from "../support/HostileUpstream.ts"
import { MP4 } from "../support/MediaServer.ts"
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
    strictEqual(content.headers.get("x-content-type-options"), "nosniff")
    strictEqual(content.headers.get("content-security-policy"), "default-src 'none'; sandbox")
    strictEqual(content.headers.get("cache-control"), "private, no-store")
    const bytes = new Uint8Array(await content.arrayBuffer())
    ok(bytes.length > 16)
    strictEqual(new TextDecoder().decode(bytes.subarray(4, 8)), "ftyp")
    strictEqual(await stateOf(), "healthy")

    // A range from past the first byte cannot be sniffed: the vendor's type is kept as it is a video type.
    const tail = await fetch(url, { headers: { ...headers, range: "bytes=100-" } })
    strictEqual(tail.status, 206)
    strictEqual(tail.headers.get("content-type"), "video/mp4")
    strictEqual(tail.headers.get("x-content-type-options"), "nosniff")
    deepStrictEqual(new Uint8Array(await tail.arrayBuffer()), bytes.subarray(100))

    // Downloads, failed or not, are not billed: the task's charge is all there is.
    strictEqual((await usageOf(gateway)).used, videoCostOf(4))
  } finally {
    await gateway.close()
  }
})

/** A gateway whose video models run on the hostile upstream `upstreamUrl`, one per video wire. */
const hostileVideoConfig = (upstreamUrl: string, settings: Record<string, unknown> = {}) => {
  const channel = (type: string, model: string, suffix = "", key = `sk-test-up-hostile-${type}`) => ({
    name: `hostile-${type}`,
    type,
    base_url: upstreamUrl + suffix,
    keys: [key],
    models: [model]
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "sora-2": { per_second: 0.1 }, "seedance": { per_second: 0.1 }, "kling-v1": { per_second: 0.1 } },
      channels: [
        channel("openai", "sora-2"),
        channel("ark", "seedance", "/api/v3"),
        channel("kling", "kling-v1", "", "sk-test-access-key|sk-test-secret-key")
      ],
      users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: ALICE }] }],
      settings: { task_poll_interval_ms: 100, cooldown_failures: 1000, ...settings }
    }),
    "hostile-videos.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** Submits a video of `model` and waits until it is completed; its content URL. */
const completedContentUrl = async (gateway: Awaited<ReturnType<typeof startGateway>>, model: string) => {
  const client = videoClient(gateway)
  const created = await client.videos.create({ model, prompt: "a calm lake", seconds: "4" })
  await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed")
  return `${gateway.url}/v1/videos/${created.id}/content`
}

Deno.test("video content: served as the type its bytes are, never the vendor's Content-Type; nosniff and a sandboxing CSP", async () => {
  const upstream = startHostileUpstream({ mediaType: "text/html", mediaBytes: SCRIPT_PAGE })
  const gateway = await startGateway({ config: () => hostileVideoConfig(upstream.url) })
  const headers = { authorization: `Bearer ${ALICE}` }
  const safe = (response: Response) => {
    strictEqual(response.headers.get("x-content-type-options"), "nosniff")
    strictEqual(response.headers.get("content-security-policy"), "default-src 'none'; sandbox")
  }
  try {
    const url = await completedContentUrl(gateway, "sora-2")
    const script = await fetch(url, { headers })
    strictEqual(script.status, 200)
    strictEqual(script.headers.get("content-type"), "application/octet-stream")
    strictEqual(script.headers.get("content-disposition"), "attachment")
    safe(script)
    deepStrictEqual(new Uint8Array(await script.arrayBuffer()), SCRIPT_PAGE)
    const head = await fetch(url, { method: "HEAD", headers })
    strictEqual(head.headers.get("content-type"), "application/octet-stream")
    strictEqual(head.headers.get("content-disposition"), "attachment")
    safe(head)

    // A real MP4 the vendor calls text/html is a video/mp4.
    upstream.behaviour.mediaBytes = MP4
    const video = await fetch(url, { headers })
    strictEqual(video.status, 200)
    strictEqual(video.headers.get("content-type"), "video/mp4")
    strictEqual(video.headers.get("content-disposition"), null)
    safe(video)
    deepStrictEqual(new Uint8Array(await video.arrayBuffer()), MP4)
  } finally {
    await gateway.close()
    await upstream.close()
  }
})

Deno.test("video content: Ark's and Kling's content URLs go through the SSRF guard, within the size cap", async () => {
  const internal = startInternalServer()
  const upstream = startHostileUpstream({ mediaType: "video/mp4", mediaBytes: MP4.subarray(0, 50_000) })
  const gateway = await startGateway({
    config: () => hostileVideoConfig(upstream.url, { video_content_max_bytes: 100_000 })
  })
  const headers = { authorization: `Bearer ${ALICE}` }
  try {
    for (const model of ["seedance", "kling-v1"]) {
      // Another loopback host than the channel's (127.0.0.1): refused before any connection.
      upstream.behaviour.mediaUrl = `http://localhost:${internal.port}/internal/secret`
      const url = await completedContentUrl(gateway, model)
      const refused = await fetch(url, { headers })
      strictEqual(refused.status, 500, model)
      const body = await refused.json()
      strictEqual(body.error.code, "bad_response_body", model)
      ok(!JSON.stringify(body).includes("localhost") && !JSON.stringify(body).includes("internal"), model)
      deepStrictEqual(internal.hits, [], `${model}: the internal server was never reached`)

      // The channel's own host (a new task, as a task keeps the URL its vendor named): fetched, as what it is.
      upstream.behaviour.mediaUrl = ""
      const ownHost = await completedContentUrl(gateway, model)
      const fetched = await fetch(ownHost, { headers })
      strictEqual(fetched.status, 200, model)
      strictEqual(fetched.headers.get("content-type"), "video/mp4")
      deepStrictEqual(new Uint8Array(await fetched.arrayBuffer()), MP4.subarray(0, 50_000))

      // Past video_content_max_bytes: refused.
      upstream.behaviour.mediaBytes = MP4
      const large = await fetch(ownHost, { headers })
      strictEqual(large.status, 500, model)
      strictEqual((await large.json()).error.code, "bad_response_body")
      upstream.behaviour.mediaBytes = MP4.subarray(0, 50_000)
    }
    // The same cap on the channel's own content call (OpenAI's, sent with the key).
    upstream.behaviour.mediaBytes = MP4
    const own = await fetch(await completedContentUrl(gateway, "sora-2"), { headers })
    strictEqual(own.status, 500)
    strictEqual((await own.json()).error.code, "bad_response_body")
  } finally {
    await gateway.close()
    await upstream.close()
    await internal.close()
  }
})
