/**
 * The console's task routes over raw HTTP against the emulator:
 *
 * - `GET /api/task/self` lists the session user's own tasks (video and async
 *   image), newest first, paginated, with the charged cost in quota units and
 *   as USD text with its unit; never another user's task, never an upstream
 *   task id; no session is 401, a bad page size `success: false` naming
 *   `page_size`.
 * - The image and video routes take the browser session when no key is sent:
 *   a submit with the same-origin proof is billed to the user's playground
 *   token; without the proof (no `Origin`, no `X-Sluice-CSRF`) or from
 *   another origin it is 403 and nothing is charged or stored; a session's
 *   reads (`GET /v1/videos/{id}`, the async image read) are its own tasks only.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { browser } from "../support/Browser.ts"
import type { TestGateway } from "../support/Gateway.ts"
import {
  ALICE,
  BOB,
  eventually,
  PASSWORDS,
  startVideoGateway,
  upstreamIdsOf,
  videoClient,
  videoCostOf
} from "../support/VideoGateway.ts"

/** A signed-in user's cookie header. */
const sessionOf = async (gateway: TestGateway, username: "alice" | "bob"): Promise<string> => {
  const client = browser(gateway.url)
  await client.login(username, PASSWORDS[username])
  return [...client.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
}

/** A raw call with the session cookie and the given extra headers; status, body text and JSON. */
const raw = async (
  gateway: TestGateway,
  method: string,
  path: string,
  cookie: string,
  headers: Record<string, string> = {},
  body?: unknown
) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { cookie, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, text, json: JSON.parse(text) }
}

interface Row {
  readonly id: string
  readonly kind: string
  readonly model: string
  readonly status: string
  readonly progress: number
  readonly created_at: number
  readonly completed_at: number | null
  readonly quota: number
  readonly cost: string
  readonly error: string | null
}

Deno.test("task list: the user's own tasks, newest first, paginated, costs with their unit, no upstream id", async () => {
  const gateway = await startVideoGateway({ store: "postgres" })
  try {
    const alice = videoClient(gateway, ALICE)
    const made: Array<string> = []
    for (const seconds of ["4", "8", "4"]) {
      made.push(
        (await alice.videos.create({ model: "sora-2", prompt: `a lake ${seconds}`, seconds: seconds as "4" })).id
      )
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const image = await fetch(`${gateway.url}/v1/images/generations/async`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "dall-e-2", prompt: "a red kite", size: "256x256" })
    })
    strictEqual(image.status, 200)
    made.push((await image.json()).id)
    const bobs = (await videoClient(gateway, BOB).videos.create({ model: "sora-2", prompt: "bob's", seconds: "4" })).id

    const cookie = await sessionOf(gateway, "alice")
    const list = async (query: string) => {
      const answer = await raw(gateway, "GET", `/api/task/self${query}`, cookie)
      strictEqual(answer.status, 200, answer.text)
      return {
        ...answer.json.data as { items: ReadonlyArray<Row>; total: number; page: number; page_size: number },
        text: answer.text
      }
    }
    // Every task ends; the list then shows what each was charged.
    await eventually(async () => (await list("?page_size=100")).items.every((row) => row.status === "completed"))
    const all = await list("?page_size=100")
    strictEqual(all.total, 4)
    deepStrictEqual(all.items.map((row) => row.id), [...made].reverse(), "alice's own, newest first")
    ok(!all.text.includes(bobs), "never another user's task")
    deepStrictEqual(all.items.map((row) => [row.kind, row.model, row.progress]), [
      ["image", "dall-e-2", 100],
      ["video", "sora-2", 100],
      ["video", "sora-2", 100],
      ["video", "sora-2", 100]
    ])
    deepStrictEqual(all.items.slice(1).map((row) => row.quota), [videoCostOf(4), videoCostOf(8), videoCostOf(4)])
    strictEqual(all.items[0].quota, 20_000, "one dall-e-2 image at 0.02 USD")
    deepStrictEqual(all.items.map((row) => row.cost), ["0.020000 USD", "0.400000 USD", "0.800000 USD", "0.400000 USD"])
    for (const row of all.items) {
      ok(row.completed_at !== null && row.completed_at >= row.created_at)
      deepStrictEqual(
        Object.keys(row).sort(),
        ["completed_at", "cost", "created_at", "error", "id", "kind", "model", "progress", "quota", "status"]
      )
    }
    // The charged cost is the usage log's, row for row.
    const logged = await gateway.query<{ cost: string }>(
      "SELECT COALESCE(SUM(l.cost), 0)::text AS cost FROM usage_logs l JOIN users u ON u.id = l.user_id " +
        "WHERE u.username = 'alice'"
    )
    strictEqual(Number(logged[0].cost), all.items.reduce((sum, row) => sum + row.quota, 0))

    // Pagination on the server.
    const first = await list("?page=1&page_size=3")
    const second = await list("?page=2&page_size=3")
    deepStrictEqual([first.items.length, second.items.length, first.total, second.page], [3, 1, 4, 2])
    deepStrictEqual([...first.items, ...second.items].map((row) => row.id), all.items.map((row) => row.id))
    strictEqual((await list("?page=3&page_size=3")).items.length, 0)

    // No upstream id anywhere in the list.
    const upstream = upstreamIdsOf(gateway)
    ok(upstream.length >= 4, "the emulator handed out ids")
    for (const id of upstream) ok(!all.text.includes(id), "no upstream task id in the list")

    // Bob's session sees only his; no session is 401; a bad page size is refused in words.
    const bob = await raw(gateway, "GET", "/api/task/self", await sessionOf(gateway, "bob"))
    deepStrictEqual(bob.json.data.items.map((row: Row) => row.id), [bobs])
    strictEqual((await raw(gateway, "GET", "/api/task/self", "")).status, 401)
    const bad = await raw(gateway, "GET", "/api/task/self?page_size=1000", cookie)
    // The api envelope (spec "Account-route error object"): bad input is `success: false` with the field named.
    deepStrictEqual([bad.status, bad.json.success], [200, false])
    ok(bad.json.message.includes("page_size"), bad.json.message)
  } finally {
    await gateway.close()
  }
})

