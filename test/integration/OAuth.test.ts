/**
 * The OAuth browser flow against a real OpenID Provider (`oidc-provider` on
 * loopback) and a fake of GitHub's endpoints, driven with `fetch` and cookie
 * jars: state → start → the provider's login and consent → callback →
 * session → `/api/user/self`. A wrong, replayed, expired or another
 * browser's state, and an ID token with a wrong audience, issuer or nonce, a
 * bad signature or past its expiry, are each refused with nothing bound and no
 * session.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { BootstrapFile } from "../../src/config/BootstrapFile.ts"
import { basicConfig, ROOT_PASSWORD, startGateway, type TestGateway } from "../support/Gateway.ts"
import { type Browser, browser } from "../support/Browser.ts"
import { startFakeGitHub } from "../support/FakeGitHub.ts"
import { startOpenIdProvider, type TestProvider } from "../support/OpenIdProvider.ts"

/** A browser's way from `GET /api/oauth/state` to the provider's redirect back (not yet followed). */
const begin = async (client: Browser, provider: string) => {
  const issued = await client.call<string>("GET", "/api/oauth/state")
  strictEqual(issued.success, true, issued.message)
  const start = await client.call("GET", `/api/oauth/${provider}/start?state=${encodeURIComponent(issued.data)}`)
  strictEqual(start.status, 302, start.message)
  return { state: issued.data, authorizeUrl: start.headers.get("location")! }
}

const callbackPath = (back: URL) => `${back.pathname}${back.search}`

const identities = (gateway: TestGateway) =>
  gateway.query<{ provider: string; subject: string; username: string }>(
    "SELECT o.provider, o.subject, u.username FROM oauth_identities o JOIN users u ON u.id = o.user_id ORDER BY 1, 2"
  )

const withOidc = async (
  run: (gateway: TestGateway, provider: TestProvider) => Promise<void>,
  overrides: Partial<BootstrapFile> = {},
  pkceRequired = true
) => {
  const front = await startOpenIdProvider({ pkceRequired })
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      basicConfig(url, {
        oauth: {
          providers: {
            corp: {
              type: "oidc",
              issuer: front.issuer,
              client_id: front.clientId,
              client_secret: front.clientSecret,
              allow_insecure_http: true
            }
          }
        },
        ...overrides
      })
  })
  const provider = await front.start([`${gateway.url}/api/oauth/corp`])
  try {
    await run(gateway, provider)
  } finally {
    await gateway.close()
    await provider.close()
  }
}

Deno.test("oauth oidc: state → provider login → callback → session; the identity logs in again later", async () => {
  await withOidc(async (gateway, provider) => {
    const client = browser(gateway.url)
    const { state, authorizeUrl } = await begin(client, "corp")
    const authorize = new URL(authorizeUrl)
    ok(authorizeUrl.startsWith(`${provider.issuer}/auth?`), `${provider.issuer} ${authorizeUrl}`)
    deepStrictEqual(
      [authorize.searchParams.get("code_challenge_method"), authorize.searchParams.get("state")],
      ["S256", state]
    )
    ok((authorize.searchParams.get("nonce") ?? "").length >= 32)
    strictEqual(authorize.searchParams.get("redirect_uri"), `${gateway.url}/api/oauth/corp`)

    const back = await provider.authorize(authorizeUrl, "alice-sso")
    strictEqual(back.searchParams.get("state"), state)
    const done = await client.call<{ username: string; email: string; oauth: Array<string> }>(
      "GET",
      callbackPath(back)
    )
    strictEqual(done.success, true, done.message)
    deepStrictEqual([done.data.username, done.data.email, done.data.oauth], [
      "alice-sso",
      "alice-sso@example.test",
      ["corp"]
    ])
    const self = await client.call<{ username: string }>("GET", "/api/user/self")
    deepStrictEqual([self.status, self.data.username], [200, "alice-sso"])
    deepStrictEqual(await identities(gateway), [{ provider: "corp", subject: "alice-sso", username: "alice-sso" }])

    // Replayed: the same code and state again.
    const replay = browser(gateway.url)
    for (const [name, value] of client.cookies) replay.cookies.set(name, value)
    replay.cookies.delete("sluice_session")
    const replayed = await replay.call("GET", callbackPath(back))
    deepStrictEqual([replayed.success, replayed.message], [false, "The sign-in state is unknown, used or expired."])
    strictEqual(replay.cookies.has("sluice_session"), false)

    // Later, from a new browser: the bound identity logs into the same account.
    const later = browser(gateway.url)
    const again = await begin(later, "corp")
    const second = await later.call<{ username: string }>(
      "GET",
      callbackPath(await provider.authorize(again.authorizeUrl, "alice-sso"))
    )
    deepStrictEqual([second.success, second.data.username], [true, "alice-sso"])
    strictEqual((await identities(gateway)).length, 1)
  })
})

