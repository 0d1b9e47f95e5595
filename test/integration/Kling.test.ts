/**
 * Kling's own video routes on the gateway (`/kling/v1/videos/*`, plain fetch:
 * Kling has no official TypeScript SDK) against the emulator: text2video and
 * image2video on a `kling` channel (its requests signed with the account's
 * access and secret keys, the token verified by the emulator with jose) and
 * on an `openai` video channel; polled to `succeed` in Kling's envelope; the
 * same task read through `/v1/videos/{id}` and the unified route; billed the
 * seconds the emulator reported × the price; a failed task refunded; errors
 * in Kling's envelope naming the field; and two instances on one PostgreSQL
 * database sharing the tasks, each failure refunded once.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Result } from "effect"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type Emulator, startEmulator } from "../../emulator/Emulator.ts"
import { KLING_TEST_ACCESS_KEY, KLING_TEST_SECRET_KEY } from "../../emulator/VideosKling.ts"
import { klingToken } from "../../src/upstreams/VideoAdapter.ts"
import { pixelPng } from "../emulator/Support.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway, type Store, type TestGateway } from "../support/Gateway.ts"

const ALICE = "sk-test-kling-alice-0001"
const BOB = "sk-test-kling-bob-00001"
const POOR = "sk-test-kling-poor-0001"
const PER_SECOND = 0.1
const CHANNEL_KEY = `${KLING_TEST_ACCESS_KEY}|${KLING_TEST_SECRET_KEY}`

const config = (emulatorUrl: string): BootstrapFile => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        "kling-v2-master": { per_second: PER_SECOND },
        "kling-v1": { per_second: PER_SECOND },
        "kling-on-openai": { per_second: PER_SECOND },
        "kling-on-ark": { per_second: PER_SECOND },
        "kling-on-gemini": { per_second: PER_SECOND }
      },
      channels: [
        {
          name: "kling",
          type: "kling",
          base_url: emulatorUrl,
          keys: [CHANNEL_KEY],
          models: ["kling-v2-master", "kling-v1"]
        },
        {
          name: "openai-video",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-up-kling-openai"],
          models: ["kling-on-openai"],
          model_mapping: { "kling-on-openai": "video-any" }
        },
        {
          name: "ark-video",
          type: "ark",
          base_url: `${emulatorUrl}/api/v3`,
          keys: ["sk-test-up-kling-ark"],
          models: ["kling-on-ark"],
          model_mapping: { "kling-on-ark": "doubao-seedance-1-0-pro-250528" }
        },
        {
          name: "gemini-video",
          type: "gemini",
          base_url: emulatorUrl,
          keys: ["sk-test-up-kling-gemini"],
          models: ["kling-on-gemini"],
          model_mapping: { "kling-on-gemini": "veo-3.0-generate-001" }
        }
      ],
      users: [
        { username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: ALICE }] },
        { username: "bob", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: BOB }] },
        { username: "poor", group: "default", quota: 10_000, tokens: [{ name: "main", key: POOR }] }
      ],
      settings: { cooldown_failures: 1000, task_poll_interval_ms: 100 }
    }),
    "kling.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const start = async (
  options: { readonly store?: Store; readonly databaseUrl?: string; readonly emulator?: Emulator } = {}
): Promise<TestGateway> => {
  const emulator = options.emulator ?? startEmulator({ videoStepMs: 100 })
  // PostgreSQL by default: the tests read the usage rows, and it starts faster than PGlite.
  return await startGateway({
    config,
    store: options.store ?? "postgres",
    databaseUrl: options.databaseUrl,
    emulator,
    ownsEmulator: options.emulator === undefined
  })
}

const post = (gateway: TestGateway, path: string, body: unknown, key = ALICE) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const get = (gateway: TestGateway, path: string, key = ALICE) =>
  fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${key}` } })

const usedBy = async (gateway: TestGateway, key = ALICE): Promise<number> =>
  (await (await get(gateway, "/api/usage/token", key)).json()).data.total_used

const eventually = async (check: () => Promise<boolean>, ms = 10_000): Promise<void> => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("The condition never held.")
}

/** Polls the Kling query route until the task is final; its last answer. */
const untilFinal = async (gateway: TestGateway, action: string, id: string, key = ALICE) => {
  let answer: { code: number; data: Record<string, unknown> } | undefined
  await eventually(async () => {
    const response = await get(gateway, `/kling/v1/videos/${action}/${id}`, key)
    strictEqual(response.status, 200)
    answer = await response.json()
    return answer!.data.task_status === "succeed" || answer!.data.task_status === "failed"
  })
  return answer!
}

