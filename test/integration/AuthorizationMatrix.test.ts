/**
 * The authorization matrix: every `/api/*` route called by anonymous, user A,
 * user B, an admin and root, each outcome asserted — `ok` (200, success),
 * `fail` (200, success false: not found or not the caller's), 401 (no
 * session or no key) or 403 (role too low, or the target ranked too high).
 * B never sees or changes A's keys or logs; an admin never touches root.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { type ApiAnswer, type Browser, browser } from "../support/Browser.ts"

type Role = "anonymous" | "userA" | "userB" | "admin" | "root"
type Outcome = "ok" | "fail" | 401 | 403

const ROLES: ReadonlyArray<Role> = ["anonymous", "userA", "userB", "admin", "root"]

/** Ids the calls refer to. */
interface World {
  readonly url: string
  readonly rootId: number
  readonly adminId: number
  readonly aId: number
  readonly aTokenId: number
  readonly aKey: string
  readonly aClient: Browser
  readonly channelId: number
  /** The request id of A's chat (its usage log rows are A's). */
  readonly aRequestId: string
  /** A fresh object of the kind a destructive call removes, made by root for this call. */
  readonly freshUser: () => Promise<number>
  readonly freshChannel: () => Promise<number>
  readonly ownToken: (client: Browser) => Promise<number>
  readonly freshSession: (role: Role) => Promise<Browser>
}

interface Route {
  readonly name: string
  readonly call: (client: Browser, world: World, role: Role) => Promise<ApiAnswer>
  readonly expect: Record<Role, Outcome>
}

const all = (outcome: Outcome): Record<Role, Outcome> => ({
  anonymous: outcome,
  userA: outcome,
  userB: outcome,
  admin: outcome,
  root: outcome
})
const signedIn: Record<Role, Outcome> = { ...all("ok"), anonymous: 401 }
const adminOnly: Record<Role, Outcome> = { anonymous: 401, userA: 403, userB: 403, admin: "ok", root: "ok" }
const rootOnly: Record<Role, Outcome> = { anonymous: 401, userA: 403, userB: 403, admin: 403, root: "ok" }
/** The target is A (a user): admins and root manage it. */
const onUserA = adminOnly
/** The target is root: nobody changes it through the admin routes. */
const onRoot: Record<Role, Outcome> = { anonymous: 401, userA: 403, userB: 403, admin: 403, root: 403 }

/** A new webhook endpoint of A's (to an address that is never called: it raises no event). */
const aEndpoint = async (world: World) =>
  (await world.aClient.call<{ id: number }>("POST", "/api/webhook/", {
    url: "https://example.com/hook",
    events: ["budget.threshold"]
  })).data.id

/** A bulk answer as one outcome: success only when every id was done (another user's id is "not found"). */
const wholeBulk = async (answer: Promise<ApiAnswer>): Promise<ApiAnswer> => {
  const got = await answer
  const results = got.data as ReadonlyArray<{ readonly success: boolean }> | null
  return got.success && Array.isArray(results) ? { ...got, success: results.every((result) => result.success) } : got
}

let serial = 0
const unique = (prefix: string) => `${prefix}${++serial}`

