/**
 * The pure parts of an OAuth login: a username made from what a provider
 * said (allowed characters only, at most 24, never empty), the callback URL,
 * the scopes, and the authorization URL's parameters (PKCE S256; a nonce for
 * OIDC only).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  authorizationUrl,
  baseUsername,
  type ProviderSpec,
  redirectUri,
  scopeOf
} from "../../src/accounts/OAuthProviders.ts"

Deno.test("OAuthProviders: a username from any identity has only allowed characters, 1 to 24 of them", () => {
  fc.assert(fc.property(
    fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
    fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
    (username, email) => {
      const made = baseUsername({ subject: "1", username, displayName: undefined, email })
      ok(/^[A-Za-z0-9_.-]{1,24}$/.test(made), made)
    }
  ))
  strictEqual(baseUsername({ subject: "1", username: undefined, displayName: undefined, email: "ada@x.test" }), "ada")
  strictEqual(baseUsername({ subject: "1", username: "!!", displayName: undefined, email: undefined }), "user")
})

Deno.test("OAuthProviders: the callback URL drops the base's trailing slashes", () => {
  fc.assert(fc.property(fc.nat({ max: 4 }), (slashes) => {
    strictEqual(redirectUri(`https://gw.test${"/".repeat(slashes)}`, "corp"), "https://gw.test/api/oauth/corp")
  }))
})

const github = { type: "github", client_id: "client-1", client_secret: "secret" } as unknown as ProviderSpec
const oidc = {
  type: "oidc",
  issuer: "https://idp.test",
  client_id: "client-2",
  client_secret: "secret"
} as unknown as ProviderSpec

Deno.test("OAuthProviders: default scopes per type; the authorization URL carries PKCE S256 and, for OIDC, the nonce", () => {
  strictEqual(scopeOf(github), "read:user user:email")
  strictEqual(scopeOf(oidc), "openid email profile")
  const server = { issuer: "https://idp.test", authorization_endpoint: "https://idp.test/authorize?tenant=a" }
  const params = { provider: "corp", redirectBase: "https://gw.test/", state: "s1", challenge: "c1", nonce: "n1" }
  const forOidc = new URL(authorizationUrl(server, oidc, params))
  deepStrictEqual(Object.fromEntries(forOidc.searchParams), {
    tenant: "a",
    client_id: "client-2",
    redirect_uri: "https://gw.test/api/oauth/corp",
    response_type: "code",
    scope: "openid email profile",
    state: "s1",
    code_challenge: "c1",
    code_challenge_method: "S256",
    nonce: "n1"
  })
  const forGithub = new URL(authorizationUrl(server, github, params))
  strictEqual(forGithub.searchParams.get("nonce"), null)
  strictEqual(forGithub.searchParams.get("code_challenge_method"), "S256")
})
