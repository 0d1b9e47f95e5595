/**
 * What every `/api/*` route shares: the api envelope (`{success: true,
 * message: "", data}` or `{success: false, message}` with the status of
 * `apiStatus`), the session cookie (`sluice_session`: HttpOnly,
 * SameSite=Lax, path `/`; behind HTTPS `Secure` and named
 * `__Host-sluice_session`), the guards that resolve
 * the caller's session and check its role, the CSRF defence of
 * cookie-authenticated changes, and body, id and page decoding.
 *
 * CSRF: a state-changing call (any method but GET and HEAD) made with the
 * session cookie must carry the `X-Sluice-CSRF` header (any value; a page of
 * another origin cannot send a custom header without a CORS preflight, which
 * Sluice never grants) or an `Origin` whose host is the host the request was
 * sent to. An `Origin` of another host is refused even with the header.
 *
 * @since 0.1.0
 */
import { Effect, type Schema } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type PageRequest } from "../../domain/Page.ts"
import { makeDecoder, pathToParam } from "../../domain/SchemaDecode.ts"
import { apiStatus, envelopeBody, internalProblem, toProblem } from "../../errors/Envelope.ts"
import {
  Forbidden,
  type GatewayError,
  InvalidRequest,
  type PayloadTooLarge,
  type RequestTimeout,
  type StorageUnavailable,
  Unauthenticated
} from "../../errors/GatewayError.ts"
import { readJsonObject } from "../../http/Body.ts"
import { hostOf, schemeOf } from "../../http/ClientAddress.ts"
import { headerOf } from "../../http/Credentials.ts"
import { errorHeaders, reportFailure } from "../../http/Respond.ts"
import { roleRank, type Sessions, type SessionUser } from "../../accounts/Sessions.ts"

/** The session cookie's name. @category constants */
export const SESSION_COOKIE = "sluice_session"

/** The header that marks a same-origin API call (CSRF defence). @category constants */
export const CSRF_HEADER = "x-sluice-csrf"

/** The largest `/api/*` request body read, in bytes. @category constants */
export const API_BODY_LIMIT = 1024 * 1024

/**
 * Recovers every failure as the api envelope (status from `apiStatus`);
 * defects become a 500 that says nothing of their cause.
 *
 * @category http
 */
export const respondApi = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  effect.pipe(
    Effect.catch((error: GatewayError) => {
      const problem = toProblem(error)
      return Effect.as(
        reportFailure(error),
        HttpServerResponse.jsonUnsafe(envelopeBody("api", problem), {
          status: apiStatus(problem),
          headers: errorHeaders(error)
        })
      )
    }),
    Effect.catchDefect((defect) =>
      Effect.logError("API request failed with a defect", defect).pipe(
        Effect.as(HttpServerResponse.jsonUnsafe(envelopeBody("api", internalProblem), { status: 500 }))
      )
    )
  )

/**
 * A success in the api envelope. `data` must be JSON (no bigint).
 *
 * @category http
 */
export const ok = (data: unknown, message = ""): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe({ success: true, message, data })

const webRequest = (request: HttpServerRequest.HttpServerRequest): Request | undefined =>
  request.source instanceof Request ? request.source : undefined

/** The request's query parameters. @category http */
export const queryOf = (request: HttpServerRequest.HttpServerRequest): URLSearchParams =>
  new URL(webRequest(request)?.url ?? request.url, "http://localhost").searchParams

/** Whether the caller reached the gateway over HTTPS (directly, or as a trusted proxy's `X-Forwarded-Proto` says). */
const isHttps = (request: HttpServerRequest.HttpServerRequest): boolean => schemeOf(request) === "https"

