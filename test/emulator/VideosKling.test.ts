/**
 * The emulator's Kling video API over raw HTTP (Kling has no official
 * TypeScript SDK): the signed token checked with jose (missing, wrong secret,
 * expired, not yet valid), text2video and image2video run submitted →
 * processing → succeed with Kling's fields, the result URL served without a
 * token, a task readable only on its own path, failures on demand, and the
 * field checks (400 code 1201).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { SignJWT } from "jose"
import { KLING_TEST_ACCESS_KEY, KLING_TEST_SECRET_KEY } from "../../emulator/VideosKling.ts"
import { klingToken } from "../../src/upstreams/VideoAdapter.ts"
import { pixelPng, withEmulator } from "./Support.ts"

const STEP = 250
const CHANNEL_KEY = `${KLING_TEST_ACCESS_KEY}|${KLING_TEST_SECRET_KEY}`

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const token = () => Effect.runPromise(klingToken(CHANNEL_KEY, Math.floor(Date.now() / 1000)))

const call = async (url: string, method: string, path: string, body?: unknown, bearer?: string) =>
  fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${bearer ?? await token()}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const untilFinal = async (url: string, path: string) => {
  const seen: Array<string> = []
  for (let attempt = 0; attempt < 100; attempt++) {
    const answer = await (await call(url, "GET", path)).json()
    if (seen.at(-1) !== answer.data.task_status) seen.push(answer.data.task_status)
    if (!["submitted", "processing"].includes(answer.data.task_status)) return { answer, seen }
    await sleep(STEP / 4)
  }
  throw new Error(`${path} never finished.`)
}

Deno.test("emulator kling: text2video runs submitted → processing → succeed; the video URL needs no token", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const response = await call(emulator.url, "POST", "/v1/videos/text2video", {
      model_name: "kling-v2-master",
      prompt: "a paper boat on a river",
      negative_prompt: "blur",
      cfg_scale: 0.5,
      mode: "pro",
      aspect_ratio: "9:16",
      duration: "10",
      external_task_id: "mine-1"
    })
    strictEqual(response.status, 200)
    const created = await response.json()
    strictEqual(created.code, 0)
    strictEqual(created.message, "SUCCEED")
    ok(typeof created.request_id === "string" && created.request_id.length > 0)
    ok(/^\d{18}$/.test(created.data.task_id), created.data.task_id)
    strictEqual(created.data.task_status, "submitted")
    deepStrictEqual(created.data.task_info, { external_task_id: "mine-1" })
    ok(created.data.created_at > 1e12, "created_at is in milliseconds")
    strictEqual(emulator.requests.at(-1)?.key, KLING_TEST_ACCESS_KEY)

    const { answer, seen } = await untilFinal(emulator.url, `/v1/videos/text2video/${created.data.task_id}`)
    deepStrictEqual(seen.slice(-2), ["processing", "succeed"])
    strictEqual(answer.data.task_status_msg, "")
    const video = answer.data.task_result.videos[0]
    strictEqual(video.duration, "10")
    const bytes = await fetch(video.url)
    strictEqual(bytes.status, 200)
    strictEqual(bytes.headers.get("content-type"), "video/mp4")
    strictEqual(new TextDecoder().decode(new Uint8Array(await bytes.arrayBuffer()).subarray(4, 8)), "ftyp")

    // A task is read on the path it was made on only.
    const elsewhere = await call(emulator.url, "GET", `/v1/videos/image2video/${created.data.task_id}`)
    strictEqual(elsewhere.status, 404)
    strictEqual((await elsewhere.json()).code, 1203)
  })
})

Deno.test("emulator kling: image2video takes a URL or prefix-less Base64; unsafe fails as risk control", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const created = await (await call(emulator.url, "POST", "/v1/videos/image2video", {
      model_name: "kling-v1",
      image: "https://example.com/first.png",
      image_tail: pixelPng,
      prompt: "it moves"
    })).json()
    strictEqual(created.code, 0)
    const done = await untilFinal(emulator.url, `/v1/videos/image2video/${created.data.task_id}`)
    strictEqual(done.answer.data.task_status, "succeed")
    strictEqual(done.answer.data.task_result.videos[0].duration, "5")

    const unsafe = await (await call(emulator.url, "POST", "/v1/videos/text2video", { prompt: "something unsafe" }))
      .json()
    const failed = await untilFinal(emulator.url, `/v1/videos/text2video/${unsafe.data.task_id}`)
    strictEqual(failed.answer.data.task_status, "failed")
    ok(failed.answer.data.task_status_msg.length > 0)
    strictEqual(failed.answer.data.task_result, undefined)
  })
})

Deno.test("emulator kling: the token is checked (missing 1001, bad signature 1002, not yet valid 1003, expired 1004)", async () => {
  await withEmulator({}, async (emulator) => {
    const now = Math.floor(Date.now() / 1000)
    const sign = (secret: string, nbf: number, exp: number) =>
      new SignJWT({})
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setIssuer(KLING_TEST_ACCESS_KEY)
        .setNotBefore(nbf)
        .setExpirationTime(exp)
        .sign(new TextEncoder().encode(secret))
    const cases: ReadonlyArray<readonly [string, number]> = [
      ["", 1001],
      [await sign("sk-test-wrong-secret", now - 5, now + 1800), 1002],
      [await sign(KLING_TEST_SECRET_KEY, now + 600, now + 1800), 1003],
      [await sign(KLING_TEST_SECRET_KEY, now - 3600, now - 1800), 1004],
      ["not-a-jwt", 1002]
    ]
    for (const [bearer, code] of cases) {
      const response = await fetch(`${emulator.url}/v1/videos/text2video`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(bearer === "" ? {} : { authorization: `Bearer ${bearer}` })
        },
        body: JSON.stringify({ prompt: "a cat" })
      })
      strictEqual(response.status, 401)
      const body = await response.json()
      strictEqual(body.code, code, JSON.stringify(body))
      ok(typeof body.request_id === "string")
    }
    strictEqual(emulator.requests.every((request) => request.key === undefined), true)
  })
})

Deno.test("emulator kling: bad fields are 400 code 1201", async () => {
  await withEmulator({}, async (emulator) => {
    const bodies: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["/v1/videos/text2video", {}],
      ["/v1/videos/text2video", { prompt: "x", duration: 5 }],
      ["/v1/videos/text2video", { prompt: "x", duration: "7" }],
      ["/v1/videos/text2video", { prompt: "x", mode: "max" }],
      ["/v1/videos/text2video", { prompt: "x", aspect_ratio: "4:3" }],
      ["/v1/videos/text2video", { prompt: "x", cfg_scale: 2 }],
      ["/v1/videos/text2video", { prompt: "x".repeat(2501) }],
      ["/v1/videos/image2video", { prompt: "x" }],
      ["/v1/videos/image2video", { image: `data:image/png;base64,${pixelPng}` }]
    ]
    for (const [path, body] of bodies) {
      const response = await call(emulator.url, "POST", path, body)
      strictEqual(response.status, 400, JSON.stringify(body).slice(0, 80))
      strictEqual((await response.json()).code, 1201)
    }
  })
})

Deno.test("emulator kling: the task list pages the tasks of its path, newest first", async () => {
  await withEmulator({}, async (emulator) => {
    const made: Array<string> = []
    for (const prompt of ["one", "two", "three"]) {
      made.push((await (await call(emulator.url, "POST", "/v1/videos/text2video", { prompt })).json()).data.task_id)
    }
    await call(emulator.url, "POST", "/v1/videos/image2video", { image: "https://example.com/a.png" })
    const page = await (await call(emulator.url, "GET", "/v1/videos/text2video?pageNum=1&pageSize=2")).json()
    strictEqual(page.code, 0)
    deepStrictEqual(page.data.map((task: { task_id: string }) => task.task_id), [made[2], made[1]])
    const next = await (await call(emulator.url, "GET", "/v1/videos/text2video?pageNum=2&pageSize=2")).json()
    deepStrictEqual(next.data.map((task: { task_id: string }) => task.task_id), [made[0]])
    strictEqual((await call(emulator.url, "GET", "/v1/videos/text2video?pageSize=0")).status, 400)
    strictEqual((await call(emulator.url, "GET", "/v1/videos/text2video", undefined, "not-a-jwt")).status, 401)
  })
})
