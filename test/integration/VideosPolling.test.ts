/**
 * The poller against a failing upstream and the content route with a browser
 * session:
 * - polls answered 503, then with a body that is not JSON, back off and the
 *   task still completes once the upstream recovers (nothing refunded, the
 *   failures logged without the upstream id);
 * - a read of a task whose state is a second old polls it on demand;
 * - `GET /v1/videos/{id}/content` with the owner's browser session streams the
 *   bytes; another user's session gets 404; no key and no session gets 401.
 */
import { ok, strictEqual } from "node:assert/strict"
import { browser } from "../support/Browser.ts"
import {
  ALICE,
  eventually,
  PASSWORDS,
  startVideoGateway,
  upstreamIdsOf,
  usageOf,
  videoClient,
  videoCostOf
} from "../support/VideoGateway.ts"

Deno.test("poller: upstream errors back off, and the task completes when the upstream recovers", async () => {
  const gateway = await startVideoGateway()
  try {
    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "a ferry crossing", seconds: "4" })
    gateway.emulator.setFaults([
      { match: { path: "/v1/videos/" }, times: 3, status: 503 },
      { match: { path: "/v1/videos/" }, times: 1, malformed: true }
    ])
    await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed", 15_000)
    const polls = gateway.emulator.requests.filter((request) =>
      request.method === "GET" && request.path.startsWith("/v1/videos/")
    )
    ok(polls.length >= 5, `polls: ${polls.length}`)
    const warnings = gateway.logs.filter((line) => line.includes("Task poll failed; backing off"))
    ok(warnings.length >= 4, `warnings: ${warnings.length}`)
    for (const upstreamId of upstreamIdsOf(gateway)) {
      ok(gateway.logs.every((line) => !line.includes(upstreamId)), "the upstream id reached a log line")
    }
    await eventually(async () => (await usageOf(gateway)).used === videoCostOf(4))
  } finally {
    await gateway.close()
  }
})

Deno.test("content: the owner's browser session downloads; another session 404; nothing at all 401", async () => {
  const gateway = await startVideoGateway()
  try {
    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "a night market", seconds: "4" })
    await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed")
    const path = `/v1/videos/${created.id}/content`
    const viaKey = new Uint8Array(
      await (await fetch(gateway.url + path, { headers: { authorization: `Bearer ${ALICE}` } })).arrayBuffer()
    )

    const alice = browser(gateway.url)
    await alice.login("alice", PASSWORDS.alice)
    const cookie = [...alice.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
    const viaSession = await fetch(gateway.url + path, { headers: { cookie } })
    strictEqual(viaSession.status, 200)
    strictEqual(viaSession.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await viaSession.arrayBuffer())
    strictEqual(bytes.length, viaKey.length)
    ok(bytes.every((byte, index) => byte === viaKey[index]))

    const bob = browser(gateway.url)
    await bob.login("bob", PASSWORDS.bob)
    const bobCookie = [...bob.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
    const denied = await fetch(gateway.url + path, { headers: { cookie: bobCookie } })
    strictEqual(denied.status, 404)
    strictEqual((await denied.json()).error.code, "task_not_exist")

    const anonymous = await fetch(gateway.url + path)
    strictEqual(anonymous.status, 401)
    strictEqual((await anonymous.json()).error.code, "invalid_api_key")
  } finally {
    await gateway.close()
  }
})

Deno.test("poller: a read of a stale task polls it on demand, without waiting for the schedule", async () => {
  // The schedule polls every ten minutes: only reads can move the task.
  const gateway = await startVideoGateway({ settings: { task_poll_interval_ms: 600_000 } })
  try {
    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "a tram at noon", seconds: "4" })
    strictEqual((await client.videos.retrieve(created.id)).status, "queued")
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const read = await client.videos.retrieve(created.id)
    strictEqual(read.status, "completed")
    strictEqual(read.progress, 100)
  } finally {
    await gateway.close()
  }
})

Deno.test("poller: starts with the gateway and stops when it shuts down", async () => {
  const gateway = await startVideoGateway()
  let stopped = false
  try {
    const client = videoClient(gateway)
    await client.videos.create({ model: "sora-2", prompt: "stall: a clock that never stops", seconds: "4" })
    const polls = () =>
      gateway.emulator.requests.filter((request) => request.method === "GET" && request.path.startsWith("/v1/videos/"))
        .length
    await eventually(() => Promise.resolve(polls() >= 3))
    const started = Date.now()
    await gateway.stop()
    stopped = true
    ok(Date.now() - started < 5000, `shutdown took ${Date.now() - started} ms`)
    const atStop = polls()
    await new Promise((resolve) => setTimeout(resolve, 500))
    strictEqual(polls(), atStop, "the poller went on after shutdown")
  } finally {
    if (!stopped) await gateway.stop()
    await gateway.emulator.close()
  }
})