/**
 * The session cookie's name over HTTPS: `__Host-` prefixed, so the browser
 * takes it only when Secure, with path `/` and no `Domain` (a sibling host
 * cannot plant one). @category constants
 */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`

const cookieNameOf = (request: HttpServerRequest.HttpServerRequest): string =>
  isHttps(request) ? SECURE_SESSION_COOKIE : SESSION_COOKIE

/**
 * `response` with the session cookie set to `sessionId` for `maxAgeMillis`.
 *
 * @category cookies
 */
export const withSession = (
  response: HttpServerResponse.HttpServerResponse,
  request: HttpServerRequest.HttpServerRequest,
  sessionId: string,
  maxAgeMillis: number
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.setCookieUnsafe(response, cookieNameOf(request), sessionId, {
    httpOnly: true,
    sameSite: "lax",
    secure: isHttps(request),
    path: "/",
    maxAge: `${Math.floor(maxAgeMillis / 1000)} seconds`
  })

/**
 * `response` with the session cookie removed.
 *
 * @category cookies
 */
export const withoutSession = (
  response: HttpServerResponse.HttpServerResponse,
  request: HttpServerRequest.HttpServerRequest
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.setCookieUnsafe(response, cookieNameOf(request), "", {
    httpOnly: true,
    sameSite: "lax",
    secure: isHttps(request),
    path: "/",
    maxAge: "0 seconds"
  })

/**
 * The session cookie's value, or `""`: over HTTPS only the `__Host-` cookie
 * counts, over plain HTTP only the plain one.
 *
 * @category cookies
 */
export const sessionCookieOf = (request: HttpServerRequest.HttpServerRequest): string =>
  request.cookies[cookieNameOf(request)] ?? ""

const SAFE_METHODS = new Set(["GET", "HEAD"])

/**
 * `undefined` when `request` passes the CSRF defence (see the module note),
 * else why not.
 *
 * @category csrf
 */
export const csrfProblem = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  if (SAFE_METHODS.has(request.method)) return undefined
  const origin = headerOf(request, "origin")
  if (origin !== undefined && origin !== "null") {
    const host = hostOf(request)
    let originHost: string | undefined
    try {
      originHost = new URL(origin).host
    } catch {
      originHost = undefined
    }
    if (originHost === undefined || host === undefined || originHost !== host) {
      return "Cross-site request refused: the Origin is not this site."
    }
    return undefined
  }
  if (headerOf(request, CSRF_HEADER) !== undefined) return undefined
  return `A change made with a session cookie needs the ${CSRF_HEADER} header or a same-site Origin.`
}

/**
 * The guards of `/api/*`: each resolves the caller's session (401 without
 * one), checks the CSRF defence on changes (403) and, for `admin` and
 * `root`, the role (403).
 *
 * @category guards
 */
export const makeGuards = (sessions: Sessions["Service"]) => {
  const user = (
    request: HttpServerRequest.HttpServerRequest
  ): Effect.Effect<SessionUser, Unauthenticated | Forbidden | StorageUnavailable> =>
    Effect.gen(function* () {
      const cookie = sessionCookieOf(request)
      if (cookie === "") return yield* new Unauthenticated({ reason: "no-session" })
      const found = yield* sessions.resolve(cookie)
      if (found._tag === "None") return yield* new Unauthenticated({ reason: "expired" })
      const problem = csrfProblem(request)
      if (problem !== undefined) return yield* new Forbidden({ message: problem })
      return found.value
    })
  const atLeast = (role: "admin" | "root") => (request: HttpServerRequest.HttpServerRequest) =>
    Effect.flatMap(
      user(request),
      (caller) =>
        roleRank(caller.role) >= roleRank(role)
          ? Effect.succeed(caller)
          : Effect.fail(new Forbidden({ message: `This needs the ${role} role.` }))
    )
  return { user, admin: atLeast("admin"), root: atLeast("root") }
}

/**
 * The JSON body decoded with `schema`: `InvalidRequest` naming the bad field,
 * `PayloadTooLarge` above `API_BODY_LIMIT`, or `RequestTimeout` when it did not
 * arrive within the body deadline.
 *
 * @category decoding
 */
export const decodeBody = <A, I>(schema: Schema.Codec<A, I>) => {
  const decode = makeDecoder(schema)
  return (
    request: HttpServerRequest.HttpServerRequest
  ): Effect.Effect<A, InvalidRequest | PayloadTooLarge | RequestTimeout> =>
    Effect.flatMap(readJsonObject(request, API_BODY_LIMIT), (body) => {
      const nul = nulPath(body, [])
      if (nul !== undefined) {
        const param = pathToParam(nul)
        return Effect.fail(new InvalidRequest({ message: `${param || "A key"} holds a NUL character.`, param }))
      }
      const decoded = decode(body)
      return decoded.ok
        ? Effect.succeed(decoded.value)
        : Effect.fail(new InvalidRequest({ message: decoded.error.message, param: decoded.error.param }))
    })
}