Deno.test("oauth oidc: a logged-in user links the identity to its own account", async () => {
  await withOidc(async (gateway, provider) => {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const { authorizeUrl } = await begin(root, "corp")
    const linked = await root.call<{ username: string; oauth: Array<string> }>(
      "GET",
      callbackPath(await provider.authorize(authorizeUrl, "root-at-corp"))
    )
    deepStrictEqual([linked.success, linked.data.username, linked.data.oauth], [true, "root", ["corp"]])
    deepStrictEqual(await identities(gateway), [{ provider: "corp", subject: "root-at-corp", username: "root" }])
  })
})

Deno.test("oauth oidc: wrong, foreign-browser and expired states and bad ID tokens bind nothing", async () => {
  await withOidc(async (gateway, provider) => {
    const refused = async (client: Browser, path: string, message: RegExp) => {
      const answer = await client.call("GET", path)
      strictEqual(answer.success, false, path)
      ok(message.test(answer.message), answer.message)
      strictEqual(client.cookies.has("sluice_session"), false, "no session")
      deepStrictEqual(await identities(gateway), [], "nothing bound")
    }

    const client = browser(gateway.url)
    // Wrong state: the code is real, the state is not the one issued.
    const wrong = await begin(client, "corp")
    const back = await provider.authorize(wrong.authorizeUrl, "mallory")
    back.searchParams.set("state", `${wrong.state.slice(0, -2)}xx`)
    await refused(client, callbackPath(back), /state is unknown, used or expired/)
    back.searchParams.delete("state")
    await refused(client, callbackPath(back), /state is missing/)

    // Another browser's state (no matching sluice_oauth cookie).
    const stolen = await begin(client, "corp")
    const stolenBack = await provider.authorize(stolen.authorizeUrl, "mallory")
    await refused(browser(gateway.url), callbackPath(stolenBack), /another browser/)

    // Expired.
    const late = await begin(client, "corp")
    const lateBack = await provider.authorize(late.authorizeUrl, "mallory")
    await gateway.query("UPDATE oauth_states SET expires_at = now() - interval '1 second'")
    await refused(client, callbackPath(lateBack), /state is unknown, used or expired/)

    // ID tokens the provider's front rewrote: each is refused by the checks on the token.
    const checks = [
      ["audience", /^The sign-in with corp failed: .*"aud"/],
      ["signature", /^The sign-in with corp failed: .*signature/],
      ["expired", /^The sign-in with corp failed: .*"exp"/],
      ["nonce", /^The sign-in with corp failed: .*"nonce"/],
      ["issuer", /^The sign-in with corp failed: .*"iss"/]
    ] as const
    for (const [tamper, words] of checks) {
      provider.tamper = tamper
      const attempt = await begin(client, "corp")
      await refused(client, callbackPath(await provider.authorize(attempt.authorizeUrl, "mallory")), words)
    }
    provider.tamper = "none"
    const fine = await begin(client, "corp")
    const accepted = await client.call("GET", callbackPath(await provider.authorize(fine.authorizeUrl, "mallory")))
    strictEqual(accepted.success, true, "the same flow untampered passes")

    const unknown = await client.call("GET", "/api/oauth/nowhere?code=x&state=y")
    deepStrictEqual([unknown.success, unknown.message], [false, 'No OAuth provider is named "nowhere".'])
  })
})

