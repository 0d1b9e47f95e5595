/**
 * Accounts and browser sessions through `/api/*`: the root user of a first
 * start, registration and password login (bcrypt cost 10, the same answer and
 * about the same time for an unknown name and a wrong password, throttling
 * after repeated failures), the session cookie's attributes, idle and
 * absolute expiry, logout and password change ending sessions, and the CSRF
 * defence of cookie-authenticated changes. On PGlite and PostgreSQL.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, ROOT_PASSWORD, startGateway, type Store } from "../support/Gateway.ts"
import { browser, setCookies } from "../support/Browser.ts"

const STORES: ReadonlyArray<Store> = ["pglite", "postgres"]

for (const store of STORES) {
  Deno.test(`accounts (${store}): root logs in; a user registers, logs in, reads and changes itself`, async () => {
    const gateway = await startGateway({ config: basicConfig, store })
    try {
      const root = browser(gateway.url)
      const rootLogin = await root.login("root", ROOT_PASSWORD)
      strictEqual((rootLogin.data as { role: string }).role, "root")

      const anonymous = browser(gateway.url)
      const registered = await anonymous.call<{ username: string; role: string; quota: number }>(
        "POST",
        "/api/user/register",
        { username: "bob", password: "bob-password-1", display_name: "Bob" }
      )
      strictEqual(registered.success, true, registered.message)
      deepStrictEqual([registered.data.username, registered.data.role, registered.data.quota], ["bob", "user", 0])
      strictEqual(anonymous.cookies.size, 0, "registration does not log in")

      const again = await anonymous.call("POST", "/api/user/register", { username: "bob", password: "other-pass-1" })
      deepStrictEqual([again.status, again.success, again.message], [200, false, "The username is taken."])

      const bob = browser(gateway.url)
      await bob.login("bob", "bob-password-1")
      const self = await bob.call<{ username: string; display_name: string }>("GET", "/api/user/self")
      deepStrictEqual([self.success, self.data.username, self.data.display_name], [true, "bob", "Bob"])

      const renamed = await bob.call<{ display_name: string }>("PUT", "/api/user/self", { display_name: "Robert" })
      strictEqual(renamed.data.display_name, "Robert")
      const bad = await bob.call("PUT", "/api/user/self", { display_name: "a\u0000b" })
      deepStrictEqual([bad.status, bad.success], [200, false])
      ok(bad.message.includes("display_name"), bad.message)
    } finally {
      await gateway.close()
    }
  })
}

Deno.test("accounts: bad input is a failure naming the field, never a crash", async () => {
  const gateway = await startGateway({ config: basicConfig })
  try {
    const anonymous = browser(gateway.url)
    const cases: Array<[unknown, string]> = [
      [{ username: "x y", password: "long-enough-1" }, "username"],
      [{ username: "carol", password: "short" }, "password"],
      [{ username: "carol", password: "\ud800-lone-surrogate" }, "password"],
      [{ username: "carol", password: "é".repeat(40) }, "password"],
      [{ username: "carol" }, "password"],
      [{ username: "a".repeat(10_000), password: "long-enough-1" }, "username"]
    ]
    for (const [body, field] of cases) {
      const answer = await anonymous.call("POST", "/api/user/register", body)
      deepStrictEqual([answer.status, answer.success], [200, false], JSON.stringify(body).slice(0, 80))
      ok(answer.message.toLowerCase().includes(field), `${answer.message} names ${field}`)
    }
    for (const body of [{ username: "root\u0000", password: "x-password-1" }, { "a\u0000": 1 }]) {
      const answer = await anonymous.call("POST", "/api/user/login", body)
      deepStrictEqual([answer.status, answer.success], [200, false], JSON.stringify(body))
    }
    const notJson = await fetch(`${gateway.url}/api/user/login`, { method: "POST", body: "{nope" })
    const body = await notJson.json()
    deepStrictEqual([notJson.status, body.success], [200, false])
  } finally {
    await gateway.close()
  }
})

Deno.test("accounts: registration can be closed in the file", async () => {
  const gateway = await startGateway({ config: (url) => basicConfig(url, { settings: { registration: false } }) })
  try {
    const answer = await browser(gateway.url).call("POST", "/api/user/register", {
      username: "dave",
      password: "dave-password-1"
    })
    deepStrictEqual([answer.status, answer.success, answer.message], [403, false, "Registration is closed."])
  } finally {
    await gateway.close()
  }
})

Deno.test("accounts: passwords are bcrypt at cost 10; unknown name and wrong password answer alike", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const anonymous = browser(gateway.url)
    await anonymous.call("POST", "/api/user/register", { username: "erin", password: "erin-password-1" })
    const [row] = await gateway.query<{ password_hash: string }>(
      "SELECT password_hash FROM users WHERE username = 'erin'"
    )
    ok(/^\$2[aby]\$10\$/.test(row.password_hash), row.password_hash.slice(0, 7))
    ok(!row.password_hash.includes("erin-password-1"))

    const timed = async (username: string, password: string) => {
      const started = performance.now()
      const answer = await anonymous.call("POST", "/api/user/login", { username, password })
      return { answer, millis: performance.now() - started }
    }
    // Different names each time, so the throttle does not step in.
    const unknown = []
    const wrong = []
    for (let round = 0; round < 4; round++) {
      unknown.push(await timed(`nobody${round}`, "erin-password-1"))
      wrong.push(await timed("erin", `wrong-password-${round}`))
    }
    for (const { answer } of [...unknown, ...wrong]) {
      deepStrictEqual([answer.status, answer.success, answer.message], [200, false, "Invalid username or password."])
      strictEqual(answer.headers.getSetCookie().length, 0)
    }
    const median = (runs: Array<{ millis: number }>) => runs.map((run) => run.millis).sort((a, b) => a - b)[2]
    const ratio = median(unknown) / median(wrong)
    // Both paths run one bcrypt comparison at cost 10; without the decoy an unknown name answers in ~1 ms.
    ok(ratio > 0.5 && ratio < 2, `unknown ${median(unknown).toFixed(1)} ms vs wrong ${median(wrong).toFixed(1)} ms`)
    ok(median(unknown) > 10, `an unknown name still takes a bcrypt comparison (${median(unknown).toFixed(1)} ms)`)
  } finally {
    await gateway.close()
  }
})

Deno.test("accounts: repeated failed logins are throttled, for known and unknown names alike", async () => {
  const gateway = await startGateway({
    config: (url) => basicConfig(url, { settings: { login_max_failures: 3, login_window_seconds: 600 } })
  })
  try {
    const anonymous = browser(gateway.url)
    await anonymous.call("POST", "/api/user/register", { username: "frank", password: "frank-password-1" })
    for (const name of ["frank", "ghost"]) {
      for (let attempt = 0; attempt < 3; attempt++) {
        const answer = await anonymous.call("POST", "/api/user/login", { username: name, password: "not-it-1234" })
        strictEqual(answer.message, "Invalid username or password.")
      }
      const blocked = await anonymous.call("POST", "/api/user/login", { username: name, password: "frank-password-1" })
      deepStrictEqual([blocked.status, blocked.success], [429, false])
      ok(blocked.message.startsWith("Too many login attempts"), blocked.message)
      ok(Number(blocked.headers.get("retry-after")) > 0)
    }
    // Another name is not affected.
    await anonymous.call("POST", "/api/user/register", { username: "grace", password: "grace-password-1" })
    await browser(gateway.url).login("grace", "grace-password-1")
  } finally {
    await gateway.close()
  }
})

Deno.test("accounts: the session cookie is HttpOnly, SameSite=Lax, Secure only behind HTTPS", async () => {
  const gateway = await startGateway({
    config: (url) => basicConfig(url, { settings: { trusted_proxies: ["127.0.0.1"] } })
  })
  try {
    const plain = await fetch(`${gateway.url}/api/user/login`, {
      method: "POST",
      body: JSON.stringify({ username: "root", password: ROOT_PASSWORD })
    })
    await plain.body?.cancel()
    const [cookie] = setCookies(plain.headers)
    strictEqual(cookie.name, "sluice_session")
    ok(cookie.value.length >= 43)
    ok(/HttpOnly/i.test(cookie.attributes) && /SameSite=Lax/i.test(cookie.attributes), cookie.attributes)
    ok(/Path=\//.test(cookie.attributes) && !/Secure/i.test(cookie.attributes), cookie.attributes)
    const proxied = await fetch(`${gateway.url}/api/user/login`, {
      method: "POST",
      headers: { "x-forwarded-proto": "https" },
      body: JSON.stringify({ username: "root", password: ROOT_PASSWORD })
    })
    await proxied.body?.cancel()
    const [secure] = setCookies(proxied.headers)
    strictEqual(secure.name, "__Host-sluice_session")
    ok(/Secure/i.test(secure.attributes) && !/Domain=/i.test(secure.attributes), secure.attributes)
  } finally {
    await gateway.close()
  }
})

Deno.test("accounts: sessions end on logout, password change, idle and absolute expiry", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const anonymous = browser(gateway.url)
    await anonymous.call("POST", "/api/user/register", { username: "heidi", password: "heidi-password-1" })
    const session = async () => {
      const client = browser(gateway.url)
      await client.login("heidi", "heidi-password-1")
      return client
    }
    const statusOf = async (client: ReturnType<typeof browser>) => (await client.call("GET", "/api/user/self")).status

    const loggedOut = await session()
    const crossSite = await loggedOut.call("GET", "/api/user/logout", undefined, {
      headers: { "sec-fetch-site": "cross-site" }
    })
    deepStrictEqual([crossSite.status, await statusOf(loggedOut)], [403, 200], "a link on another site logs nobody out")
    const stolen = new Map(loggedOut.cookies)
    await loggedOut.call("GET", "/api/user/logout")
    strictEqual(loggedOut.cookies.size, 0, "logout clears the cookie")
    const replay = browser(gateway.url)
    for (const [name, value] of stolen) replay.cookies.set(name, value)
    const afterLogout = await replay.call("GET", "/api/user/self")
    deepStrictEqual([afterLogout.status, afterLogout.success], [401, false])

    const first = await session()
    const second = await session()
    const wrongOld = await first.call("PUT", "/api/user/self", { password: "heidi-password-2", old_password: "nope" })
    deepStrictEqual([wrongOld.success, wrongOld.message], [false, "The old password is not right."])
    const changed = await first.call("PUT", "/api/user/self", {
      password: "heidi-password-2",
      old_password: "heidi-password-1"
    })
    strictEqual(changed.success, true, changed.message)
    strictEqual(await statusOf(first), 200, "the session that changed it gets a new one")
    strictEqual(await statusOf(second), 401, "every other session ended")
    await browser(gateway.url).login("heidi", "heidi-password-2")

    const idle = await browser(gateway.url)
    await idle.login("heidi", "heidi-password-2")
    await gateway.query("UPDATE sessions SET last_seen_at = now() - interval '13 hours'")
    strictEqual(await statusOf(idle), 401, "idle for longer than 12 hours")

    const old = browser(gateway.url)
    await old.login("heidi", "heidi-password-2")
    await gateway.query("UPDATE sessions SET expires_at = now() - interval '1 second'")
    const expired = await old.call("GET", "/api/user/self")
    deepStrictEqual([expired.status, expired.message], [401, "The session has expired; log in again."])

    const none = await browser(gateway.url).call("GET", "/api/user/self")
    deepStrictEqual([none.status, none.success], [401, false])
  } finally {
    await gateway.close()
  }
})

Deno.test("accounts: a change made with the cookie needs the CSRF header or a same-site Origin", async () => {
  const gateway = await startGateway({ config: basicConfig })
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const bare = await root.call("PUT", "/api/user/self", { display_name: "x" }, { csrf: false })
    deepStrictEqual([bare.status, bare.success], [403, false])
    ok(bare.message.includes("x-sluice-csrf"), bare.message)
    const foreign = await root.call("PUT", "/api/user/self", { display_name: "x" }, {
      headers: { origin: "https://evil.example" }
    })
    strictEqual(foreign.status, 403)
    const host = new URL(gateway.url).host
    const sameSite = await root.call("PUT", "/api/user/self", { display_name: "Same" }, {
      csrf: false,
      headers: { origin: `http://${host}` }
    })
    deepStrictEqual([sameSite.status, sameSite.success], [200, true])
    const withHeader = await root.call("PUT", "/api/user/self", { display_name: "Header" })
    deepStrictEqual([withHeader.status, withHeader.success], [200, true])
    // A page of another site cannot log a browser in either.
    const loginCsrf = await browser(gateway.url).call("POST", "/api/user/login", {
      username: "root",
      password: ROOT_PASSWORD
    }, { headers: { origin: "https://evil.example" } })
    strictEqual(loginCsrf.status, 403)
  } finally {
    await gateway.close()
  }
})