/** One value met by `nulPath`: where it sits (its key in `parent`; none for the root). */
interface NulFrame {
  readonly value: unknown
  readonly key: PropertyKey | undefined
  readonly parent: NulFrame | undefined
}

/**
 * The path of the first string (value or key) holding a NUL character, which
 * PostgreSQL text and JSONB cannot store, after `path` (the path of `value`
 * itself); `undefined` when there is none. "First" is in document order: an
 * object's key is checked before its value, and both before the next key.
 * Iterative (a stack of its own, not the call stack), so a value nested
 * however deep cannot overflow the stack; linear in the size of `value`.
 *
 * @category decoding
 */
export const nulPath = (value: unknown, path: Array<PropertyKey>): Array<PropertyKey> | undefined => {
  const pathOf = (frame: NulFrame): Array<PropertyKey> => {
    const keys: Array<PropertyKey> = []
    for (let at: NulFrame | undefined = frame; at?.parent !== undefined; at = at.parent) keys.push(at.key!)
    return [...path, ...keys.reverse()]
  }
  // Children are pushed last-first, so they are popped in document order.
  const stack: Array<NulFrame> = [{ value, key: undefined, parent: undefined }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    if (typeof frame.key === "string" && frame.key.includes("\u0000")) return pathOf(frame)
    const current = frame.value
    if (typeof current === "string") {
      if (current.includes("\u0000")) return pathOf(frame)
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) {
        stack.push({ value: current[index], key: index, parent: frame })
      }
    } else if (typeof current === "object" && current !== null) {
      const entries = Object.entries(current)
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, item] = entries[index]!
        stack.push({ value: item, key, parent: frame })
      }
    }
  }
  return undefined
}

/**
 * A query value as text: absent or empty → `undefined`; longer than `max`,
 * not well-formed or holding a control character → `InvalidRequest` naming
 * `param`.
 *
 * @category decoding
 */
export const queryText = (
  value: string | null,
  param: string,
  max = 256
): Effect.Effect<string | undefined, InvalidRequest> => {
  if (value === null || value === "") return Effect.succeed(undefined)
  // deno-lint-ignore no-control-regex
  return value.length > max || !value.isWellFormed() || /[\u0000-\u001f\u007f]/.test(value)
    ? Effect.fail(new InvalidRequest({ message: `${param} is too long or not text.`, param }))
    : Effect.succeed(value)
}

/**
 * A positive whole number from a path or query value, or `InvalidRequest`
 * naming `param`.
 *
 * @category decoding
 */
export const idOf = (value: string | undefined | null, param: string): Effect.Effect<bigint, InvalidRequest> =>
  value !== undefined && value !== null && /^[1-9]\d{0,17}$/.test(value)
    ? Effect.succeed(BigInt(value))
    : Effect.fail(new InvalidRequest({ message: `${param} must be a positive whole number.`, param }))

/**
 * The page asked for by `page` (1-based, default 1) and `page_size` (default
 * `DEFAULT_PAGE_SIZE`, at most `MAX_PAGE_SIZE`).
 *
 * @category decoding
 */
export const pageOf = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<PageRequest, InvalidRequest> => {
  const query = queryOf(request)
  const read = (name: string, fallback: number, max: number) => {
    const value = query.get(name)
    if (value === null || value === "") return fallback
    if (!/^\d{1,6}$/.test(value) || Number(value) < 1 || Number(value) > max) return undefined
    return Number(value)
  }
  const page = read("page", 1, 1_000_000)
  if (page === undefined) return Effect.fail(new InvalidRequest({ message: "page must be 1 or more.", param: "page" }))
  const size = read("page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
  if (size === undefined) {
    return Effect.fail(
      new InvalidRequest({ message: `page_size must be between 1 and ${MAX_PAGE_SIZE}.`, param: "page_size" })
    )
  }
  return Effect.succeed({ page, size })
}
