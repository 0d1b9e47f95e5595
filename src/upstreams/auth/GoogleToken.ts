/**
 * Google OAuth 2.0 access tokens for service-account keys (a `vertex` channel's key given as the service-account key
 * JSON): the JWT bearer grant of RFC 7523 as Google documents it for service accounts
 * (developers.google.com/identity/protocols/oauth2/service-account, "Preparing to make an authorized API call"). An
 * RS256 assertion is signed with the key's `private_key` (by `jose`, loaded on first use) and POSTed form-encoded to
 * the key's own `token_uri`; the answer's `access_token` is sent as `Authorization: Bearer`.
 *
 * Tokens are cached per key and refreshed ahead of their expiry without stalling calls: a token is fresh until five
 * minutes before it expires; after that the next call starts a refresh and is served the old token while it still
 * holds, so only a call with no valid token waits. Concurrent calls of a key share one token fetch. A failed refresh
 * while the old token holds is retried after `REFRESH_RETRY_MS`; a failed fetch with no valid token fails the call.
 * Time is Effect's `Clock` (so tests drive it with `TestClock`); the fetch goes through the gateway's own upstream
 * client. The cache holds at most `MAX_CACHED_KEYS` keys; a key that is no longer used (removed from its channel)
 * is dropped once its token has expired (swept when another key is first seen), or earlier when the cache is full
 * (least recently used first).
 *
 * No error or log line names the private key or a token.
 *
 * @since 0.1.0
 */
import { Clock, Deferred, Effect, Exit } from "effect"
import type { importPKCS8 } from "jose"
import { UpstreamFailed, type UpstreamFailureKind } from "../../errors/GatewayError.ts"
import { readBounded } from "../transport/BoundedRead.ts"

/**
 * The fields of a service-account key JSON the grant needs (the file Google Cloud's console downloads:
 * `type: "service_account"`, `client_email`, `private_key` in PKCS#8 PEM, `private_key_id`, `token_uri`).
 *
 * @category models
 */
export interface ServiceAccountKey {
  readonly clientEmail: string
  /** PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). */
  readonly privateKey: string
  /** The key's id, sent as the assertion's `kid` header when present. */
  readonly privateKeyId: string | undefined
  /** Where the assertion is exchanged for a token (`https://oauth2.googleapis.com/token` for Google's keys). */
  readonly tokenUri: string
}

/**
 * The OAuth scope every Vertex AI call needs (cloud.google.com/vertex-ai/docs/authentication: `cloud-platform`).
 *
 * @category models
 */
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

/** The JWT bearer grant type (RFC 7523 section 2.1). @category models */
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"

/** A token counts as due for refresh this long before it expires (milliseconds): five minutes. @category models */
export const REFRESH_AHEAD_MS = 5 * 60_000

/** A token is no longer sent this close to its expiry (milliseconds), so it does not expire on its way. */
export const EXPIRY_MARGIN_MS = 30_000

/** After a failed refresh while the old token holds, no new one starts for this long (milliseconds). */
export const REFRESH_RETRY_MS = 30_000

/** The most keys whose tokens are cached at once. */
export const MAX_CACHED_KEYS = 1_000

/** The most of a token endpoint's answer read, in bytes (a token answer is a few hundred). */
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024

/** The longest access token accepted (Google's are about 200–2,000 characters). */
const MAX_TOKEN_CHARS = 8_192

/** Time limits of a token fetch (milliseconds). */
const TOKEN_TIMEOUTS = { firstByteMs: 15_000, idleMs: 15_000, totalMs: 30_000 }

/**
 * Whether a channel key is a service-account key JSON (an object literal) rather than a Vertex API key.
 *
 * @category tokens
 */
export const isServiceAccountJson = (key: string): boolean => key.trimStart().startsWith("{")

/**
 * The service-account key in `key` (its JSON text), or `undefined` when it is not JSON or lacks `client_email`,
 * `private_key` or an http(s) `token_uri`, or its `type` is present and not `service_account`.
 *
 * @category tokens
 */
export const serviceAccountKeyOf = (key: string): ServiceAccountKey | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(key)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined
  const fields = parsed as Record<string, unknown>
  const text = (name: string) => typeof fields[name] === "string" && fields[name] !== "" ? fields[name] : undefined
  const clientEmail = text("client_email")
  const privateKey = text("private_key")
  const tokenUri = text("token_uri")
  if (clientEmail === undefined || privateKey === undefined || tokenUri === undefined) return undefined
  if (fields.type !== undefined && fields.type !== "service_account") return undefined
  if (!/^https?:\/\/[^\s]+$/i.test(tokenUri)) return undefined
  return { clientEmail, privateKey, privateKeyId: text("private_key_id"), tokenUri }
}

/** A response of a token call, as much as the fetch reads of it (`UpstreamClient`'s `UpstreamResponse`). */
export interface TokenResponse {
  readonly status: number
  readonly read: Effect.Effect<Uint8Array | undefined, UpstreamFailed>
  readonly abort: () => void
}