const ROUTES: ReadonlyArray<Route> = [
  { name: "GET /api/status", call: (c) => c.call("GET", "/api/status"), expect: all("ok") },
  { name: "GET /api/usage/token (Bearer only)", call: (c) => c.call("GET", "/api/usage/token"), expect: all(401) },
  {
    name: "GET /api/usage/token with A's key",
    call: (c, w) => c.call("GET", "/api/usage/token", undefined, { headers: { authorization: `Bearer ${w.aKey}` } }),
    expect: all("ok")
  },
  {
    name: "POST /api/user/register",
    call: (c) => c.call("POST", "/api/user/register", { username: unique("reg"), password: "register-pass-1" }),
    expect: all("ok")
  },
  {
    name: "POST /api/user/login (wrong password)",
    call: (c) => c.call("POST", "/api/user/login", { username: unique("nobody"), password: "not-the-password" }),
    expect: all("fail")
  },
  {
    name: "GET /api/user/logout",
    call: async (_c, w, role) => (await w.freshSession(role)).call("GET", "/api/user/logout"),
    expect: all("ok")
  },
  { name: "GET /api/user/self", call: (c) => c.call("GET", "/api/user/self"), expect: signedIn },
  {
    name: "PUT /api/user/self",
    call: (c) => c.call("PUT", "/api/user/self", { display_name: "Renamed" }),
    expect: signedIn
  },
  { name: "GET /api/user/self/usage", call: (c) => c.call("GET", "/api/user/self/usage?days=3"), expect: signedIn },
  { name: "GET /api/token/", call: (c) => c.call("GET", "/api/token/"), expect: signedIn },
  { name: "POST /api/token/", call: (c) => c.call("POST", "/api/token/", { name: unique("key") }), expect: signedIn },
  {
    name: "PUT /api/token/ (own key)",
    call: async (c, w) => c.call("PUT", "/api/token/", { id: await w.ownToken(c), name: unique("own") }),
    expect: signedIn
  },
  {
    name: "PUT /api/token/ (A's key)",
    call: (c, w) => c.call("PUT", "/api/token/", { id: w.aTokenId, status: "disabled" }),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  {
    name: "DELETE /api/token/{id} (own key)",
    call: async (c, w) => c.call("DELETE", `/api/token/${await w.ownToken(c)}`),
    expect: signedIn
  },
  {
    name: "DELETE /api/token/{id} (a key of A's, made for this call)",
    call: async (c, w) => c.call("DELETE", `/api/token/${await w.ownToken(w.aClient)}`),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  {
    name: "POST /api/token/bulk (own key)",
    call: async (c, w) =>
      wholeBulk(c.call("POST", "/api/token/bulk", { ids: [await w.ownToken(c)], action: "disable" })),
    expect: signedIn
  },
  {
    name: "POST /api/token/bulk (A's key)",
    call: (c, w) => wholeBulk(c.call("POST", "/api/token/bulk", { ids: [w.aTokenId], action: "disable" })),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  { name: "GET /api/webhook/", call: (c) => c.call("GET", "/api/webhook/"), expect: signedIn },
  { name: "GET /api/webhook/?page=1", call: (c) => c.call("GET", "/api/webhook/?page=1"), expect: signedIn },
  {
    name: "POST /api/webhook/bulk (an endpoint of A's)",
    call: async (c, w) =>
      wholeBulk(c.call("POST", "/api/webhook/bulk", { ids: [await aEndpoint(w)], action: "disable" })),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  {
    name: "POST /api/webhook/ (the user's events)",
    call: (c) => c.call("POST", "/api/webhook/", { url: "https://example.com/hook", events: ["budget.threshold"] }),
    expect: signedIn
  },
  {
    name: "POST /api/webhook/ (the operator's events)",
    call: (c) => c.call("POST", "/api/webhook/", { url: "https://example.com/hook", events: ["channel.unhealthy"] }),
    expect: adminOnly
  },
  {
    name: "GET /api/webhook/{id}/deliveries (an endpoint of A's)",
    call: async (c, w) => c.call("GET", `/api/webhook/${await aEndpoint(w)}/deliveries`),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  {
    name: "POST /api/webhook/{id}/test (an endpoint of A's)",
    call: async (c, w) => c.call("POST", `/api/webhook/${await aEndpoint(w)}/test`),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  {
    name: "DELETE /api/webhook/{id} (an endpoint of A's, made for this call)",
    call: async (c, w) => c.call("DELETE", `/api/webhook/${await aEndpoint(w)}`),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  { name: "GET /api/log/self", call: (c) => c.call("GET", "/api/log/self"), expect: signedIn },
  { name: "GET /api/log/", call: (c) => c.call("GET", "/api/log/"), expect: adminOnly },
  {
    name: "GET /api/log/self/{request_id} (A's request)",
    call: (c, w) => c.call("GET", `/api/log/self/${w.aRequestId}`),
    expect: { anonymous: 401, userA: "ok", userB: "fail", admin: "fail", root: "fail" }
  },
  {
    name: "GET /api/log/{request_id} (A's request)",
    call: (c, w) => c.call("GET", `/api/log/${w.aRequestId}`),
    expect: adminOnly
  },
  { name: "GET /api/user/", call: (c) => c.call("GET", "/api/user/"), expect: adminOnly },
  { name: "GET /api/user/{A}", call: (c, w) => c.call("GET", `/api/user/${w.aId}`), expect: onUserA },
  {
    name: "GET /api/user/{root}",
    call: (c, w) => c.call("GET", `/api/user/${w.rootId}`),
    expect: { ...onRoot, root: "ok" }
  },
  {
    name: "GET /api/user/{admin}",
    call: (c, w) => c.call("GET", `/api/user/${w.adminId}`),
    expect: { ...onRoot, admin: "ok", root: "ok" }
  },
  {
    name: "POST /api/user/",
    call: (c) => c.call("POST", "/api/user/", { username: unique("made"), password: "made-password-1" }),
    expect: adminOnly
  },
  {
    name: "POST /api/user/ (role admin)",
    call: (c) => c.call("POST", "/api/user/", { username: unique("adm"), password: "made-password-1", role: "admin" }),
    expect: { ...adminOnly, admin: 403 }
  },
  {
    name: "PUT /api/user/ (A)",
    call: (c, w) => c.call("PUT", "/api/user/", { id: w.aId, display_name: "Managed" }),
    expect: onUserA
  },
  {
    name: "PUT /api/user/ (root)",
    call: (c, w) => c.call("PUT", "/api/user/", { id: w.rootId, display_name: "Pwned" }),
    expect: onRoot
  },
  {
    name: "PUT /api/user/ (A to root)",
    call: (c, w) => c.call("PUT", "/api/user/", { id: w.aId, role: "root" }),
    expect: onRoot
  },
  {
    name: "DELETE /api/user/{id}",
    call: async (c, w) => c.call("DELETE", `/api/user/${await w.freshUser()}`),
    expect: adminOnly
  },
  { name: "DELETE /api/user/{root}", call: (c, w) => c.call("DELETE", `/api/user/${w.rootId}`), expect: onRoot },
  {
    name: "POST /api/user/topup (A)",
    call: (c, w) => c.call("POST", "/api/user/topup", { id: w.aId, amount: 1 }),
    expect: onUserA
  },
  {
    name: "POST /api/user/topup (root)",
    call: (c, w) => c.call("POST", "/api/user/topup", { id: w.rootId, amount: 1 }),
    expect: { ...onRoot, root: "ok" }
  },
  { name: "GET /api/channel/", call: (c) => c.call("GET", "/api/channel/"), expect: adminOnly },
  { name: "GET /api/channel/{id}", call: (c, w) => c.call("GET", `/api/channel/${w.channelId}`), expect: adminOnly },
  {
    name: "POST /api/channel/",
    call: (c, w) =>
      c.call("POST", "/api/channel/", {
        name: unique("chan"),
        type: "openai",
        base_url: w.url,
        keys: ["sk-test-matrix-channel-key"],
        models: ["gpt-matrix"]
      }),
    expect: adminOnly
  },
  {
    name: "PUT /api/channel/",
    call: (c, w) => c.call("PUT", "/api/channel/", { id: w.channelId, weight: 2 }),
    expect: adminOnly
  },
  {
    name: "DELETE /api/channel/{id}",
    call: async (c, w) => c.call("DELETE", `/api/channel/${await w.freshChannel()}`),
    expect: adminOnly
  },
  {
    name: "POST /api/channel/test/{id}",
    call: (c, w) => c.call("POST", `/api/channel/test/${w.channelId}`),
    expect: adminOnly
  },
  { name: "GET /api/channel/?page=1", call: (c) => c.call("GET", "/api/channel/?page=1&sort=name"), expect: adminOnly },
  {
    name: "POST /api/channel/bulk (test)",
    call: (c, w) => c.call("POST", "/api/channel/bulk", { ids: [w.channelId], action: "test" }),
    expect: adminOnly
  },
  { name: "GET /api/group", call: (c) => c.call("GET", "/api/group"), expect: adminOnly },
  {
    name: "PUT /api/group",
    call: (c) => c.call("PUT", "/api/group", { name: "default", ratio: 1 }),
    expect: adminOnly
  },
  { name: "GET /api/pricing", call: (c) => c.call("GET", "/api/pricing"), expect: adminOnly },
  {
    name: "PUT /api/pricing",
    call: (c) => c.call("PUT", "/api/pricing", { model: "gpt-matrix", input: 1, output: 1 }),
    expect: adminOnly
  },
  { name: "GET /api/audit", call: (c) => c.call("GET", "/api/audit"), expect: rootOnly },
  { name: "GET /api/oauth/state", call: (c) => c.call("GET", "/api/oauth/state"), expect: all("ok") },
  {
    name: "GET /api/oauth/{provider}/start (none configured)",
    call: (c) => c.call("GET", "/api/oauth/none/start?state=x"),
    expect: all("fail")
  },
  {
    name: "GET /api/oauth/{provider} (none configured)",
    call: (c) => c.call("GET", "/api/oauth/none?code=x&state=y"),
    expect: all("fail")
  }
]

const outcomeOf = (answer: ApiAnswer): Outcome =>
  answer.status === 401 || answer.status === 403
    ? answer.status
    : answer.status === 200
    ? (answer.success ? "ok" : "fail")
    : (answer.status as never)

Deno.test("authorization matrix: every /api/* route, for anonymous, user A, user B, admin and root", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const url = gateway.url
    const root = browser(url)
    const rootLogin = await root.login("root", ROOT_PASSWORD)
    const made = async (username: string, role: "user" | "admin") => {
      const answer = await root.call<{ id: number }>("POST", "/api/user/", {
        username,
        password: `${username}-password-1`,
        role
      })
      strictEqual(answer.success, true, answer.message)
      return answer.data.id
    }
    const ids = { admin: await made("matrix-admin", "admin"), userA: await made("usera", "user") }
    await made("userb", "user")
    const passwords: Record<Role, [string, string] | undefined> = {
      anonymous: undefined,
      userA: ["usera", "usera-password-1"],
      userB: ["userb", "userb-password-1"],
      admin: ["matrix-admin", "matrix-admin-password-1"],
      root: ["root", ROOT_PASSWORD]
    }
    const freshSession = async (role: Role) => {
      const client = browser(url)
      const credentials = passwords[role]
      if (credentials !== undefined) await client.login(...credentials)
      return client
    }
    const clients = Object.fromEntries(
      await Promise.all(ROLES.map(async (role) => [role, await freshSession(role)] as const))
    ) as Record<Role, Browser>
    await root.call("POST", "/api/user/topup", { id: ids.userA, amount: 1_000_000 })
    const aToken = (await clients.userA.call<{ id: number; key: string }>("POST", "/api/token/", { name: "a-main" }))
      .data
    const channel = (await root.call<Array<{ id: number }>>("GET", "/api/channel/")).data[0]
    const { response: aChat } = await new OpenAI({ baseURL: `${url}/v1`, apiKey: aToken.key, maxRetries: 0 }).chat
      .completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "matrix" }]
      }).withResponse()

    const world: World = {
      url,
      rootId: (rootLogin.data as { id: number }).id,
      adminId: ids.admin,
      aId: ids.userA,
      aTokenId: aToken.id,
      aKey: aToken.key,
      aClient: clients.userA,
      channelId: channel.id,
      aRequestId: aChat.headers.get("x-request-id") ?? "",
      freshUser: () => made(unique("doomed"), "user"),
      freshChannel: async () =>
        (await root.call<{ id: number }>("POST", "/api/channel/", {
          name: unique("doomed-chan"),
          type: "openai",
          base_url: url,
          keys: ["sk-test-doomed-channel-key"],
          models: ["gpt-doomed"]
        })).data.id,
      ownToken: async (client) =>
        (await client.call<{ id: number }>("POST", "/api/token/", { name: unique("mine") })).data?.id ?? 1,
      freshSession
    }

    const wrong: Array<string> = []
    for (const route of ROUTES) {
      for (const role of ROLES) {
        const answer = await route.call(clients[role], world, role)
        const got = outcomeOf(answer)
        if (got !== route.expect[role]) {
          wrong.push(`${route.name} as ${role}: expected ${route.expect[role]}, got ${got} (${answer.message})`)
        }
        // A's key is enabled again after each call (A itself may disable it), so every role meets the same key.
        await clients.userA.call("PUT", "/api/token/", { id: aToken.id, status: "enabled" })
      }
    }
    deepStrictEqual(wrong, [])

    // What B and the admin tried on A's key changed nothing; A's rows stay A's.
    const aKeys = await clients.userA.call<{ items: Array<{ id: number; status: string }> }>("GET", "/api/token/")
    strictEqual(aKeys.data.items.find((token) => token.id === aToken.id)?.status, "enabled")
    const bKeys = await clients.userB.call<{ items: Array<{ id: number }> }>("GET", "/api/token/")
    strictEqual(bKeys.data.items.some((token) => token.id === aToken.id), false)
    const bLogs = await clients.userB.call<{ total: number }>("GET", `/api/log/self?token_id=${aToken.id}`)
    strictEqual(bLogs.data.total, 0)
    const aLogs = await clients.userA.call<{ total: number }>("GET", `/api/log/self?token_id=${aToken.id}`)
    strictEqual(aLogs.data.total, 1)
    const [rootRow] = await gateway.query<{ display_name: string; role: string }>(
      "SELECT display_name, role FROM users WHERE username = 'root'"
    )
    deepStrictEqual([rootRow.role, rootRow.display_name === "Pwned"], ["root", false])
  } finally {
    await gateway.close()
  }
})