Deno.test("image and video routes: the session with the same-origin proof, billed to the playground token", async () => {
  const gateway = await startVideoGateway({ store: "postgres" })
  try {
    const cookie = await sessionOf(gateway, "alice")
    const playgroundCost = async () =>
      Number(
        (await gateway.query<{ cost: string }>(
          "SELECT COALESCE(SUM(l.cost), 0)::text AS cost FROM usage_logs l JOIN tokens t ON t.id = l.token_id " +
            "WHERE t.key_hash LIKE 'playground:%'"
        ))[0].cost
      )
    const tasks = async () => (await gateway.query<{ n: string }>("SELECT count(*)::text AS n FROM tasks"))[0].n
    const video = { model: "sora-2", prompt: "a harbour at dawn", seconds: "4" }
    const picture = { model: "dall-e-2", prompt: "a harbour at dawn", size: "256x256" }

    // Refused: no proof of this origin, or another origin (even with the header).
    for (
      const [path, body] of [
        ["/v1/videos", video],
        ["/v1/images/generations", picture],
        ["/v1/images/generations/async", picture],
        ["/v1/video/generations", video]
      ] as const
    ) {
      const bare = await raw(gateway, "POST", path, cookie, {}, body)
      strictEqual(bare.status, 403, `${path} without a proof: ${bare.text}`)
      const foreign = await raw(
        gateway,
        "POST",
        path,
        cookie,
        { origin: "http://evil.example", "x-sluice-csrf": "1" },
        body
      )
      strictEqual(foreign.status, 403, `${path} from another origin`)
      const stale = await raw(gateway, "POST", path, "sluice_session=not-a-session", { "x-sluice-csrf": "1" }, body)
      strictEqual(stale.status, 401, `${path} with a dead session`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    strictEqual(await playgroundCost(), 0, "nothing charged for a refused request")
    strictEqual(await tasks(), "0", "no task stored")

    // Accepted with the header, or a same-origin Origin; billed to the playground token.
    const host = new URL(gateway.url).host
    const created = await raw(gateway, "POST", "/v1/videos", cookie, { "x-sluice-csrf": "1" }, video)
    strictEqual(created.status, 200, created.text)
    strictEqual(created.json.status, "queued")
    const sync = await raw(gateway, "POST", "/v1/images/generations", cookie, { origin: `http://${host}` }, picture)
    strictEqual(sync.status, 200, sync.text)
    strictEqual(sync.json.data.length, 1)
    const submitted = await raw(
      gateway,
      "POST",
      "/v1/images/generations/async",
      cookie,
      { "x-sluice-csrf": "1" },
      picture
    )
    strictEqual(submitted.status, 200, submitted.text)

    // Reads with the session: its own tasks, through to completed.
    await eventually(async () =>
      (await raw(gateway, "GET", `/v1/videos/${created.json.id}`, cookie)).json.status === "completed"
    )
    await eventually(async () =>
      (await raw(gateway, "GET", `/v1/images/generations/async/${submitted.json.id}`, cookie)).json.status ===
        "completed"
    )
    const bobCookie = await sessionOf(gateway, "bob")
    strictEqual((await raw(gateway, "GET", `/v1/videos/${created.json.id}`, bobCookie)).status, 404)
    strictEqual((await raw(gateway, "GET", `/v1/images/generations/async/${submitted.json.id}`, bobCookie)).status, 404)
    await eventually(async () => (await playgroundCost()) === videoCostOf(4) + 2 * 20_000)
    const owners = await gateway.query<{ username: string; kind: string }>(
      "SELECT u.username, CASE WHEN t.key_hash LIKE 'playground:%' THEN 'playground' ELSE 'api' END AS kind " +
        "FROM tasks k JOIN users u ON u.id = k.user_id JOIN tokens t ON t.id = k.token_id"
    )
    deepStrictEqual(owners.map((row) => [row.username, row.kind]), [["alice", "playground"], ["alice", "playground"]])
  } finally {
    await gateway.close()
  }
})
