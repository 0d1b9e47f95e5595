/**
 * The OAuth/OIDC providers' side of a browser login, over `oauth4webapi`:
 * where a provider's endpoints are (GitHub's fixed, an OIDC issuer's
 * discovered and cached), the authorization URL (PKCE S256, an OIDC nonce),
 * and the identity a provider vouches for after the code exchange (for
 * `oidc` the ID token's claims after every check the library makes; for
 * `github`, the user API). Plus the pure parts: scopes, the redirect URI, a
 * username made from an identity. No SQL: see `OAuthStates`.
 *
 * @since 0.1.0
 */
import * as oauth from "oauth4webapi"
import type { OAuthProviderSpec } from "../config/BootstrapFile.ts"
import { safeVendorText } from "../domain/Redact.ts"

/** A provider's settings from the bootstrap file. @category models */
export type ProviderSpec = typeof OAuthProviderSpec.Type

/** What a provider told us about the person. @category models */
export interface Identity {
  readonly subject: string
  readonly username: string | undefined
  readonly displayName: string | undefined
  readonly email: string | undefined
}

/** GitHub's endpoints (docs.github.com, "Authorizing OAuth apps"), unless a provider's spec overrides them. */
const GITHUB = {
  authorize: "https://github.com/login/oauth/authorize",
  token: "https://github.com/login/oauth/access_token",
  api: "https://api.github.com"
}

/** A library error in words safe to show (no secret, no control character, bounded). */
export const reason = (error: unknown): string =>
  safeVendorText(error instanceof Error ? error.message : String(error), 200)

const httpOptions = (spec: ProviderSpec) =>
  spec.allow_insecure_http === true ? { [oauth.allowInsecureRequests]: true } : {}

/** A username made from what the provider said: the allowed characters only, at most 24 of them. */
export const baseUsername = (identity: Identity): string => {
  const raw = identity.username ?? identity.email?.split("@")[0] ?? "user"
  const cleaned = raw.replace(/[^A-Za-z0-9_.-]/g, "").slice(0, 24)
  return cleaned === "" ? "user" : cleaned
}

/** A non-empty string claim, made safe and bounded to `max`; else `undefined`. */
const text = (value: unknown, max: number): string | undefined =>
  typeof value === "string" && value !== "" ? safeVendorText(value, max) : undefined

/** The gateway's callback URL for `provider` under `redirectBase` (trailing slashes dropped). */
export const redirectUri = (redirectBase: string, provider: string): string =>
  `${redirectBase.replace(/\/+$/, "")}/api/oauth/${provider}`

/** The scopes asked for, space-separated: the spec's, else the type's defaults. */
export const scopeOf = (spec: ProviderSpec): string =>
  (spec.scopes ?? (spec.type === "oidc" ? ["openid", "email", "profile"] : ["read:user", "user:email"])).join(" ")

/**
 * The authorization URL of `server` for a login by `spec` with `state`, the
 * PKCE S256 `challenge`, and for `oidc` the `nonce`.
 */
export const authorizationUrl = (
  server: oauth.AuthorizationServer,
  spec: ProviderSpec,
  params: {
    readonly provider: string
    readonly redirectBase: string
    readonly state: string
    readonly challenge: string
    readonly nonce: string
  }
): string => {
  const url = new URL(server.authorization_endpoint!)
  url.searchParams.set("client_id", spec.client_id)
  url.searchParams.set("redirect_uri", redirectUri(params.redirectBase, params.provider))
  url.searchParams.set("response_type", "code")
  url.searchParams.set("scope", scopeOf(spec))
  url.searchParams.set("state", params.state)
  url.searchParams.set("code_challenge", params.challenge)
  url.searchParams.set("code_challenge_method", "S256")
  if (spec.type === "oidc") url.searchParams.set("nonce", params.nonce)
  return url.href
}

/** The authorization server of a named provider (see `makeDiscovery`). @category models */
export type ServerOf = (name: string, spec: ProviderSpec) => Promise<oauth.AuthorizationServer>

