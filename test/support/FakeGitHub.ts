/**
 * A small fake of GitHub's OAuth endpoints for the tests: the authorize page
 * (consents at once and redirects back with a code), the token endpoint
 * (checks the client's secret, the code, the redirect URI and the PKCE
 * verifier against the S256 challenge, and answers in JSON as GitHub does
 * for `Accept: application/json`, errors included with status 200), and
 * `GET /user` for the token it issued.
 */
import { createHash } from "node:crypto"

/** A running fake. */
export interface FakeGitHub {
  readonly url: string
  readonly clientId: string
  readonly clientSecret: string
  /** The GitHub user the next login is. */
  user: { id: number; login: string; name: string | null; email: string | null }
  /** Token requests that were refused, with GitHub's error code. */
  readonly refused: Array<string>
  readonly close: () => Promise<void>
}

/** Starts the fake on a loopback port. */
export const startFakeGitHub = (): FakeGitHub => {
  const codes = new Map<string, { redirectUri: string; challenge: string | null }>()
  const tokens = new Set<string>()
  const refused: Array<string> = []
  const fake = {
    clientId: "Iv1.testclient",
    clientSecret: "github-test-secret-0123456789",
    user: { id: 4242, login: "octo", name: "Octo Cat", email: null as string | null },
    refused
  }
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const url = new URL(request.url)
    if (url.pathname === "/login/oauth/authorize") {
      const code = crypto.randomUUID()
      codes.set(code, {
        redirectUri: url.searchParams.get("redirect_uri") ?? "",
        challenge: url.searchParams.get("code_challenge_method") === "S256"
          ? url.searchParams.get("code_challenge")
          : null
      })
      const back = new URL(url.searchParams.get("redirect_uri")!)
      back.searchParams.set("code", code)
      back.searchParams.set("state", url.searchParams.get("state") ?? "")
      return Response.redirect(back.href, 302)
    }
    if (url.pathname === "/login/oauth/access_token" && request.method === "POST") {
      const form = new URLSearchParams(await request.text())
      const refuse = (error: string) => {
        refused.push(error)
        return Response.json({ error, error_description: error })
      }
      if (form.get("client_id") !== fake.clientId || form.get("client_secret") !== fake.clientSecret) {
        return refuse("incorrect_client_credentials")
      }
      const issued = codes.get(form.get("code") ?? "")
      codes.delete(form.get("code") ?? "")
      if (issued === undefined) return refuse("bad_verification_code")
      if (issued.redirectUri !== form.get("redirect_uri")) return refuse("redirect_uri_mismatch")
      const verifier = form.get("code_verifier") ?? ""
      const challenge = createHash("sha256").update(verifier).digest("base64url")
      if (issued.challenge !== null && issued.challenge !== challenge) return refuse("bad_verification_code")
      const token = `gho_${crypto.randomUUID().replaceAll("-", "")}`
      tokens.add(token)
      return Response.json({ access_token: token, token_type: "bearer", scope: "read:user,user:email" })
    }
    if (url.pathname === "/user") {
      const token = (request.headers.get("authorization") ?? "").replace(/^Bearer /i, "")
      if (!tokens.has(token)) return Response.json({ message: "Bad credentials" }, { status: 401 })
      return Response.json(fake.user)
    }
    return new Response("not found", { status: 404 })
  })
  return Object.assign(fake, { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() })
}