Deno.test("oauth oidc: with registration closed, an unknown identity opens no account", async () => {
  await withOidc(async (gateway, provider) => {
    const client = browser(gateway.url)
    const { authorizeUrl } = await begin(client, "corp")
    const answer = await client.call("GET", callbackPath(await provider.authorize(authorizeUrl, "newcomer")))
    deepStrictEqual([answer.status, answer.success, answer.message], [403, false, "Registration is closed."])
    deepStrictEqual(await identities(gateway), [])
  }, { settings: { registration: false } })
})

Deno.test("oauth github: code exchange with PKCE against a fake, the user API, a session", async () => {
  const github = startFakeGitHub()
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      basicConfig(url, {
        oauth: {
          providers: {
            github: {
              type: "github",
              client_id: github.clientId,
              client_secret: github.clientSecret,
              authorize_url: `${github.url}/login/oauth/authorize`,
              token_url: `${github.url}/login/oauth/access_token`,
              api_url: github.url,
              allow_insecure_http: true
            }
          }
        }
      })
  })
  try {
    const client = browser(gateway.url)
    const { authorizeUrl } = await begin(client, "github")
    ok(authorizeUrl.startsWith(`${github.url}/login/oauth/authorize?`))
    const consent = await fetch(authorizeUrl, { redirect: "manual" })
    await consent.body?.cancel()
    const back = new URL(consent.headers.get("location")!)
    const done = await client.call<{ username: string; display_name: string }>("GET", callbackPath(back))
    strictEqual(done.success, true, done.message)
    deepStrictEqual([done.data.username, done.data.display_name], ["octo", "Octo Cat"])
    deepStrictEqual(await identities(gateway), [{ provider: "github", subject: "4242", username: "octo" }])
    deepStrictEqual(github.refused, [])
    strictEqual((await client.call("GET", "/api/user/self")).status, 200)

    // A code GitHub refuses (used twice at GitHub, with a fresh state here): nothing more bound.
    const second = await begin(client, "github")
    const secondBack = new URL((await fetch(second.authorizeUrl, { redirect: "manual" })).headers.get("location")!)
    const firstUse = await browser(gateway.url).call("GET", callbackPath(secondBack))
    strictEqual(firstUse.success, false, "another browser")
    github.user = { id: 7, login: "other", name: null, email: null }
    const third = await begin(client, "github")
    const thirdBack = new URL((await fetch(third.authorizeUrl, { redirect: "manual" })).headers.get("location")!)
    thirdBack.searchParams.set("code", secondBack.searchParams.get("code")!)
    const refused = await client.call("GET", callbackPath(thirdBack))
    strictEqual(refused.success, false)
    ok(refused.message.startsWith("The sign-in with github failed"), refused.message)
    // The code was issued for the second state's PKCE challenge; the third state's verifier does not match it.
    deepStrictEqual(github.refused, ["bad_verification_code"])
    strictEqual((await identities(gateway)).length, 1)
  } finally {
    await gateway.close()
    await github.close()
  }
})

/** One provider's public parameters as `GET /api/status` publishes them. */
interface PublishedClient {
  readonly name: string
  readonly type: string
  readonly client_id: string
  readonly authorization_endpoint: string | null
  readonly scope: string
  readonly redirect_uri: string
}

/**
 * The spec's flow, as new-api's front ends run it: a state from
 * `/api/oauth/state`, the provider's URL built from `/api/status` (no
 * `/start`, so no PKCE and no nonce), the provider's redirect to the callback.
 */
const frontEndBegin = async (gateway: TestGateway, client: Browser, provider: string) => {
  const status = await (await fetch(`${gateway.url}/api/status`)).json()
  const published = (status.data.oauth_clients as Array<PublishedClient>).find((item) => item.name === provider)!
  ok(!JSON.stringify(status).includes("secret"), "no client secret is published")
  const issued = await client.call<string>("GET", "/api/oauth/state")
  const url = new URL(published.authorization_endpoint!)
  url.searchParams.set("client_id", published.client_id)
  url.searchParams.set("redirect_uri", published.redirect_uri)
  url.searchParams.set("response_type", "code")
  url.searchParams.set("scope", published.scope)
  url.searchParams.set("state", issued.data)
  return { published, state: issued.data, authorizeUrl: url.href }
}

