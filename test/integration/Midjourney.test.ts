/**
 * The `/mj/*` routes end to end through plain `fetch` (Midjourney-proxy has
 * no official SDK), against the emulator's proxy: imagine → poll → SUCCESS
 * with buttons → upscale by `customId` → fetch; the image through the
 * gateway; a failed task refunded; the caller's own tasks only; bad input as
 * 400s in the proxy's envelope naming the field, charging nothing; each
 * action billed at its price in the price table, as the emulator saw the
 * actions; a modal; a channel made and tested through the admin API; and two gateway instances on one PostgreSQL sharing the
 * tasks, each failure refunded once.
 */
import { Result } from "effect"
import { deepStrictEqual, notStrictEqual, ok, strictEqual } from "node:assert/strict"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { signedQuery } from "../../src/domain/SignedUrl.ts"
import { browser } from "../support/Browser.ts"
import { ROOT_PASSWORD, startGateway, type Store, type TestGateway } from "../support/Gateway.ts"
import { SCRIPT_PAGE, startHostileUpstream, startInternalServer } from "../support/HostileUpstream.ts"
import { MP4, PNG } from "../support/MediaServer.ts"

const ALICE = "sk-test-mj-alice-00001"
const BOB = "sk-test-mj-bob-0000001"
const SECRET = "sk-test-up-mj-secret-1"
const ALICE_PASSWORD = "alice-mj-password-1"
const BOB_PASSWORD = "bob-mj-password-1"
const DATA_URI = "data:image/png;base64,iVBORw0KGgo="

/** USD per action (the price table's `per_image` of each `mj_<action>` model). */
const PRICES: Record<string, number> = {
  mj_imagine: 0.05,
  mj_upscale: 0.02,
  mj_variation: 0.03,
  mj_reroll: 0.035,
  mj_blend: 0.04,
  mj_describe: 0.01,
  mj_modal: 0.06
}
/** Quota units of one action. */
const unitsOf = (model: string): number => Math.round(PRICES[model] * 1_000_000)

/** A second proxy secret (a second channel). */
const SECRET_B = "sk-test-up-mj-secret-2"

const config = (
  emulatorUrl: string,
  extra: ReadonlyArray<Record<string, unknown>> = [],
  settings: Record<string, unknown> = {}
): BootstrapFile => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(Object.entries(PRICES).map(([model, usd]) => [model, { per_image: usd }])),
      channels: [{
        name: "mj-proxy",
        type: "midjourney",
        base_url: `${emulatorUrl}/mj`,
        keys: [SECRET],
        models: Object.keys(PRICES)
      }, ...extra],
      users: [
        {
          username: "alice",
          password: ALICE_PASSWORD,
          group: "default",
          quota: 10_000_000,
          tokens: [{ name: "main", key: ALICE }]
        },
        {
          username: "bob",
          password: BOB_PASSWORD,
          group: "default",
          quota: 10_000_000,
          tokens: [{ name: "main", key: BOB }]
        }
      ],
      settings: { task_poll_interval_ms: 100, cooldown_failures: 1000, ...settings }
    }),
    "midjourney.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const start = async (options: {
  store?: Store
  databaseUrl?: string
  emulator?: ReturnType<typeof startEmulator>
  /** More channels for the bootstrap file. */
  channels?: ReadonlyArray<Record<string, unknown>>
  /** More gateway settings. */
  settings?: Record<string, unknown>
}) => {
  const emulator = options.emulator ?? startEmulator({ videoStepMs: 60, validKeys: [SECRET, SECRET_B] })
  // PostgreSQL: the tests read the ledger and the usage rows with SQL.
  return await startGateway({
    config: (emulatorUrl) =>
      config(
        emulatorUrl,
        options.channels?.map((channel) => ({ base_url: emulatorUrl, ...channel })),
        options.settings
      ),
    store: options.databaseUrl === undefined ? options.store ?? "postgres" : undefined,
    databaseUrl: options.databaseUrl,
    emulator,
    ownsEmulator: options.emulator === undefined
  })
}

type Json = Record<string, unknown>

/** A `/mj` caller with `key` as Bearer, or as `mj-api-secret` when `header` says so. */
const mj = (gateway: TestGateway, key = ALICE, header: "bearer" | "mj-api-secret" = "bearer") => {
  const auth: Record<string, string> = header === "bearer"
    ? { authorization: `Bearer ${key}` }
    : { "mj-api-secret": key }
  return {
    post: async (path: string, body: unknown): Promise<{ status: number; body: Json }> => {
      const response = await fetch(gateway.url + path, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body)
      })
      return { status: response.status, body: await response.json() }
    },
    task: async (id: string): Promise<{ status: number; body: Json }> => {
      const response = await fetch(`${gateway.url}/mj/task/${id}/fetch`, { headers: auth })
      return { status: response.status, body: await response.json() }
    }
  }
}

