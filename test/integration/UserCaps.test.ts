/**
 * Work that outlives its request is capped per user (issue 28, item 8): asset
 * creates count against the key's request rate and a per-user cap of pending
 * checks, video and image tasks against a per-user cap of tasks in flight
 * (429 in the route's own envelope, `Retry-After` set), and a failed check's
 * `Reason` says "unreachable", never the socket error. Also: a finished
 * video's content URL follows a trusted proxy's scheme and host only.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, startGateway } from "../support/Gateway.ts"
import { startMediaServer } from "../support/MediaServer.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { ALICE, startVideoGateway, videoClient } from "../support/VideoGateway.ts"

const KEY = "sk-test-caps-0001"

const assetConfig = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    users: [{
      username: "capped",
      group: "default",
      quota: 0,
      tokens: [{ name: "main", key: KEY, limits: { rpm: 6 } }]
    }],
    settings: { media_allow_hosts: ["127.0.0.1"], media_timeout_ms: 3000, max_pending_assets: 3 }
  })

const createAsset = (url: string, asset: string) =>
  fetch(`${url}/api/asset/create`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ url: asset })
  }).then(async (response) => ({
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: await response.json() as { Result?: { Id: string }; error?: { type: string; code: string } }
  }))

Deno.test("caps 8: parallel asset creates stop at the pending-check cap, then at the key's rate", async () => {
  const media = startMediaServer()
  const gateway = await startGateway({ config: assetConfig, store: "postgres" })
  try {
    const slow = await Promise.all(Array.from({ length: 6 }, () => createAsset(gateway.url, `${media.base}/slow.mp4`)))
    deepStrictEqual(slow.map((answer) => answer.status).sort(), [200, 200, 200, 429, 429, 429])
    for (const answer of slow.filter((answer) => answer.status === 429)) {
      ok(Number(answer.retryAfter) > 0)
      strictEqual(answer.body.error?.code, "too_many_requests", JSON.stringify(answer.body))
    }
    // Six creates used the key's six requests a minute: the seventh is refused whatever its URL.
    const seventh = await createAsset(gateway.url, `${media.base}/pixel.png`)
    strictEqual(seventh.status, 429, JSON.stringify(seventh.body))
  } finally {
    await gateway.close()
    await media.close()
  }
})

Deno.test("caps 8: a URL on a closed port fails as unreachable, not with the socket error", async () => {
  const gateway = await startGateway({ config: assetConfig, store: "postgres" })
  try {
    const closed = await createAsset(gateway.url, "http://127.0.0.1:1/probe.png")
    strictEqual(closed.status, 200, JSON.stringify(closed.body))
    let reason = ""
    for (let attempt = 0; attempt < 50 && reason === ""; attempt++) {
      const response = await fetch(`${gateway.url}/api/asset/get?id=${closed.body.Result!.Id}`, {
        headers: { authorization: `Bearer ${KEY}` }
      })
      const body = await response.json() as { Result: { Status: string; Reason?: string } }
      if (body.Result.Status === "Failed") reason = body.Result.Reason ?? ""
      else await new Promise((resolve) => setTimeout(resolve, 100))
    }
    strictEqual(reason, "unreachable")
  } finally {
    await gateway.close()
  }
})

Deno.test("caps 8: tasks in flight per user are capped; past the cap 429 in the route's envelope", async () => {
  const emulator = startEmulator({ videoStepMs: 60_000 })
  const gateway = await startVideoGateway({ store: "postgres", emulator, settings: { max_tasks_in_flight: 3 } })
  try {
    const client = videoClient(gateway)
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () =>
        client.videos.create({ model: "sora-2", prompt: "a lighthouse at dusk" }).then(
          () => 200,
          (error: { status?: number }) => error.status ?? 0
        ))
    )
    deepStrictEqual(outcomes.sort(), [200, 200, 200, 429, 429, 429, 429, 429])
    const unified = await fetch(`${gateway.url}/v1/video/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ALICE}` },
      body: JSON.stringify({ model: "sora-2", prompt: "one more" })
    })
    const body = await unified.json() as { code: unknown; message: string; data: unknown }
    strictEqual(unified.status, 429)
    ok(Number(unified.headers.get("retry-after")) > 0)
    deepStrictEqual(Object.keys(body).sort(), ["code", "data", "message"])
    ok(body.message.includes("tasks unfinished"), body.message)
    const [charged] = await gateway.query<{ n: string }>(
      "SELECT count(*) AS n FROM tasks WHERE status IN ('queued', 'in_progress')"
    )
    strictEqual(Number(charged.n), 3, "only the admitted tasks were made (and charged)")
  } finally {
    await gateway.close()
    await emulator.close()
  }
})

Deno.test("proxies 6: a finished video's content URL follows a trusted proxy's scheme and host, and no other", async () => {
  const gateway = await startVideoGateway({ store: "postgres", settings: { trusted_proxies: ["127.0.0.1"] } })
  try {
    const created = await videoClient(gateway).videos.create({ model: "sora-2", prompt: "waves" })
    const read = async (headers: Record<string, string>) => {
      for (let attempt = 0; attempt < 50; attempt++) {
        const response = await fetch(`${gateway.url}/v1/videos/${created.id}`, {
          headers: { authorization: `Bearer ${ALICE}`, ...headers }
        })
        const body = await response.json() as { status: string; url: string | null }
        if (body.status === "completed") return body.url
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return undefined
    }
    strictEqual(
      await read({ "x-forwarded-proto": "https", "x-forwarded-host": "videos.example.test" }),
      `https://videos.example.test/v1/videos/${created.id}/content`
    )
    strictEqual(await read({}), `${gateway.url}/v1/videos/${created.id}/content`)
  } finally {
    await gateway.close()
  }
})

Deno.test("proxies 6: without trusted proxies the content URL ignores X-Forwarded-Host", async () => {
  const gateway = await startVideoGateway({ store: "postgres" })
  try {
    const created = await videoClient(gateway).videos.create({ model: "sora-2", prompt: "waves" })
    let url: string | null = null
    for (let attempt = 0; attempt < 50 && url === null; attempt++) {
      const response = await fetch(`${gateway.url}/v1/videos/${created.id}`, {
        headers: { authorization: `Bearer ${ALICE}`, "x-forwarded-host": "evil.example.test" }
      })
      url = (await response.json() as { url: string | null }).url
      if (url === null) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    strictEqual(url, `${gateway.url}/v1/videos/${created.id}/content`)
  } finally {
    await gateway.close()
  }
})