/**
 * How a token call is sent: the gateway's unsigned upstream client (`UpstreamClient`'s `send` without signing).
 *
 * @category models
 */
export type TokenSend = (
  method: "GET" | "POST",
  url: string,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined,
  timeouts: { readonly firstByteMs: number; readonly idleMs: number; readonly totalMs: number }
) => Effect.Effect<TokenResponse, UpstreamFailed>

/** An access token and when it expires (epoch milliseconds of Effect's `Clock`). */
interface AccessToken {
  readonly value: string
  readonly expiresAt: number
}

/** One key's cache entry. */
interface Entry {
  readonly key: ServiceAccountKey
  /** The imported private key, made on the first fetch. */
  signingKey: ReturnType<typeof importPKCS8> | undefined
  token: AccessToken | undefined
  inFlight: Deferred.Deferred<AccessToken, UpstreamFailed> | undefined
  /** No background refresh starts before this time (after a failed one). */
  retryAfter: number
}

/** A failure of the token grant as the relay classifies it, naming no secret. */
const tokenFailed = (kind: UpstreamFailureKind, status: number, message: string): UpstreamFailed =>
  new UpstreamFailed({ kind, status, message })

/** A structured OAuth error code (RFC 6749 section 5.2: `invalid_grant`, …) when it is one, else `undefined`. */
const oauthErrorCode = (json: unknown): string | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  const code = (json as Record<string, unknown>).error
  return typeof code === "string" && /^[a-z_]{1,64}$/.test(code) ? code : undefined
}

/**
 * The failure for a token endpoint's refusal (`status`, its parsed body): 400, 401 and 403 refuse the key
 * (`unauthorized`, so the relay disables it as a refused key; Google answers 400 `invalid_grant` for a bad or
 * revoked key and 401 `invalid_client` for an unknown one), 429 is `throttled`, anything else `server`.
 *
 * @category tokens
 */
export const tokenRefusal = (status: number, json: unknown): UpstreamFailed => {
  const code = oauthErrorCode(json)
  const named = code === undefined ? `HTTP ${status}` : `${code}, HTTP ${status}`
  if (status === 400 || status === 401 || status === 403) {
    return tokenFailed("unauthorized", status, `The token endpoint refused the service-account key (${named}).`)
  }
  return tokenFailed(
    status === 429 ? "throttled" : "server",
    status,
    `The token endpoint could not issue a token (${named}).`
  )
}

/** The whole body within `MAX_TOKEN_ANSWER_BYTES`, or `undefined` past it. */
const readAnswer = (response: TokenResponse): Effect.Effect<string | undefined, UpstreamFailed> =>
  readBounded(response, MAX_TOKEN_ANSWER_BYTES)

/**
 * A token endpoint's 2xx answer (`{ access_token, expires_in, token_type }`, RFC 6749 section 5.1) as a token valid
 * from `now`, or a `bad-body` failure when it holds no usable token.
 *
 * @category tokens
 */
export const accessTokenOf = (json: unknown, now: number): AccessToken | UpstreamFailed => {
  const bad = tokenFailed("bad-body", 200, "The token endpoint's answer holds no usable access token.")
  if (typeof json !== "object" || json === null || Array.isArray(json)) return bad
  const fields = json as Record<string, unknown>
  const value = fields.access_token
  const expiresIn = fields.expires_in
  if (typeof value !== "string" || value === "" || value.length > MAX_TOKEN_CHARS) return bad
  // Sent as a header value: visible ASCII only.
  if (!/^[\x21-\x7e]+$/.test(value)) return bad
  if (fields.token_type !== undefined && String(fields.token_type).toLowerCase() !== "bearer") return bad
  if (typeof expiresIn !== "number" || !Number.isFinite(expiresIn) || expiresIn <= 0) return bad
  return { value, expiresAt: now + Math.min(expiresIn, 24 * 3600) * 1000 }
}

/**
 * The signed assertion for `key` at `nowSeconds` (RS256; `iss` the client email, `scope` cloud-platform, `aud` the
 * key's `token_uri`, `iat`, `exp` an hour later, `kid` the key id).
 */
const assertionOf = (entry: Entry, nowSeconds: number): Effect.Effect<string, UpstreamFailed> =>
  Effect.tryPromise({
    try: async () => {
      const jose = await import("jose")
      const imported = entry.signingKey ?? jose.importPKCS8(entry.key.privateKey, "RS256")
      entry.signingKey = imported
      const signingKey = await imported
      const { SignJWT } = jose
      return await new SignJWT({ scope: CLOUD_PLATFORM_SCOPE })
        .setProtectedHeader({
          alg: "RS256",
          typ: "JWT",
          ...(entry.key.privateKeyId === undefined ? {} : { kid: entry.key.privateKeyId })
        })
        .setIssuer(entry.key.clientEmail)
        .setAudience(entry.key.tokenUri)
        .setIssuedAt(nowSeconds)
        .setExpirationTime(nowSeconds + 3600)
        .sign(signingKey)
    },
    catch: () => {
      entry.signingKey = undefined
      return tokenFailed("unauthorized", 0, "The service-account key's private_key could not sign a token request.")
    }
  })