/** Polls the task until its status is `status` (8 s at most). */
const until = async (caller: ReturnType<typeof mj>, id: string, status: string): Promise<Json> => {
  const deadline = Date.now() + 8000
  while (Date.now() < deadline) {
    const task = await caller.task(id)
    if (task.body.status === status) return task.body
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`Task ${id} never reached ${status}.`)
}

/** Quota units used by `key`. */
const usedBy = async (gateway: TestGateway, key = ALICE): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${key}` } })
  return (await response.json()).data.total_used
}

/** Waits until `check` holds (8 s at most). */
const eventually = async (check: () => Promise<boolean>, ms = 8000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("The condition never held.")
}

/** The upstream task ids the emulator handed out (the paths the gateway polled). */
const upstreamIds = (gateway: TestGateway): ReadonlyArray<string> => [
  ...new Set(
    gateway.emulator.requests.flatMap((request) => {
      const match = /^\/mj\/task\/([^/]+)\/fetch$/.exec(request.path)
      return match === null ? [] : [decodeURIComponent(match[1])]
    })
  )
]

/** The models the emulator's accepted submits bill, from the actions it recorded (path and customId). */
const billedActionsSeenUpstream = (gateway: TestGateway): ReadonlyArray<string> =>
  gateway.emulator.requests.flatMap((request) => {
    const body = (request.body ?? {}) as Json
    switch (request.path) {
      case "/mj/submit/imagine":
        return ["mj_imagine"]
      case "/mj/submit/blend":
        return ["mj_blend"]
      case "/mj/submit/describe":
        return ["mj_describe"]
      case "/mj/submit/change":
        return [`mj_${String(body.action).toLowerCase()}`]
      case "/mj/submit/action": {
        const id = String(body.customId)
        return [
          id.includes("upsample")
            ? "mj_upscale"
            : id.includes("reroll")
            ? "mj_reroll"
            : id.includes("Inpaint") || id.includes("CustomZoom")
            ? "mj_modal"
            : "mj_variation"
        ]
      }
      default:
        return []
    }
  })

Deno.test("mj: imagine → SUCCESS with buttons → upscale by customId → fetch; the image through the gateway; billed per action", async () => {
  const gateway = await start({})
  try {
    const alice = mj(gateway)
    const submit = await alice.post("/mj/submit/imagine", { prompt: "a lighthouse at dawn --ar 16:9", state: "s1" })
    strictEqual(submit.status, 200)
    strictEqual(submit.body.code, 1)
    strictEqual(submit.body.description, "Submit success")
    const id = String(submit.body.result)
    ok(/^mj_[0-9a-f]{32}$/.test(id), id)

    const first = await alice.task(id)
    strictEqual(first.status, 200)
    ok(["SUBMITTED", "IN_PROGRESS", "SUCCESS"].includes(String(first.body.status)), String(first.body.status))
    if (first.body.status !== "SUCCESS") strictEqual(first.body.imageUrl, "", "no preview URL while running")
    const done = await until(alice, id, "SUCCESS")
    strictEqual(done.id, id)
    strictEqual(done.action, "IMAGINE")
    strictEqual(done.progress, "100%")
    strictEqual(done.state, "s1")
    strictEqual(done.prompt, "a lighthouse at dawn --ar 16:9")
    const buttons = done.buttons as Array<{ customId: string; label: string; emoji: string }>
    deepStrictEqual(buttons.map((button) => button.label), ["U1", "U2", "U3", "U4", "", "V1", "V2", "V3", "V4"])
    const imageUrl = new URL(String(done.imageUrl))
    strictEqual(`${imageUrl.origin}${imageUrl.pathname}`, `${gateway.url}/mj/image/${id}`)
    ok(/^\d+$/.test(imageUrl.searchParams.get("expires") ?? ""), "a signed URL: its expiry")
    ok(/^[A-Za-z0-9_-]{43}$/.test(imageUrl.searchParams.get("signature") ?? ""), "and its signature")
    const upstream = upstreamIds(gateway)
    strictEqual(upstream.length, 1)
    ok(!JSON.stringify(done).includes(upstream[0]), "the upstream id never reaches the caller")
    ok(!JSON.stringify(done).includes(gateway.emulator.url), "nor the upstream host")

    // The image, through the gateway, by its signed URL without a key (an <img> sends none), the emulator's bytes.
    const image = await fetch(String(done.imageUrl))
    strictEqual(image.status, 200)
    strictEqual(image.headers.get("content-type"), "image/png")
    strictEqual(image.headers.get("x-content-type-options"), "nosniff")
    strictEqual(image.headers.get("content-security-policy"), "default-src 'none'; sandbox")
    const direct = await fetch(`${gateway.emulator.url}/_emulator/mj/${upstream[0]}.png`)
    deepStrictEqual(await image.bytes(), await direct.bytes())

    // Upscale U2 by its customId, with the key in mj-api-secret as proxy clients send it.
    const viaSecret = mj(gateway, ALICE, "mj-api-secret")
    const upscale = await viaSecret.post("/mj/submit/action", { taskId: id, customId: buttons[1].customId })
    strictEqual(upscale.status, 200)
    strictEqual(upscale.body.code, 1)
    const upscaled = await until(viaSecret, String(upscale.body.result), "SUCCESS")
    strictEqual(upscaled.action, "UPSCALE")
    strictEqual(upscaled.customId, buttons[1].customId)
    ok((upscaled.buttons as Array<{ label: string }>).some((button) => button.label === "Vary (Strong)"))
    const sent = gateway.emulator.requests.find((request) => request.path === "/mj/submit/action")!
    strictEqual((sent.body as Json).taskId, upstream[0], "the upstream got its own id")
    strictEqual(sent.headers["mj-api-secret"], SECRET, "and the channel's secret, not the caller's key")

    // Billed: the price of each action the emulator ran.
    const expected = billedActionsSeenUpstream(gateway).reduce((sum, model) => sum + unitsOf(model), 0)
    strictEqual(expected, unitsOf("mj_imagine") + unitsOf("mj_upscale"))
    await eventually(async () => (await usedBy(gateway)) === expected)
    const logged = await gateway.query<{ model: string; cost: bigint }>(
      "SELECT model, cost FROM usage_logs WHERE attempt > 0 ORDER BY id"
    )
    deepStrictEqual(logged.map((row) => [row.model, Number(row.cost)]), [
      ["mj_imagine", unitsOf("mj_imagine")],
      ["mj_upscale", unitsOf("mj_upscale")]
    ])
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: change, simple-change, reroll, blend, describe and a Vary (Region) modal; each billed once at its action's price", async () => {
  const gateway = await start({})
  try {
    const alice = mj(gateway)
    const imagine = await alice.post("/mj/submit/imagine", { prompt: "a red fox" })
    const grid = await until(alice, String(imagine.body.result), "SUCCESS")
    const change = await alice.post("/mj/submit/change", { taskId: grid.id, action: "VARIATION", index: 3 })
    strictEqual(change.body.code, 1)
    strictEqual((await until(alice, String(change.body.result), "SUCCESS")).action, "VARIATION")
    const simple = await alice.post("/mj/submit/simple-change", { content: `${grid.id} U2` })
    strictEqual(simple.body.code, 1)
    strictEqual((await until(alice, String(simple.body.result), "SUCCESS")).action, "UPSCALE")
    const reroll = (grid.buttons as Array<{ customId: string; emoji: string }>).find((button) => button.emoji === "🔄")!
    const rerolled = await alice.post("/mj/submit/action", { taskId: grid.id, customId: reroll.customId })
    strictEqual((await until(alice, String(rerolled.body.result), "SUCCESS")).action, "REROLL")
    const blend = await alice.post("/mj/submit/blend", { base64Array: [DATA_URI, DATA_URI], dimensions: "SQUARE" })
    strictEqual((await until(alice, String(blend.body.result), "SUCCESS")).action, "BLEND")
    const describe = await alice.post("/mj/submit/describe", { base64: DATA_URI })
    const described = await until(alice, String(describe.body.result), "SUCCESS")
    strictEqual(described.action, "DESCRIBE")
    ok(String(described.prompt).includes("1️⃣"), "the described prompts")

    // Vary (Region) on an upscale: code 21, the task waits; the modal starts it, with the same id; billed once.
    const u1 = (grid.buttons as Array<{ customId: string }>)[0]
    const upscale = await alice.post("/mj/submit/action", { taskId: grid.id, customId: u1.customId })
    const upscaled = await until(alice, String(upscale.body.result), "SUCCESS")
    const region = (upscaled.buttons as Array<{ customId: string; label: string }>).find((button) =>
      button.label === "Vary (Region)"
    )!
    const opened = await alice.post("/mj/submit/action", { taskId: upscaled.id, customId: region.customId })
    strictEqual(opened.body.code, 21)
    strictEqual(opened.body.description, "Waiting for window confirm")
    const waiting = String(opened.body.result)
    strictEqual((await alice.task(waiting)).body.status, "SUBMITTED")
    const modal = await alice.post("/mj/submit/modal", { taskId: waiting, prompt: "a blue hat", maskBase64: DATA_URI })
    strictEqual(modal.status, 200)
    deepStrictEqual([modal.body.code, modal.body.result], [1, waiting])
    strictEqual((await until(alice, waiting, "SUCCESS")).action, "INPAINT")
    const again = await alice.post("/mj/submit/modal", { taskId: waiting })
    strictEqual(again.status, 400)
    strictEqual(again.body.param, "taskId")

    const seen = billedActionsSeenUpstream(gateway)
    deepStrictEqual(seen, [
      "mj_imagine",
      "mj_variation",
      "mj_upscale",
      "mj_reroll",
      "mj_blend",
      "mj_describe",
      "mj_upscale",
      "mj_modal"
    ])
    const expected = seen.reduce((sum, model) => sum + unitsOf(model), 0)
    await eventually(async () => (await usedBy(gateway)) === expected)
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: a task that fails upstream is FAILURE with its reason and its charge refunded", async () => {
  const gateway = await start({})
  try {
    const alice = mj(gateway)
    const submit = await alice.post("/mj/submit/imagine", { prompt: "a broken vase" })
    strictEqual(submit.body.code, 1)
    const failed = await until(alice, String(submit.body.result), "FAILURE")
    ok(String(failed.failReason).length > 0)
    strictEqual(failed.imageUrl, "")
    deepStrictEqual(failed.buttons, [])
    await eventually(async () => (await usedBy(gateway)) === 0)
    const rows = await gateway.query<{ cost: bigint }>("SELECT cost FROM usage_logs WHERE attempt = 0")
    deepStrictEqual(rows.map((row) => Number(row.cost)), [-unitsOf("mj_imagine")])
    const image = await fetch(`${gateway.url}/mj/image/${submit.body.result}`, {
      headers: { authorization: `Bearer ${ALICE}` }
    })
    strictEqual(image.status, 404)
    strictEqual((await image.json()).code, 3)
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: list-by-condition and fetch show only the caller's own tasks", async () => {
  const gateway = await start({})
  try {
    const alice = mj(gateway)
    const bob = mj(gateway, BOB)
    const mine = String((await alice.post("/mj/submit/imagine", { prompt: "alice's cat" })).body.result)
    const theirs = String((await bob.post("/mj/submit/imagine", { prompt: "bob's dog" })).body.result)
    const listed = await alice.post("/mj/task/list-by-condition", { ids: [mine, theirs, "mj_unknown", mine] })
    strictEqual(listed.status, 200)
    deepStrictEqual((listed.body as unknown as Array<Json>).map((task) => task.id), [mine])
    const other = await alice.task(theirs)
    strictEqual(other.status, 404)
    strictEqual(other.body.code, 3)
    // Nor can one act on another's task.
    await until(bob, theirs, "SUCCESS")
    const stolen = await alice.post("/mj/submit/change", { taskId: theirs, action: "UPSCALE", index: 1 })
    strictEqual(stolen.status, 404)
    deepStrictEqual([stolen.body.code, stolen.body.param], [3, "taskId"])
    strictEqual((await alice.post("/mj/task/list-by-condition", { ids: "nope" })).body.param, "ids")
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: bad input is a 400 in the proxy's envelope naming the field; refusals and bad keys charge nothing", async () => {
  const gateway = await start({})
  try {
    const alice = mj(gateway)
    const cases: ReadonlyArray<readonly [string, unknown, string]> = [
      ["/mj/submit/imagine", {}, "prompt"],
      ["/mj/submit/imagine", { prompt: 7 }, "prompt"],
      ["/mj/submit/imagine", { prompt: "x".repeat(9000) }, "prompt"],
      ["/mj/submit/imagine", { prompt: "x", base64Array: ["https://example.com/a.png"] }, "base64Array[0]"],
      ["/mj/submit/imagine", { prompt: "x", botType: "OTHER" }, "botType"],
      ["/mj/submit/blend", { base64Array: [DATA_URI] }, "base64Array"],
      ["/mj/submit/blend", { base64Array: [DATA_URI, DATA_URI], dimensions: "ROUND" }, "dimensions"],
      ["/mj/submit/describe", { base64: "not an image" }, "base64"],
      ["/mj/submit/change", { action: "UPSCALE", index: 1 }, "taskId"],
      ["/mj/submit/change", { taskId: "mj_x", action: "ZOOM", index: 1 }, "action"],
      ["/mj/submit/change", { taskId: "mj_x", action: "UPSCALE", index: 9 }, "index"],
      ["/mj/submit/action", { taskId: "mj_x", customId: "MJ::JOB::dance::1" }, "customId"],
      ["/mj/submit/modal", { taskId: "mj_x", maskBase64: "x" }, "maskBase64"]
    ]
    for (const [path, body, param] of cases) {
      const answer = await alice.post(path, body)
      strictEqual(answer.status, 400, `${path} ${JSON.stringify(body).slice(0, 80)}`)
      strictEqual(answer.body.code, 4)
      strictEqual(answer.body.param, param)
      strictEqual(answer.body.result, null)
      ok(String(answer.body.description).length > 0)
    }
    const notJson = await alice.post("/mj/submit/imagine", "{")
    strictEqual(notJson.status, 400)
    strictEqual(notJson.body.code, 4)

    // An action on an unfinished task, and a customId that is not one of its buttons.
    const running = String((await alice.post("/mj/submit/imagine", { prompt: "slow, stall" })).body.result)
    const early = await alice.post("/mj/submit/action", { taskId: running, customId: "MJ::JOB::upsample::1::h" })
    deepStrictEqual([early.status, early.body.param], [400, "taskId"])
    const done = String((await alice.post("/mj/submit/imagine", { prompt: "quick" })).body.result)
    await until(alice, done, "SUCCESS")
    const forged = await alice.post("/mj/submit/action", { taskId: done, customId: "MJ::JOB::upsample::1::forged" })
    deepStrictEqual([forged.status, forged.body.param], [400, "customId"])

    // The upstream's refusals: a banned prompt (code 24) is the caller's 400; a full queue (23) a 429. Not billed.
    const banned = await alice.post("/mj/submit/imagine", { prompt: "banned words" })
    deepStrictEqual([banned.status, banned.body.code], [400, 4])
    const busy = await alice.post("/mj/submit/imagine", { prompt: "busy hour" })
    deepStrictEqual([busy.status, busy.body.code], [429, 23])

    const noKey = await fetch(`${gateway.url}/mj/submit/imagine`, { method: "POST", body: "{}" })
    strictEqual(noKey.status, 401)
    strictEqual((await noKey.json()).code, 4)
    const wrongKey = await mj(gateway, "sk-test-mj-nobody-0001", "mj-api-secret").post("/mj/submit/imagine", {
      prompt: "x"
    })
    strictEqual(wrongKey.status, 401)

    // Charged: the two accepted imagines only (the stalled one still held, the quick one settled).
    const submits = gateway.emulator.requests.filter((request) => request.path === "/mj/submit/imagine").length
    strictEqual(submits, 4, "the bad requests never reached the upstream")
    await eventually(async () => (await usedBy(gateway)) === 2 * unitsOf("mj_imagine"))
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: two instances on one PostgreSQL share the tasks: submitted on one, fetched and acted on through the other, failures refunded once", async () => {
  const emulator = startEmulator({ videoStepMs: 80, validKeys: [SECRET] })
  const first = await start({ store: "postgres", emulator })
  const second = await start({ databaseUrl: first.databaseUrl, emulator })
  try {
    const ids: Array<string> = []
    for (let index = 0; index < 8; index++) {
      const gateway = index % 2 === 0 ? first : second
      const prompt = index % 4 === 0 ? `scene ${index}, broken` : `scene ${index}`
      const answer = await mj(gateway).post("/mj/submit/imagine", { prompt })
      strictEqual(answer.body.code, 1)
      ids.push(String(answer.body.result))
    }
    // Every task, read on the other instance, ends; the failures are the `broken` ones.
    const ends = await Promise.all(ids.map(async (id, index) => {
      const other = mj(index % 2 === 0 ? second : first)
      const deadline = Date.now() + 15_000
      while (Date.now() < deadline) {
        const task = await other.task(id)
        if (task.body.status === "SUCCESS" || task.body.status === "FAILURE") return task.body
        await new Promise((resolve) => setTimeout(resolve, 60))
      }
      throw new Error(`Task ${id} never ended.`)
    }))
    deepStrictEqual(ends.map((task) => task.status), ids.map((_, index) => index % 4 === 0 ? "FAILURE" : "SUCCESS"))
    // An action on a task the other instance submitted, fetched back on the first.
    const grid = ends[1]
    const u4 = (grid.buttons as Array<{ customId: string }>)[3]
    const upscale = await mj(first).post("/mj/submit/action", { taskId: grid.id, customId: u4.customId })
    strictEqual(upscale.body.code, 1)
    notStrictEqual(upscale.body.result, grid.id)
    strictEqual((await until(mj(second), String(upscale.body.result), "SUCCESS")).action, "UPSCALE")

    await eventually(async () => {
      const rows = await first.query<{ open: bigint }>("SELECT count(*) AS open FROM tasks WHERE NOT settled")
      return Number(rows[0].open) === 0
    }, 15_000)
    const refunds = await first.query<{ n: bigint; total: bigint }>(
      "SELECT count(*) AS n, COALESCE(SUM(-cost), 0) AS total FROM usage_logs WHERE attempt = 0"
    )
    strictEqual(Number(refunds[0].n), 2, "one refund row per failed task")
    strictEqual(Number(refunds[0].total), 2 * unitsOf("mj_imagine"))
    const expected = 6 * unitsOf("mj_imagine") + unitsOf("mj_upscale")
    await eventually(async () => (await usedBy(first)) === expected)
    strictEqual(await usedBy(second), expected)
    const sums = await first.query<{ used: bigint; logged: bigint }>(
      `SELECT u.used_quota AS used, (SELECT COALESCE(SUM(cost), 0) FROM usage_logs l WHERE l.user_id = u.id) AS logged
       FROM users u WHERE u.username = 'alice'`
    )
    strictEqual(BigInt(sums[0].used), BigInt(sums[0].logged), "logged costs sum to used_quota")
  } finally {
    await second.stop()
    await first.close()
    await emulator.close()
  }
})

Deno.test("mj: the admin API makes a midjourney channel, its test reaches the proxy with the secret, and it serves at once", async () => {
  const gateway = await start({})
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const created = await root.call<{ id: number; type: string }>("POST", "/api/channel/", {
      name: "mj-second",
      type: "midjourney",
      base_url: gateway.emulator.url,
      keys: [SECRET],
      models: ["mj_imagine"],
      priority: 10
    })
    strictEqual(created.success, true, created.message)
    strictEqual(created.data.type, "midjourney")
    const tested = await root.call<{ status: number }>("POST", `/api/channel/test/${created.data.id}`)
    deepStrictEqual([tested.success, tested.data.status], [true, 200])
    const probe = gateway.emulator.requests.findLast((request) => request.path === "/mj/task/list-by-condition")!
    strictEqual(probe.headers["mj-api-secret"], SECRET)
    const wrong = await root.call<{ id: number }>("POST", "/api/channel/", {
      name: "mj-wrong",
      type: "midjourney",
      base_url: gateway.emulator.url,
      keys: ["sk-test-up-mj-wrong-01"],
      models: ["mj_none"]
    })
    const refused = await root.call<{ status: number }>("POST", `/api/channel/test/${wrong.data.id}`)
    strictEqual(refused.success, false)

    // The new channel (higher priority) takes the next imagine.
    await new Promise((resolve) => setTimeout(resolve, 400))
    const before = gateway.emulator.requests.length
    const submit = await mj(gateway).post("/mj/submit/imagine", { prompt: "a new channel" })
    strictEqual(submit.body.code, 1)
    const used = gateway.emulator.requests.slice(before).find((request) => request.path === "/mj/submit/imagine")!
    ok(used !== undefined)
    const [row] = await gateway.query<{ name: string }>(
      `SELECT c.name FROM tasks t JOIN channels c ON c.id = t.channel_id WHERE t.public_id = '${submit.body.result}'`
    )
    strictEqual(row.name, "mj-second")
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: a proxy whose queue is full (code 23) fails over to the next channel; charged once; actions stay on the task's channel", async () => {
  const gateway = await start({
    channels: [{ name: "mj-backup", type: "midjourney", keys: [SECRET_B], models: Object.keys(PRICES), priority: -1 }]
  })
  try {
    gateway.emulator.setFaults([{
      match: { path: "/mj/submit/imagine", key: SECRET },
      times: 1,
      status: 200,
      body: { code: 23, description: "The queue is full, please try later", result: null }
    }])
    const alice = mj(gateway)
    const submit = await alice.post("/mj/submit/imagine", { prompt: "a harbour" })
    deepStrictEqual([submit.status, submit.body.code], [200, 1])
    const tried = gateway.emulator.requests.filter((request) => request.path === "/mj/submit/imagine")
    deepStrictEqual(tried.map((request) => request.key), [SECRET, SECRET_B])
    const grid = await until(alice, String(submit.body.result), "SUCCESS")
    const upscale = await alice.post("/mj/submit/action", {
      taskId: grid.id,
      customId: (grid.buttons as Array<{ customId: string }>)[0].customId
    })
    strictEqual(upscale.body.code, 1)
    const action = gateway.emulator.requests.find((request) => request.path === "/mj/submit/action")!
    strictEqual(action.key, SECRET_B, "the action went to the proxy that holds the original")
    await until(alice, String(upscale.body.result), "SUCCESS")
    await eventually(async () => (await usedBy(gateway)) === unitsOf("mj_imagine") + unitsOf("mj_upscale"))
    const rows = await gateway.query<{ cost: bigint; error: string | null }>(
      "SELECT cost, error FROM usage_logs WHERE model = 'mj_imagine' ORDER BY id"
    )
    deepStrictEqual(rows.map((row) => Number(row.cost)), [0, unitsOf("mj_imagine")], "the failed attempt logged at 0")
    ok(rows[0].error !== null)
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: a task still running at its deadline fails as timed out, refunded", async () => {
  const gateway = await start({ settings: { task_deadline_seconds: 2 } })
  try {
    const alice = mj(gateway)
    const submit = await alice.post("/mj/submit/imagine", { prompt: "a slow stall" })
    strictEqual(submit.body.code, 1)
    const failed = await until(alice, String(submit.body.result), "FAILURE")
    ok(String(failed.failReason).includes("deadline"), String(failed.failReason))
    await eventually(async () => (await usedBy(gateway)) === 0)
  } finally {
    await gateway.close()
  }
})

Deno.test("mj: /mj/image is the caller's own: its key or session, else a signed URL that expires; others' ids are 404", async () => {
  const gateway = await start({})
  try {
    const alice = mj(gateway)
    const id = String((await alice.post("/mj/submit/imagine", { prompt: "a lighthouse" })).body.result)
    const done = await until(alice, id, "SUCCESS")
    const signed = new URL(String(done.imageUrl))
    const bare = `${gateway.url}/mj/image/${id}`
    const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers })
    const expectImage = async (response: Response, what: string) => {
      strictEqual(response.status, 200, what)
      strictEqual(response.headers.get("content-type"), "image/png", what)
      strictEqual(response.headers.get("x-content-type-options"), "nosniff", what)
      await response.body?.cancel()
    }
    const expectRefusal = async (response: Response, status: number, code: number, what: string) => {
      strictEqual(response.status, status, what)
      const body = await response.json()
      strictEqual(body.code, code, what)
      strictEqual(body.result, null, `${what}: the proxy's envelope`)
      return body
    }

    // No key, no signature: 401 in the proxy's envelope.
    const none = await expectRefusal(await get(bare), 401, 4, "no key")
    strictEqual(none.type, "invalid_api_key")
    // The owner's key, in either header; another user's key is 404 as for the other task routes.
    await expectImage(await get(bare, { authorization: `Bearer ${ALICE}` }), "Bearer")
    await expectImage(await get(bare, { "mj-api-secret": ALICE }), "mj-api-secret")
    await expectRefusal(await get(bare, { authorization: `Bearer ${BOB}` }), 404, 3, "another user's key")
    await expectRefusal(await get(bare, { authorization: "Bearer sk-test-not-a-key" }), 401, 4, "an unknown key")
    // The browser session of the owner (the console's <img>), not another's.
    const aliceBrowser = browser(gateway.url)
    await aliceBrowser.login("alice", ALICE_PASSWORD)
    const cookie = (who: ReturnType<typeof browser>) => ({
      cookie: [...who.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
    })
    await expectImage(await get(bare, cookie(aliceBrowser)), "the owner's session")
    const bobBrowser = browser(gateway.url)
    await bobBrowser.login("bob", BOB_PASSWORD)
    await expectRefusal(await get(bare, cookie(bobBrowser)), 404, 3, "another user's session")

    // The task object's signed URL, with no key.
    await expectImage(await get(signed.href), "signed")
    const expires = Number(signed.searchParams.get("expires"))
    ok(expires * 1000 >= Date.now() + 86_400_000 - 1000, "valid a day at least")
    ok(expires * 1000 <= Date.now() + 90_000_000, "and at most an hour more")
    // Tampered: another signature, a later expiry, another task's id.
    const signature = signed.searchParams.get("signature")!
    const flipped = `${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`
    await expectRefusal(await get(`${bare}?expires=${expires}&signature=${flipped}`), 403, 4, "tampered signature")
    await expectRefusal(await get(`${bare}?expires=${expires + 3600}&signature=${signature}`), 403, 4, "later expiry")
    const other = String((await alice.post("/mj/submit/imagine", { prompt: "a boat" })).body.result)
    await until(alice, other, "SUCCESS")
    await expectRefusal(await get(`${gateway.url}/mj/image/${other}${signed.search}`), 403, 4, "another id")
    await expectRefusal(await get(`${bare}?signature=${signature}`), 403, 4, "no expiry")
    // Expired: a true signature (made with the gateway's own key) whose time has passed.
    const [{ secret }] = await gateway.query<{ secret: string }>(
      "SELECT secret FROM gateway_secrets WHERE name = 'url_signing'"
    )
    const key = Uint8Array.from(secret.match(/../g)!.map((hex) => parseInt(hex, 16)))
    const past = Math.floor(Date.now() / 1000) - 60
    strictEqual(signedQuery(key, `mj-image/${id}`, expires), signed.search.slice(1), "the scheme the docs describe")
    const expired = await expectRefusal(
      await get(`${bare}?${signedQuery(key, `mj-image/${id}`, past)}`),
      403,
      4,
      "expired"
    )
    ok(String(expired.description).includes("expired"), expired.description)
    // An expired URL with the owner's key still opens (the key decides then).
    await expectImage(
      await get(`${bare}?${signedQuery(key, `mj-image/${id}`, past)}`, { authorization: `Bearer ${ALICE}` }),
      "expired URL with the key"
    )
  } finally {
    await gateway.close()
  }
})