Deno.test("oauth oidc, the spec's flow: a state from /api/oauth/state, the URL from /api/status, the callback", async () => {
  await withOidc(
    async (gateway, provider) => {
      const client = browser(gateway.url)
      const { published, authorizeUrl } = await frontEndBegin(gateway, client, "corp")
      deepStrictEqual(published, {
        name: "corp",
        type: "oidc",
        client_id: "sluice-test-client",
        authorization_endpoint: `${provider.issuer}/auth`,
        scope: "openid email profile",
        redirect_uri: `${gateway.url}/api/oauth/corp`
      })
      const back = await provider.authorize(authorizeUrl, "bob-sso")
      const done = await client.call<{ username: string }>("GET", callbackPath(back))
      strictEqual(done.success, true, done.message)
      strictEqual(done.data.username, "bob-sso")
      strictEqual((await client.call("GET", "/api/user/self")).status, 200)
      // Still single use, and still tied to the browser it was issued to.
      const replay = browser(gateway.url)
      for (const [name, value] of client.cookies) replay.cookies.set(name, value)
      replay.cookies.delete("sluice_session")
      deepStrictEqual(
        (await replay.call("GET", callbackPath(back))).message,
        "The sign-in state is unknown, used or expired."
      )
      const other = await frontEndBegin(gateway, browser(gateway.url), "corp")
      const stranger = await browser(gateway.url).call(
        "GET",
        callbackPath(await provider.authorize(other.authorizeUrl, "bob-sso"))
      )
      deepStrictEqual([stranger.success, stranger.message], [false, "The sign-in was started in another browser."])
      // A state bound by /start to a provider is not taken at another provider's callback (only one here: a wrong name).
      const started = await begin(client, "corp")
      const wrong = await client.call("GET", `/api/oauth/nosuch?code=x&state=${encodeURIComponent(started.state)}`)
      strictEqual(wrong.success, false)
      deepStrictEqual(await identities(gateway), [{ provider: "corp", subject: "bob-sso", username: "bob-sso" }])
    },
    {},
    false
  )
})

Deno.test("oauth github, the spec's flow: a state from /api/oauth/state at the callback, without /start", async () => {
  const github = startFakeGitHub()
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      basicConfig(url, {
        oauth: {
          providers: {
            github: {
              type: "github",
              client_id: github.clientId,
              client_secret: github.clientSecret,
              authorize_url: `${github.url}/login/oauth/authorize`,
              token_url: `${github.url}/login/oauth/access_token`,
              api_url: github.url,
              allow_insecure_http: true
            }
          }
        }
      })
  })
  try {
    const client = browser(gateway.url)
    const { published, authorizeUrl } = await frontEndBegin(gateway, client, "github")
    deepStrictEqual(
      [published.authorization_endpoint, published.scope, published.redirect_uri],
      [`${github.url}/login/oauth/authorize`, "read:user user:email", `${gateway.url}/api/oauth/github`]
    )
    const consent = await fetch(authorizeUrl, { redirect: "manual" })
    await consent.body?.cancel()
    const done = await client.call<{ username: string }>("GET", callbackPath(new URL(consent.headers.get("location")!)))
    strictEqual(done.success, true, done.message)
    strictEqual(done.data.username, "octo")
    deepStrictEqual(github.refused, [])
    deepStrictEqual(await identities(gateway), [{ provider: "github", subject: "4242", username: "octo" }])
  } finally {
    await gateway.close()
    await github.close()
  }
})

Deno.test("oauth oidc: a link state dies with the session that asked for it (stolen cookie, then password change)", async () => {
  await withOidc(async (gateway, provider) => {
    const victim = browser(gateway.url)
    await victim.call("POST", "/api/user/register", { username: "vic", password: "vic-password-1" })
    await victim.login("vic", "vic-password-1")
    // The attacker holds a copy of the victim's session cookie and asks for a link state with it.
    const attacker = browser(gateway.url)
    attacker.cookies.set("sluice_session", victim.cookies.get("sluice_session")!)
    const { authorizeUrl } = await begin(attacker, "corp")
    const changed = await victim.call("PUT", "/api/user/self", {
      password: "vic-password-2",
      old_password: "vic-password-1"
    })
    strictEqual(changed.success, true, changed.message)
    const back = await provider.authorize(authorizeUrl, "attacker-at-corp")
    const done = await attacker.call("GET", callbackPath(back))
    strictEqual(done.success, false, "the link is refused")
    deepStrictEqual(await identities(gateway), [])
  })
})