/**
 * The authorization server of each provider: GitHub's endpoints as given
 * (or the defaults), an OIDC issuer's from its discovery document, read once
 * and kept (a failed discovery is tried again on the next login).
 */
export const makeDiscovery = (): ServerOf => {
  const discovered = new Map<string, Promise<oauth.AuthorizationServer>>()
  return (name, spec) => {
    if (spec.type === "github") {
      return Promise.resolve({
        issuer: "https://github.com",
        authorization_endpoint: spec.authorize_url ?? GITHUB.authorize,
        token_endpoint: spec.token_url ?? GITHUB.token
      })
    }
    let found = discovered.get(name)
    if (found === undefined) {
      const issuer = new URL(spec.issuer!)
      found = oauth.discoveryRequest(issuer, { algorithm: "oidc", ...httpOptions(spec) })
        .then((response) => oauth.processDiscoveryResponse(issuer, response))
      // A failed discovery is tried again on the next login.
      found.catch(() => discovered.delete(name))
      discovered.set(name, found)
    }
    return found
  }
}

/** What the callback knows of a login in flight: the state and what was stored with it. @category models */
export interface LoginInFlight {
  readonly provider: string
  readonly query: URLSearchParams
  readonly state: string
  readonly nonce: string
  readonly verifier: string
  readonly redirectBase: string
  /** The state came from `/start`: PKCE and (OIDC) a nonce were sent. */
  readonly started: boolean
}

/**
 * The identity the provider vouches for, after every check `oauth4webapi`
 * makes (the response's state, the code exchange, for OIDC the ID token's
 * signature, issuer, audience, nonce and expiry). Rejects with the library's
 * error (or a GitHub user API answer that is not OK or has no id).
 */
export const identify = async (serverOf: ServerOf, spec: ProviderSpec, login: LoginInFlight): Promise<Identity> => {
  const server = await serverOf(login.provider, spec)
  const client: oauth.Client = { client_id: spec.client_id }
  const options = httpOptions(spec)
  const params = oauth.validateAuthResponse(server, client, login.query, login.state)
  const basic = spec.type === "oidc" &&
    (server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"]).includes("client_secret_basic")
  const authentication = basic
    ? oauth.ClientSecretBasic(spec.client_secret)
    : oauth.ClientSecretPost(spec.client_secret)
  const response = await oauth.authorizationCodeGrantRequest(
    server,
    client,
    authentication,
    params,
    redirectUri(login.redirectBase, login.provider),
    login.started ? login.verifier : oauth.nopkce,
    options
  )
  if (spec.type === "oidc") {
    const result = await oauth.processAuthorizationCodeResponse(server, client, response, {
      expectedNonce: login.started ? login.nonce : oauth.expectNoNonce,
      requireIdToken: true
    })
    await oauth.validateApplicationLevelSignature(server, response, options)
    const claims = oauth.getValidatedIdTokenClaims(result)!
    return {
      subject: claims.sub,
      username: text(claims.preferred_username, 64),
      displayName: text(claims.name, 64),
      email: text(claims.email, 254)
    }
  }
  const result = await oauth.processAuthorizationCodeResponse(server, client, response)
  const user = await oauth.protectedResourceRequest(
    result.access_token,
    "GET",
    new URL(`${(spec.api_url ?? GITHUB.api).replace(/\/+$/, "")}/user`),
    new Headers({ accept: "application/vnd.github+json" }),
    null,
    options
  )
  if (!user.ok) throw new Error(`the user API answered ${user.status}`)
  const body = await user.json() as { id?: unknown; login?: unknown; name?: unknown; email?: unknown }
  if (typeof body.id !== "number" && typeof body.id !== "string") throw new Error("the user has no id")
  return {
    subject: String(body.id),
    username: text(body.login, 64),
    displayName: text(body.name, 64),
    email: text(body.email, 254)
  }
}