/** A gateway whose Midjourney channel is the hostile upstream at `upstreamUrl` (its `/mj` API). */
const hostileMjConfig = (upstreamUrl: string, settings: Record<string, unknown> = {}) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { mj_imagine: { per_image: PRICES.mj_imagine } },
      channels: [{
        name: "hostile-mj",
        type: "midjourney",
        base_url: `${upstreamUrl}/mj`,
        keys: [SECRET],
        models: ["mj_imagine"]
      }],
      users: [{ username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: ALICE }] }],
      settings: { task_poll_interval_ms: 100, cooldown_failures: 1000, ...settings }
    }),
    "hostile-midjourney.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("mj: the proxy's imageUrl goes through the SSRF guard and the size cap; the image is served as what its bytes are", async () => {
  const internal = startInternalServer()
  const upstream = startHostileUpstream({ mediaType: "image/png", mediaBytes: PNG })
  const gateway = await startGateway({ config: () => hostileMjConfig(upstream.url, { media_max_bytes: 100_000 }) })
  const alice = mj(gateway)
  /** A finished task made while the proxy names `mediaUrl` (its own `/media` when empty): the task's image URL. */
  const imageOf = async (mediaUrl: string): Promise<string> => {
    upstream.behaviour.mediaUrl = mediaUrl
    const id = String((await alice.post("/mj/submit/imagine", { prompt: "a lamp" })).body.result)
    return String((await until(alice, id, "SUCCESS")).imageUrl)
  }
  try {
    // Another loopback host than the channel's (127.0.0.1): refused, and the internal server never reached.
    const blocked = await fetch(await imageOf(`http://localhost:${internal.port}/internal/secret`))
    strictEqual(blocked.status, 500)
    const refusal = await blocked.json()
    strictEqual(refusal.type, "bad_response_body")
    ok(!JSON.stringify(refusal).includes("localhost"), "the vendor's URL is not shown")
    deepStrictEqual(internal.hits, [])
    const metadata = await fetch(await imageOf("http://169.254.169.254/latest/meta-data/"))
    strictEqual(metadata.status, 500)
    await metadata.body?.cancel()

    // The channel's own host: fetched; a PNG is an image/png whatever the proxy calls it.
    const own = await imageOf("")
    upstream.behaviour.mediaType = "text/html"
    const png = await fetch(own)
    strictEqual(png.status, 200)
    strictEqual(png.headers.get("content-type"), "image/png")
    deepStrictEqual(new Uint8Array(await png.arrayBuffer()), PNG)
    // A script it calls text/html: an octet-stream attachment, with nosniff and a sandboxing CSP.
    upstream.behaviour.mediaBytes = SCRIPT_PAGE
    const script = await fetch(own)
    strictEqual(script.status, 200)
    strictEqual(script.headers.get("content-type"), "application/octet-stream")
    strictEqual(script.headers.get("content-disposition"), "attachment")
    strictEqual(script.headers.get("x-content-type-options"), "nosniff")
    strictEqual(script.headers.get("content-security-policy"), "default-src 'none'; sandbox")
    deepStrictEqual(new Uint8Array(await script.arrayBuffer()), SCRIPT_PAGE)
    // Past media_max_bytes (300 KB against 100 KB): refused.
    upstream.behaviour.mediaBytes = MP4
    const large = await fetch(own)
    strictEqual(large.status, 500)
    strictEqual((await large.json()).type, "bad_response_body")
  } finally {
    await gateway.close()
    await upstream.close()
    await internal.close()
  }
})
