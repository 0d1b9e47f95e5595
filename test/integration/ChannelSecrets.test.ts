/**
 * Channel secrets stay with the channel (issue 28, items 2 and 5): an admin
 * cannot point a channel's stored keys at a host of theirs and test it to
 * read them (changing `base_url`, `type` or `settings.headers` needs the keys
 * given again), and header values and URL credentials are masked in every
 * admin answer and audit row, as keys are; a key sent back as the answers
 * show it (masked, issue 37 item 7) is refused, not stored as a key.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser } from "../support/Browser.ts"

const UPSTREAM_KEY = "sk-test-channel-secret-key-0001"
const HEADER_SECRET = "hdr-token-for-tests-7f3a"
const URL_PASSWORD = "url-password-for-tests-91"

/** A host of the attacker's that records the Authorization header of whatever reaches it. */
const catcher = () => {
  const seen: Array<string> = []
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    seen.push(`${request.headers.get("authorization") ?? ""} ${request.headers.get("api-key") ?? ""}`)
    return Response.json({ error: { message: "no" } }, { status: 401 })
  })
  return { url: `http://127.0.0.1:${server.addr.port}`, seen, close: () => server.shutdown() }
}

const adminOf = async (url: string) => {
  const root = browser(url)
  await root.login("root", ROOT_PASSWORD)
  const made = await root.call("POST", "/api/user/", { username: "ops", password: "ops-password-1", role: "admin" })
  strictEqual(made.success, true, made.message)
  const admin = browser(url)
  await admin.login("ops", "ops-password-1")
  return { root, admin }
}

Deno.test("channel secrets 2: moving a channel's keys to another host, type or headers needs the keys again", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  const trap = catcher()
  try {
    const { admin } = await adminOf(gateway.url)
    const created = await admin.call<{ id: number; base_url: string; settings: unknown }>("POST", "/api/channel/", {
      name: "target",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: [UPSTREAM_KEY],
      models: ["gpt-target"],
      settings: { headers: { "api-key": HEADER_SECRET } }
    })
    strictEqual(created.success, true, created.message)
    const id = created.data.id

    for (
      const change of [{ base_url: trap.url }, { type: "anthropic" }, { settings: { headers: { "api-key": "x" } } }]
    ) {
      const moved = await admin.call("PUT", "/api/channel/", { id, ...change })
      deepStrictEqual([moved.status, moved.success], [200, false], JSON.stringify(change))
      ok(moved.message.includes("given again"), moved.message)
    }
    const tested = await admin.call<{ status: number }>("POST", `/api/channel/test/${id}`)
    strictEqual(tested.data.status, 200, "the test went to the channel as stored")
    strictEqual(trap.seen.length, 0, "nothing reached the other host")

    // The console sends every field back as shown (masked): that is no change and needs no keys.
    const echoed = await admin.call("PUT", "/api/channel/", {
      id,
      name: "target-renamed",
      type: "openai",
      base_url: created.data.base_url,
      settings: created.data.settings
    })
    strictEqual(echoed.success, true, echoed.message)
    const [row] = await gateway.query<{ settings: { headers: Record<string, string> } }>(
      `SELECT settings FROM channels WHERE id = ${id}`
    )
    strictEqual(row.settings.headers["api-key"], HEADER_SECRET, "a masked header sent back keeps its value")

    // The stored header values do not follow the keys to another host either.
    const keysOnly = await admin.call("PUT", "/api/channel/", {
      id,
      base_url: trap.url,
      keys: ["sk-test-their-own-01"]
    })
    deepStrictEqual([keysOnly.success, keysOnly.message.includes("settings.headers")], [false, true])
    // With the keys and headers given again, the move is allowed: the admin knew them already.
    const withKeys = await admin.call("PUT", "/api/channel/", {
      id,
      base_url: trap.url,
      keys: ["sk-test-their-own-01"],
      settings: { headers: { "api-key": "their-own-header" } }
    })
    strictEqual(withKeys.success, true, withKeys.message)
    await admin.call("POST", `/api/channel/test/${id}`)
    ok(trap.seen.every((line) => !line.includes(UPSTREAM_KEY) && !line.includes(HEADER_SECRET)), trap.seen.join())
  } finally {
    await trap.close()
    await gateway.close()
  }
})

