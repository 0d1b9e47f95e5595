/**
 * A real OpenID Provider for the tests: `oidc-provider` on loopback with one
 * confidential test client, behind a small front that can rewrite the ID
 * token of the token endpoint's answer (re-signed with the provider's own key
 * for a wrong audience, issuer or nonce or an expired token, or with a
 * stranger's key for a bad signature), and a driver that walks a browser through its login and
 * consent pages with `fetch` and a cookie jar.
 */
import { createServer, type Server } from "node:http"
import * as jose from "jose"
import Provider from "oidc-provider"

/** How the front rewrites the next ID tokens. */
export type Tamper = "none" | "audience" | "signature" | "expired" | "nonce" | "issuer"

/** A running provider. */
export interface TestProvider {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  tamper: Tamper
  /** Follows the provider's pages from `authorizeUrl`, logging in as `login`; the redirect back to the client. */
  readonly authorize: (authorizeUrl: string, login: string) => Promise<URL>
  readonly close: () => Promise<void>
}

/** Starts the front first (so the issuer URL is known), the provider once `redirectUri()` can be answered. */
export const startOpenIdProvider = async (options: {
  /** Whether the provider requires PKCE of every authorization (default true; false: as most providers, optional). */
  readonly pkceRequired?: boolean
} = {}) => {
  const clientId = "sluice-test-client"
  const clientSecret = "sluice-test-client-secret-0123456789"
  const { privateKey } = await jose.generateKeyPair("RS256", { extractable: true })
  const stranger = (await jose.generateKeyPair("RS256", { extractable: true })).privateKey
  const jwk = { ...(await jose.exportJWK(privateKey)), kid: "test-key", alg: "RS256", use: "sig" }
  let backend = ""
  const state = { tamper: "none" as Tamper }

  const rewrite = async (idToken: string): Promise<string> => {
    const claims = jose.decodeJwt(idToken)
    const sign = (payload: jose.JWTPayload, key: CryptoKey) =>
      new jose.SignJWT(payload).setProtectedHeader({ alg: "RS256", kid: "test-key", typ: "JWT" }).sign(key)
    switch (state.tamper) {
      case "audience":
        return await sign({ ...claims, aud: "someone-else" }, privateKey)
      case "expired":
        return await sign({ ...claims, iat: claims.iat! - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }, privateKey)
      case "signature":
        return await sign(claims, stranger)
      case "nonce":
        return await sign({ ...claims, nonce: "a-nonce-from-another-login" }, privateKey)
      case "issuer":
        return await sign({ ...claims, iss: "http://127.0.0.1:1" }, privateKey)
      case "none":
        return idToken
    }
  }

  const front = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const url = new URL(request.url)
    const headers = new Headers(request.headers)
    // The provider builds its URLs from the host it was asked at: tell it the front's (it trusts the proxy headers).
    headers.delete("host")
    headers.set("x-forwarded-host", url.host)
    headers.set("x-forwarded-proto", "http")
    const answer = await fetch(`${backend}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      body: request.body === null ? undefined : await request.arrayBuffer(),
      redirect: "manual"
    })
    if (url.pathname === "/token" && answer.ok && state.tamper !== "none") {
      const body = await answer.json()
      if (typeof body.id_token === "string") body.id_token = await rewrite(body.id_token)
      const out = new Headers(answer.headers)
      out.delete("content-length")
      return new Response(JSON.stringify(body), { status: answer.status, headers: out })
    }
    return new Response(answer.body, { status: answer.status, headers: answer.headers })
  })
  const issuer = `http://127.0.0.1:${front.addr.port}`

  let server: Server | undefined
  const start = async (redirectUris: ReadonlyArray<string>): Promise<TestProvider> => {
    const provider = new Provider(issuer, {
      clients: [{
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [...redirectUris],
        grant_types: ["authorization_code"],
        response_types: ["code"]
      }],
      jwks: { keys: [jwk] },
      cookies: { keys: ["test-cookie-signing-key"] },
      pkce: { required: () => options.pkceRequired ?? true },
      claims: { openid: ["sub"], profile: ["name", "preferred_username"], email: ["email"] },
      conformIdTokenClaims: false,
      ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
      findAccount: (_context: unknown, id: string) => ({
        accountId: id,
        claims: () => ({ sub: id, preferred_username: id, name: `User ${id}`, email: `${id}@example.test` })
      })
    })
    provider.proxy = true
    server = createServer(provider.callback())
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", () => resolve()))
    const address = server.address()
    backend = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`

    const jar = new Map<string, string>()
    const step = async (url: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers)
      if (jar.size > 0) headers.set("cookie", [...jar].map(([name, value]) => `${name}=${value}`).join("; "))
      const response = await fetch(url, { ...init, headers, redirect: "manual" })
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(";")
        const index = pair.indexOf("=")
        const name = pair.slice(0, index).trim()
        const value = pair.slice(index + 1).trim()
        if (value === "" || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name)
        else jar.set(name, value)
      }
      return response
    }

    const authorize = async (authorizeUrl: string, login: string): Promise<URL> => {
      jar.clear()
      let url = authorizeUrl
      for (let hop = 0; hop < 20; hop++) {
        if (!url.startsWith(issuer)) return new URL(url)
        const response = await step(url)
        const location = response.headers.get("location")
        if (location !== null) {
          await response.body?.cancel()
          url = new URL(location, url).href
          continue
        }
        const page = await response.text()
        if (response.status !== 200) throw new Error(`the provider answered ${response.status}: ${page.slice(0, 300)}`)
        const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1]
        const prompt = /name="prompt" value="([^"]+)"/.exec(page)?.[1]
        if (action === undefined || prompt === undefined) throw new Error(`no form on ${url}`)
        const form = new URLSearchParams({ prompt })
        if (prompt === "login") {
          form.set("login", login)
          form.set("password", "any")
        }
        const submitted = await step(new URL(action, url).href, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: form
        })
        await submitted.body?.cancel()
        url = new URL(submitted.headers.get("location")!, url).href
      }
      throw new Error("the provider kept redirecting")
    }

    return {
      issuer,
      clientId,
      clientSecret,
      get tamper() {
        return state.tamper
      },
      set tamper(value: Tamper) {
        state.tamper = value
      },
      authorize,
      close: async () => {
        await new Promise<void>((resolve) => server?.close(() => resolve()))
        server?.closeAllConnections?.()
        await front.shutdown()
      }
    }
  }
  return { issuer, clientId, clientSecret, start, stopFront: () => front.shutdown() }
}