Deno.test("oauth oidc: logout, disabling and a role change delete the user's pending link states", async () => {
  await withOidc(async (gateway) => {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const pending = async (username: string) =>
      Number(
        (await gateway.query<{ n: string }>(
          `SELECT count(*) AS n FROM oauth_states s JOIN users u ON u.id = s.user_id WHERE u.username = '${username}'`
        ))[0].n
      )
    for (const [name, end] of [["lou", "logout"], ["dee", "disable"], ["rae", "role"]] as const) {
      const made = await root.call<{ id: number }>("POST", "/api/user/", { username: name, password: "pass-word-123" })
      const user = browser(gateway.url)
      await user.login(name, "pass-word-123")
      await begin(user, "corp")
      strictEqual(await pending(name), 1)
      if (end === "logout") await user.call("GET", "/api/user/logout")
      if (end === "disable") await root.call("PUT", "/api/user/", { id: made.data.id, status: "disabled" })
      if (end === "role") await root.call("PUT", "/api/user/", { id: made.data.id, role: "admin" })
      strictEqual(await pending(name), 0, `${end} deletes ${name}'s states`)
    }
  })
})

Deno.test("oauth oidc: a linked identity can be unlinked, unless it is the only way in", async () => {
  await withOidc(async (gateway, provider) => {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    const { authorizeUrl } = await begin(root, "corp")
    await root.call("GET", callbackPath(await provider.authorize(authorizeUrl, "root-at-corp")))
    deepStrictEqual((await identities(gateway)).length, 1)
    const unlinked = await root.call<{ oauth: Array<string> }>("DELETE", "/api/user/self/oauth/corp")
    deepStrictEqual([unlinked.success, unlinked.data.oauth], [true, []])
    deepStrictEqual(await identities(gateway), [])
    const again = await root.call("DELETE", "/api/user/self/oauth/corp")
    deepStrictEqual([again.status, again.success], [200, false])
    ok(again.message.includes("not linked"), again.message)
    const noCsrf = await root.call("DELETE", "/api/user/self/oauth/corp", undefined, { csrf: false })
    strictEqual(noCsrf.status, 403)

    // An account made by OAuth sign-up has no password: its only link stays.
    const newcomer = browser(gateway.url)
    const started = await begin(newcomer, "corp")
    const signedUp = await newcomer.call("GET", callbackPath(await provider.authorize(started.authorizeUrl, "newbie")))
    strictEqual(signedUp.success, true, signedUp.message)
    const refused = await newcomer.call("DELETE", "/api/user/self/oauth/corp")
    deepStrictEqual([refused.success, refused.message.includes("only way")], [false, true])
  })
})

Deno.test("oauth oidc: sign-up cannot make a name that differs from an existing one only in case", async () => {
  await withOidc(async (gateway, provider) => {
    const client = browser(gateway.url)
    const { authorizeUrl } = await begin(client, "corp")
    const done = await client.call<{ username: string }>(
      "GET",
      callbackPath(await provider.authorize(authorizeUrl, "ROOT"))
    )
    strictEqual(done.success, true, done.message)
    ok(done.data.username.toLowerCase() !== "root", done.data.username)
    ok(done.data.username.startsWith("ROOT-"), done.data.username)
    // The store itself refuses such a name.
    let refused = false
    try {
      await gateway.query(
        "INSERT INTO users (username, role, group_name, quota) VALUES ('ALICE', 'user', 'default', 0)"
      )
    } catch {
      refused = true
    }
    strictEqual(refused, true)
    const registered = await browser(gateway.url).call("POST", "/api/user/register", {
      username: "Root",
      password: "root-lookalike-1"
    })
    deepStrictEqual([registered.success, registered.message], [false, "The username is taken."])
  })
})