/** Quota units of `seconds` of video at `PER_SECOND` (ratio 1). */
const costOf = (seconds: number): number => Math.round(seconds * PER_SECOND * 1_000_000)

/** What the emulator itself reports of a Kling task (queried with a freshly signed token). */
const klingReported = async (emulator: Emulator, action: string, upstreamId: string) => {
  const token = await Effect.runPromise(klingToken(CHANNEL_KEY, Math.floor(Date.now() / 1000)))
  const response = await fetch(`${emulator.url}/v1/videos/${action}/${upstreamId}`, {
    headers: { authorization: `Bearer ${token}` }
  })
  return (await response.json()).data
}

/** The Kling task ids the gateway polled on the emulator. */
const klingUpstreamIds = (emulator: Emulator): ReadonlyArray<string> => [
  ...new Set(
    emulator.requests.flatMap((request) => {
      const match = /^\/v1\/videos\/(?:text2video|image2video)\/([^/]+)$/.exec(request.path)
      return match === null ? [] : [match[1]]
    })
  )
]

Deno.test("kling: text2video on a kling channel, signed upstream, polled to succeed, billed what Kling reported", async () => {
  const gateway = await start()
  try {
    const response = await post(gateway, "/kling/v1/videos/text2video", {
      model_name: "kling-v2-master",
      prompt: "a paper boat on a river",
      negative_prompt: "blur",
      cfg_scale: 0.4,
      mode: "pro",
      aspect_ratio: "9:16",
      duration: "10",
      callback_url: "",
      external_task_id: "order-42",
      camera_control: { type: "simple", config: { zoom: 5 } }
    })
    strictEqual(response.status, 200)
    const created = await response.json()
    strictEqual(created.code, 0)
    strictEqual(created.message, "SUCCEED")
    ok(typeof created.request_id === "string" && created.request_id.length > 0)
    const id = created.data.task_id as string
    ok(/^video_[A-Za-z0-9]{32}$/.test(id), id)
    strictEqual(created.data.task_status, "submitted")
    deepStrictEqual(created.data.task_info, { external_task_id: "order-42" })
    ok(created.data.created_at > 1e12, "created_at is in milliseconds")
    strictEqual(await usedBy(gateway), costOf(10), "the pre-charge is the requested 10 seconds")

    // The upstream call: Kling's own path and fields, the token of the account's access key, nothing of the caller's.
    const submit = gateway.emulator.requests.find((request) => request.path === "/v1/videos/text2video")!
    strictEqual(submit.key, KLING_TEST_ACCESS_KEY, "the emulator verified the token against the access key")
    ok(!JSON.stringify(submit.headers).includes(KLING_TEST_SECRET_KEY), "the secret key is never sent")
    deepStrictEqual(submit.body, {
      model_name: "kling-v2-master",
      prompt: "a paper boat on a river",
      negative_prompt: "blur",
      cfg_scale: 0.4,
      mode: "pro",
      aspect_ratio: "9:16",
      duration: "10",
      camera_control: { type: "simple", config: { zoom: 5 } }
    })

    const done = await untilFinal(gateway, "text2video", id)
    strictEqual(done.data.task_status, "succeed")
    strictEqual(done.data.task_status_msg, "")
    const videos = (done.data.task_result as { videos: Array<{ id: string; url: string; duration: string }> }).videos
    strictEqual(videos[0].url, `${gateway.url}/v1/videos/${id}/content`)
    ok((done.data.updated_at as number) >= (done.data.created_at as number))

    // Billing: the seconds the emulator reported for its task × the price.
    const [upstreamId] = klingUpstreamIds(gateway.emulator)
    const reported = await klingReported(gateway.emulator, "text2video", upstreamId)
    const seconds = Math.ceil(Number(reported.task_result.videos[0].duration))
    strictEqual(videos[0].duration, String(seconds))
    await eventually(async () => (await usedBy(gateway)) === costOf(seconds))

    // The bytes through the gateway's content route (the vendor's URL is never shown).
    const content = await get(gateway, `/v1/videos/${id}/content`)
    strictEqual(content.status, 200)
    strictEqual(content.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await content.arrayBuffer())
    strictEqual(new TextDecoder().decode(bytes.subarray(4, 8)), "ftyp")

    // The same task through the OpenAI-style and unified routes.
    const object = await (await get(gateway, `/v1/videos/${id}`)).json()
    strictEqual(object.id, id)
    strictEqual(object.status, "completed")
    strictEqual(object.seconds, "10")
    strictEqual(object.model, "kling-v2-master")
    const unified = await (await get(gateway, `/v1/video/generations/${id}`)).json()
    strictEqual(unified.data.task_id, id)
    strictEqual(unified.data.status, "succeeded")

    // No answer names the upstream id or the vendor's URL.
    for (
      const text of [JSON.stringify(created), JSON.stringify(done), JSON.stringify(object), JSON.stringify(unified)]
    ) {
      ok(!text.includes(upstreamId) && !text.includes("/_emulator/"), text.slice(0, 200))
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("kling: image2video on a kling channel sends image and a prefix-less image_tail; readable on its path", async () => {
  const gateway = await start()
  try {
    const created = await (await post(gateway, "/kling/v1/videos/image2video", {
      model_name: "kling-v2-master",
      image: "https://example.com/first.png",
      image_tail: `data:image/png;base64,${pixelPng}`,
      prompt: "the frame comes alive"
    })).json()
    strictEqual(created.code, 0)
    const id = created.data.task_id as string
    const submit = gateway.emulator.requests.find((request) => request.path === "/v1/videos/image2video")!
    const body = submit.body as Record<string, unknown>
    strictEqual(body.image, "https://example.com/first.png")
    strictEqual(body.image_tail, pixelPng, "Kling takes Base64 without the data: prefix")
    strictEqual(body.duration, "5", "Kling's default duration is asked and billed")
    strictEqual(await usedBy(gateway), costOf(5))
    const done = await untilFinal(gateway, "image2video", id)
    strictEqual(done.data.task_status, "succeed")
    // The gateway polled the task on Kling's image2video path.
    ok(gateway.emulator.requests.some((request) => /^\/v1\/videos\/image2video\/\d{18}$/.test(request.path)))
    // A task of the caller reads on either Kling query path (its id is the gateway's).
    strictEqual((await (await get(gateway, `/kling/v1/videos/text2video/${id}`)).json()).data.task_status, "succeed")
  } finally {
    await gateway.close()
  }
})

Deno.test("kling: a Kling-shaped request runs on an openai video channel, billed the seconds OpenAI's object reported", async () => {
  const gateway = await start()
  try {
    for (
      const [action, extra] of [["text2video", {}], ["image2video", { image: "https://example.com/a.png" }]] as const
    ) {
      gateway.emulator.reset()
      const before = await usedBy(gateway)
      const created = await (await post(gateway, `/kling/v1/videos/${action}`, {
        model_name: "kling-on-openai",
        prompt: "a lighthouse at dusk",
        duration: "10",
        ...extra
      })).json()
      strictEqual(created.code, 0, JSON.stringify(created))
      const submit = gateway.emulator.requests.find((request) => request.method === "POST")!
      strictEqual(submit.path, "/v1/videos")
      const body = submit.body as Record<string, unknown>
      strictEqual(body.model, "video-any")
      strictEqual(body.seconds, "10")
      strictEqual(body.prompt, "a lighthouse at dusk")
      if (action === "image2video") deepStrictEqual(body.input_reference, { image_url: "https://example.com/a.png" })
      const done = await untilFinal(gateway, action, created.data.task_id)
      strictEqual(done.data.task_status, "succeed")
      const poll = gateway.emulator.requests.find((request) => request.method === "GET")!
      const reported = await (await fetch(`${gateway.emulator.url}${poll.path}`, {
        headers: { authorization: "Bearer sk-test-up-kling-openai" }
      })).json()
      await eventually(async () => (await usedBy(gateway)) - before === costOf(Number(reported.seconds)))
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("kling: a failed task reads failed with Kling's message and is refunded once", async () => {
  const gateway = await start()
  try {
    const created = await (await post(gateway, "/kling/v1/videos/text2video", {
      model_name: "kling-v2-master",
      prompt: "something unsafe"
    })).json()
    strictEqual(await usedBy(gateway), costOf(5))
    const done = await untilFinal(gateway, "text2video", created.data.task_id)
    strictEqual(done.data.task_status, "failed")
    ok((done.data.task_status_msg as string).length > 0)
    strictEqual(done.data.task_result, undefined)
    await eventually(async () => (await usedBy(gateway)) === 0)
    await get(gateway, `/kling/v1/videos/text2video/${created.data.task_id}`)
    await new Promise((resolve) => setTimeout(resolve, 300))
    strictEqual(await usedBy(gateway), 0)
    const rows = await gateway.query<{ n: bigint }>("SELECT count(*) AS n FROM usage_logs WHERE attempt = 0")
    strictEqual(Number(rows[0].n), 1, "one refund row")
  } finally {
    await gateway.close()
  }
})

Deno.test("kling: errors in Kling's envelope with its status and code, naming the field; nothing charged", async () => {
  const gateway = await start()
  try {
    const cases: ReadonlyArray<readonly [string, unknown, number, number, string | undefined]> = [
      ["text2video", { model_name: "kling-v2-master" }, 400, 1201, "prompt"],
      ["text2video", { model_name: "kling-v2-master", prompt: "x", duration: "7" }, 400, 1201, "duration"],
      ["text2video", { model_name: "kling-v2-master", prompt: "x", mode: "max" }, 400, 1201, "mode"],
      ["text2video", { model_name: "kling-v2-master", prompt: "x", aspect_ratio: "4:3" }, 400, 1201, "aspect_ratio"],
      ["text2video", { model_name: "kling-v2-master", prompt: "x", cfg_scale: 3 }, 400, 1201, "cfg_scale"],
      [
        "text2video",
        { model_name: "kling-v2-master", prompt: "x", callback_url: "https://x.example/cb" },
        400,
        1201,
        "callback_url"
      ],
      ["text2video", { model_name: "kling-v2-master", prompt: "\u0000" }, 400, 1201, "prompt"],
      ["image2video", { model_name: "kling-v2-master", prompt: "x" }, 400, 1201, "image"],
      ["image2video", { model_name: "kling-v2-master", image: "ftp://x.example/a.png" }, 400, 1201, "image"],
      ["text2video", { model_name: "no-such-model", prompt: "x" }, 404, 1203, "model"],
      ["text2video", [1, 2], 400, 1201, undefined]
    ]
    for (const [action, body, status, code, param] of cases) {
      const response = await post(gateway, `/kling/v1/videos/${action}`, body)
      strictEqual(response.status, status, JSON.stringify(body))
      const answer = await response.json()
      strictEqual(answer.code, code, JSON.stringify(answer))
      ok(typeof answer.message === "string" && answer.message.length > 0)
      ok(typeof answer.request_id === "string")
      if (param !== undefined) strictEqual(answer.param, param, JSON.stringify(answer))
    }
    const unauthorized = await post(gateway, "/kling/v1/videos/text2video", { prompt: "x" }, "sk-test-nobody")
    strictEqual(unauthorized.status, 401)
    strictEqual((await unauthorized.json()).code, 1000)
    const poor = await post(
      gateway,
      "/kling/v1/videos/text2video",
      { model_name: "kling-v2-master", prompt: "x" },
      POOR
    )
    strictEqual(poor.status, 429)
    strictEqual((await poor.json()).code, 1102)
    strictEqual(await usedBy(gateway), 0)
    strictEqual(await usedBy(gateway, POOR), 0)
    strictEqual(gateway.emulator.requests.length, 0, "no bad request reached the vendor")

    // The vendor refusing the request: its message, Kling's 400 1201, nothing charged.
    gateway.emulator.setFaults([{
      match: { path: "/v1/videos/text2video" },
      status: 400,
      message: "prompt is invalid"
    }])
    const refused = await post(gateway, "/kling/v1/videos/text2video", { model_name: "kling-v2-master", prompt: "x" })
    strictEqual(refused.status, 400)
    const refusal = await refused.json()
    strictEqual(refusal.code, 1201)
    strictEqual(refusal.message, "prompt is invalid")
    // A vendor message quoting the secret key: masked before it reaches the caller.
    gateway.emulator.setFaults([{
      match: { path: "/v1/videos/text2video" },
      status: 400,
      message: `signature of ${KLING_TEST_SECRET_KEY} is wrong`
    }])
    const quoted =
      await (await post(gateway, "/kling/v1/videos/text2video", { model_name: "kling-v2-master", prompt: "x" }))
        .json()
    strictEqual(quoted.code, 1201)
    ok(!JSON.stringify(quoted).includes(KLING_TEST_SECRET_KEY), JSON.stringify(quoted))
    gateway.emulator.clearFaults()
    strictEqual(await usedBy(gateway), 0)

    // Another user's task: 404 code 1203 on either path.
    const created =
      await (await post(gateway, "/kling/v1/videos/text2video", { prompt: "mine", model_name: "kling-v1" }))
        .json()
    strictEqual(created.code, 0, "no model_name: kling-v1, Kling's default")
    const foreign = await get(gateway, `/kling/v1/videos/text2video/${created.data.task_id}`, BOB)
    strictEqual(foreign.status, 404)
    strictEqual((await foreign.json()).code, 1203)
  } finally {
    await gateway.close()
  }
})

Deno.test("kling: two instances on PostgreSQL share the tasks; each completes or is refunded once", async () => {
  const emulator = startEmulator({ videoStepMs: 150 })
  const first = await start({ store: "postgres", emulator })
  const second = await start({ databaseUrl: first.databaseUrl, emulator })
  try {
    const ids: Array<string> = []
    for (let index = 0; index < 8; index++) {
      const gateway = index % 2 === 0 ? first : second
      const action = index % 4 === 1 ? "image2video" : "text2video"
      const answer = await (await post(gateway, `/kling/v1/videos/${action}`, {
        model_name: index % 4 === 3 ? "kling-on-openai" : "kling-v2-master",
        prompt: index % 3 === 0 ? `clip ${index}, unsafe` : `clip ${index}`,
        ...(action === "image2video" ? { image: "https://example.com/a.png" } : {})
      })).json()
      strictEqual(answer.code, 0, JSON.stringify(answer))
      ids.push(answer.data.task_id)
    }
    const failing = ids.filter((_, index) => index % 3 === 0).length
    await eventually(async () => {
      const rows = await first.query<{ open: bigint }>("SELECT count(*) AS open FROM tasks WHERE NOT settled")
      return Number(rows[0].open) === 0
    }, 30_000)
    // Each task reads the same on both instances, through Kling's route and OpenAI's.
    for (const [index, id] of ids.entries()) {
      const expected = index % 3 === 0 ? "failed" : "succeed"
      for (const gateway of [first, second]) {
        strictEqual((await (await get(gateway, `/kling/v1/videos/text2video/${id}`)).json()).data.task_status, expected)
      }
      strictEqual(
        (await (await get(second, `/v1/videos/${id}`)).json()).status,
        expected === "failed" ? "failed" : "completed"
      )
    }
    const refunds = await first.query<{ n: bigint; total: bigint }>(
      "SELECT count(*) AS n, COALESCE(SUM(-cost), 0) AS total FROM usage_logs WHERE attempt = 0"
    )
    strictEqual(Number(refunds[0].n), failing, "one refund per failed task")
    strictEqual(Number(refunds[0].total), failing * costOf(5))
    // Completed tasks: billed what the emulator reported (5 s each: Kling's default, asked of both vendors).
    await eventually(async () => (await usedBy(first)) === (ids.length - failing) * costOf(5))
    strictEqual(await usedBy(second), (ids.length - failing) * costOf(5))
    const instances = await first.query<{ n: bigint }>("SELECT count(DISTINCT claimed_by) AS n FROM tasks")
    ok(Number(instances[0].n) >= 1)
  } finally {
    await second.stop()
    await first.close()
    await emulator.close()
  }
})

Deno.test("kling: the admin API creates a kling channel (key masked) that serves at once; its test is signed and passes", async () => {
  const gateway = await start()
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const priced = await root.call("PUT", "/api/pricing", { model: "kling-admin", per_second: PER_SECOND })
    strictEqual(priced.success, true, priced.message)
    const created = await root.call<{ id: number; type: string; keys: Array<{ key: string }> }>(
      "POST",
      "/api/channel/",
      {
        name: "kling-admin",
        type: "kling",
        base_url: gateway.emulator.url,
        keys: [CHANNEL_KEY],
        models: ["kling-admin"],
        groups: ["default"]
      }
    )
    strictEqual(created.success, true, created.message)
    strictEqual(created.data.type, "kling")
    ok(!JSON.stringify(created.data).includes(KLING_TEST_SECRET_KEY), "the secret key is not shown back")

    const tested = await root.call<{ status: number }>("POST", `/api/channel/test/${created.data.id}`)
    deepStrictEqual([tested.success, tested.data.status], [true, 200], tested.message)
    const probe = gateway.emulator.requests.find((request) =>
      request.path === "/v1/videos/text2video" && request.method === "GET"
    )
    strictEqual(probe?.key, KLING_TEST_ACCESS_KEY, "the test call is Kling's task list, signed")

    const answer =
      await (await post(gateway, "/kling/v1/videos/text2video", { model_name: "kling-admin", prompt: "x" })).json()
    strictEqual(answer.code, 0, JSON.stringify(answer))
    const wrong = await root.call<{ id: number }>("POST", "/api/channel/", {
      name: "kling-wrong",
      type: "kling",
      base_url: gateway.emulator.url,
      keys: [`${KLING_TEST_ACCESS_KEY}|sk-test-not-the-secret`],
      models: ["kling-admin-2"]
    })
    const failed = await root.call("POST", `/api/channel/test/${wrong.data.id}`)
    strictEqual(failed.success, false)
  } finally {
    await gateway.close()
  }
})

Deno.test("kling: a Kling-shaped request runs on ark and gemini video channels with the fields they take", async () => {
  const gateway = await start()
  try {
    // Ark: ratio, resolution (from mode), duration, watermark and audio; billed the duration Ark's task reports.
    const ark = await (await post(gateway, "/kling/v1/videos/text2video", {
      model_name: "kling-on-ark",
      prompt: "a kite",
      aspect_ratio: "1:1",
      mode: "pro",
      duration: "10",
      sound: "on",
      watermark_info: { enabled: false }
    })).json()
    strictEqual(ark.code, 0, JSON.stringify(ark))
    const arkSubmit = gateway.emulator.requests.find((request) =>
      request.path === "/api/v3/contents/generations/tasks"
    )!
    const arkBody = arkSubmit.body as Record<string, unknown>
    deepStrictEqual(
      [arkBody.model, arkBody.ratio, arkBody.resolution, arkBody.duration, arkBody.watermark, arkBody.generate_audio],
      ["doubao-seedance-1-0-pro-250528", "1:1", "1080p", 10, false, true]
    )
    strictEqual((await untilFinal(gateway, "text2video", ark.data.task_id)).data.task_status, "succeed")
    const arkPoll = gateway.emulator.requests.find((request) =>
      request.method === "GET" && request.path.startsWith("/api/v3/contents/generations/tasks/")
    )!
    const arkTask = await (await fetch(`${gateway.emulator.url}${arkPoll.path}`, {
      headers: { authorization: "Bearer sk-test-up-kling-ark" }
    })).json()
    await eventually(async () => (await usedBy(gateway)) === costOf(arkTask.duration))

    // Veo: the first frame, the negative prompt, ratio and duration as its parameters.
    const before = await usedBy(gateway)
    const veo = await (await post(gateway, "/kling/v1/videos/image2video", {
      model_name: "kling-on-gemini",
      prompt: "waves",
      negative_prompt: "people",
      // Veo takes images inline only: Kling's bare Base64 reaches it as bytes.
      image: pixelPng
    })).json()
    strictEqual(veo.code, 0, JSON.stringify(veo))
    const veoSubmit = gateway.emulator.requests.find((request) => request.path.endsWith(":predictLongRunning"))!
    const veoBody = veoSubmit.body as { parameters: Record<string, unknown>; instances: Array<Record<string, unknown>> }
    strictEqual(veoBody.parameters.negativePrompt, "people")
    strictEqual(veoBody.parameters.durationSeconds, 5)
    deepStrictEqual(veoBody.instances[0].image, { bytesBase64Encoded: pixelPng, mimeType: "image/png" })
    strictEqual((await untilFinal(gateway, "image2video", veo.data.task_id)).data.task_status, "succeed")
    // Veo reports no duration: the requested (Kling's default) 5 seconds stay billed.
    await eventually(async () => (await usedBy(gateway)) - before === costOf(5))
  } finally {
    await gateway.close()
  }
})