/** One token fetch for `entry`: assertion, POST to `token_uri`, answer read. */
const fetchToken = (send: TokenSend, entry: Entry): Effect.Effect<AccessToken, UpstreamFailed> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const assertion = yield* assertionOf(entry, Math.floor(now / 1000))
    const body = new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString()
    const response = yield* send(
      "POST",
      entry.key.tokenUri,
      { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body,
      TOKEN_TIMEOUTS
    )
    const text = yield* readAnswer(response)
    let json: unknown
    try {
      json = text === undefined ? undefined : JSON.parse(text)
    } catch {
      json = undefined
    }
    if (response.status < 200 || response.status >= 300) return yield* tokenRefusal(response.status, json)
    const token = accessTokenOf(json, now)
    if (token instanceof UpstreamFailed) return yield* token
    return token
  })

/**
 * A token source: `tokenFor(key)` is the access token to send for a service-account key JSON, from the cache or a
 * fetch (see the module). Fails with `UpstreamFailed`: `unauthorized` when the key is not a usable service-account
 * key or the token endpoint refuses it, `throttled` / `server` / `network` / `timeout` / `bad-body` when no token
 * could be had otherwise (the key is not disabled for those).
 *
 * @category tokens
 */
export interface GoogleTokens {
  readonly tokenFor: (key: string) => Effect.Effect<string, UpstreamFailed>
  /** How many keys the cache holds (for tests). */
  readonly size: () => number
}

/**
 * A token source whose token calls go through `send` (the gateway's unsigned upstream client).
 *
 * @category tokens
 */
export const makeGoogleTokens = (send: TokenSend): GoogleTokens => {
  const cache = new Map<string, Entry>()

  /** Drops expired idle entries, then the least recently used ones while the cache is full. */
  const sweep = (now: number) => {
    for (const [key, entry] of cache) {
      if (entry.inFlight === undefined && (entry.token === undefined || entry.token.expiresAt <= now)) {
        cache.delete(key)
      }
    }
    for (const [key, entry] of cache) {
      if (cache.size < MAX_CACHED_KEYS) break
      if (entry.inFlight === undefined) cache.delete(key)
    }
  }

  /** Starts the fetch of `entry` (one at a time), detached from the calling fiber so no caller can cancel it. */
  const start = (entry: Entry): Effect.Effect<Deferred.Deferred<AccessToken, UpstreamFailed>> => {
    const running = entry.inFlight
    if (running !== undefined) return Effect.succeed(running)
    const deferred = Deferred.makeUnsafe<AccessToken, UpstreamFailed>()
    entry.inFlight = deferred
    const settle = (exit: Exit.Exit<AccessToken, UpstreamFailed>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          entry.inFlight = undefined
          if (Exit.isSuccess(exit)) entry.token = exit.value
          else entry.retryAfter = now + REFRESH_RETRY_MS
          Deferred.doneUnsafe(deferred, exit)
        }))
    return Effect.as(Effect.forkDetach(Effect.flatMap(Effect.exit(fetchToken(send, entry)), settle)), deferred)
  }

  const tokenFor = (key: string): Effect.Effect<string, UpstreamFailed> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      let entry = cache.get(key)
      if (entry === undefined) {
        const account = serviceAccountKeyOf(key)
        if (account === undefined) {
          return Effect.fail(
            tokenFailed(
              "unauthorized",
              0,
              "The channel key is not a service-account key JSON (client_email, private_key and token_uri)."
            )
          )
        }
        // A key seen for the first time: entries of keys no longer used (their tokens expired) go first.
        sweep(now)
        entry = { key: account, signingKey: undefined, token: undefined, inFlight: undefined, retryAfter: 0 }
        cache.set(key, entry)
      } else {
        // Most recently used last, for the sweep.
        cache.delete(key)
        cache.set(key, entry)
      }
      const token = entry.token
      if (token !== undefined && now < token.expiresAt - REFRESH_AHEAD_MS) return Effect.succeed(token.value)
      if (token !== undefined && now < token.expiresAt - EXPIRY_MARGIN_MS) {
        // Due for refresh but still valid: served now, refreshed in the background.
        if (entry.inFlight !== undefined || now < entry.retryAfter) return Effect.succeed(token.value)
        return Effect.as(start(entry), token.value)
      }
      return Effect.map(Effect.flatMap(start(entry), Deferred.await), (fresh) => fresh.value)
    })

  return { tokenFor, size: () => cache.size }
}