Deno.test("channel secrets 5: header values and URL credentials are masked in answers and audit rows", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const { root, admin } = await adminOf(gateway.url)
    const withCredentials = gateway.emulator.url.replace("http://", `http://proxyuser:${URL_PASSWORD}@`)
    const created = await admin.call<{ id: number; base_url: string }>("POST", "/api/channel/", {
      name: "behind-proxy",
      type: "openai",
      base_url: `${withCredentials}?token=${URL_PASSWORD}`,
      keys: [UPSTREAM_KEY],
      models: ["gpt-proxied"],
      settings: { headers: { "api-key": HEADER_SECRET, "x-proxy-token": HEADER_SECRET } }
    })
    strictEqual(created.success, true, created.message)
    strictEqual(created.data.base_url, `${gateway.emulator.url.replace("http://", "http://…@")}?token=…`)
    const updated = await admin.call("PUT", "/api/channel/", {
      id: created.data.id,
      keys: [UPSTREAM_KEY],
      settings: { headers: { "api-key": `${HEADER_SECRET}-2` } },
      base_url: `${withCredentials}/v2`
    })
    strictEqual(updated.success, true, updated.message)
    const shown = [
      JSON.stringify(created.data),
      JSON.stringify(updated.data),
      JSON.stringify((await admin.call("GET", "/api/channel/")).data),
      JSON.stringify((await admin.call("GET", `/api/channel/${created.data.id}`)).data),
      JSON.stringify((await root.call("GET", "/api/audit")).data)
    ]
    const audit = await gateway.query<{ row: string }>("SELECT row_to_json(a)::text AS row FROM audit_log a")
    ok(audit.length >= 2)
    for (const text of [...shown, ...audit.map((entry) => entry.row)]) {
      for (const secret of [UPSTREAM_KEY, HEADER_SECRET, URL_PASSWORD, "proxyuser"]) {
        ok(!text.includes(secret), `${secret} shown in ${text.slice(0, 300)}`)
      }
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("channel secrets (issue 37, item 7): a key sent back masked is refused by its index, the stored keys kept", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const { admin } = await adminOf(gateway.url)
    const secondKey = "sk-test-channel-secret-key-0002"
    const created = await admin.call<{ id: number; keys: ReadonlyArray<{ key: string }> }>("POST", "/api/channel/", {
      name: "masked",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: [UPSTREAM_KEY, secondKey],
      models: ["gpt-masked"]
    })
    strictEqual(created.success, true, created.message)
    const id = created.data.id
    const shown = created.data.keys.map((key) => key.key)
    deepStrictEqual(shown, ["sk-…0001", "sk-…0002"], "the form the API shows keys in")
    const storedKeys = async () =>
      (await gateway.query<{ key: string }>(`SELECT key FROM channel_keys WHERE channel_id = ${id} ORDER BY position`))
        .map((row) => row.key)

    // The list sent back as shown, or one masked key among real ones: refused, naming the key's index.
    for (
      const [keys, param] of [
        [shown, "keys[0]"],
        [[UPSTREAM_KEY, "sk-test-new-key-00000003", shown[1]], "keys[2]"],
        [["…"], "keys[0]"]
      ] as const
    ) {
      const answer = await admin.call("PUT", "/api/channel/", { id, keys })
      deepStrictEqual([answer.status, answer.success], [200, false], JSON.stringify(keys))
      ok(answer.message.startsWith(`${param} is a masked key`), answer.message)
      deepStrictEqual(await storedKeys(), [UPSTREAM_KEY, secondKey])
    }
    // A new channel is refused the same way.
    const masked = await admin.call("POST", "/api/channel/", {
      name: "masked-2",
      type: "openai",
      base_url: gateway.emulator.url,
      keys: shown,
      models: ["gpt-masked"]
    })
    deepStrictEqual([masked.success, masked.message.startsWith("keys[0] is a masked key")], [false, true])

    // A change that leaves keys out keeps them; the channel still works.
    const renamed = await admin.call("PUT", "/api/channel/", { id, name: "masked-renamed" })
    strictEqual(renamed.success, true, renamed.message)
    deepStrictEqual(await storedKeys(), [UPSTREAM_KEY, secondKey])
    const tested = await admin.call<{ status: number }>("POST", `/api/channel/test/${id}`)
    strictEqual(tested.data.status, 200, tested.message)

    // A real new key is still taken.
    const replaced = await admin.call("PUT", "/api/channel/", { id, keys: ["sk-test-new-key-00000003"] })
    strictEqual(replaced.success, true, replaced.message)
    deepStrictEqual(await storedKeys(), ["sk-test-new-key-00000003"])
  } finally {
    await gateway.close()
  }
})
