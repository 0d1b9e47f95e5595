/**
 * Downloads a URL on a caller's behalf without letting the caller reach the
 * gateway's own network (an SSRF guard):
 *
 * - only `http:` and `https:` URLs;
 * - every address the host name resolves to (A and AAAA, through the system
 *   resolver, `/etc/hosts` included) must be public unicast: a single loopback,
 *   private (RFC 1918), link-local (cloud metadata `169.254.169.254`),
 *   unspecified, multicast, broadcast, carrier-grade NAT, unique-local,
 *   reserved or documentation address refuses the URL; IPv4-mapped,
 *   IPv4-translated and NAT64 (`64:ff9b::/96`) IPv6 addresses are judged by the
 *   IPv4 address they carry; IP literals are judged the same way, without DNS;
 * - the connection goes to the address that was checked (the resolver is
 *   node:http's `lookup` hook, so there is no second resolution an attacker's
 *   DNS could answer differently: no DNS rebinding); TLS is still verified
 *   against the URL's host name;
 * - redirects are followed by hand, at most `maxRedirects` (default 5), each
 *   hop checked again;
 * - the body is counted while it is read and the download aborted past
 *   `maxBytes`; a larger `Content-Length` is refused before reading;
 * - a `budget` shared by several downloads (the bytes one caller request may
 *   make the gateway hold) is drawn on chunk by chunk, and the download that
 *   would overdraw it is aborted at that chunk (before reading, when its
 *   `Content-Length` is more than what is left);
 * - one time limit covers the whole download, redirects included;
 * - in `head` mode only the first `maxBytes` bytes are wanted: they are asked
 *   for with `Range: bytes=0-<maxBytes - 1>`, and a server that sends more has
 *   its answer cut at `maxBytes` (not refused).
 *
 * `safeFetch` reads the whole body into memory; `safeOpen` checks the same way
 * but hands the 2xx answer back to be read chunk by chunk (a video relayed as
 * it arrives), the size cap counted and the time limit running while it is
 * read.
 *
 * Host names in `allowHosts` (an operator's trusted intranet servers) skip the
 * address check, only for that exact host name.
 *
 * Range names are those of `ipaddr.js` (`loopback`, `private`, `linkLocal`,
 * `uniqueLocal`, `carrierGradeNat`, …), see RFC 6890 and the IANA special-purpose
 * address registries.
 *
 * @since 0.1.0
 */
import { Clock, Data, Effect } from "effect"
import ipaddr from "ipaddr.js"
import { lookup as systemLookup } from "node:dns"
import http from "node:http"
import https from "node:https"
import { concatBytes } from "../../domain/Bytes.ts"

/**
 * Why a download failed:
 * - `invalid-url`: not an absolute `http:`/`https:` URL (also a redirect's `Location`);
 * - `blocked-address`: the host is, or resolves to, a non-public address;
 * - `too-many-redirects`: more than `maxRedirects` redirects;
 * - `too-large`: the body (or its announced `Content-Length`) is over `maxBytes`;
 * - `over-budget`: the body would overdraw the shared `budget`;
 * - `timeout`: the whole download took longer than `timeoutMs`;
 * - `http-status`: the final answer was not 2xx;
 * - `network`: DNS failure, connection refused or reset, TLS failure.
 *
 * @category models
 */
export type SafeFetchFailure =
  | "invalid-url"
  | "blocked-address"
  | "too-many-redirects"
  | "too-large"
  | "over-budget"
  | "timeout"
  | "http-status"
  | "network"

/**
 * A refused or failed download. `message` is a sentence safe to show the
 * caller who sent the URL (it names the URL without its query string).
 *
 * @category errors
 */
export class SafeFetchError extends Data.TaggedError("SafeFetchError")<{
  readonly reason: SafeFetchFailure
  readonly message: string
  /** The HTTP status of an `http-status` failure. */
  readonly status?: number | undefined
}> {}

/** One resolved address. @category models */
export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/**
 * Host name → every address it resolves to. Fails (rejects) when the name
 * does not resolve.
 *
 * @category models
 */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>

/**
 * A byte allowance shared by several downloads; `limit` is its size in bytes
 * (for messages), `take` draws `bytes` from it and answers false, drawing
 * nothing, when fewer are left. Made by `byteBudget`.
 *
 * @category models
 */
export interface ByteBudget {
  readonly limit: number
  readonly remaining: () => number
  readonly take: (bytes: number) => boolean
}

/**
 * A budget of `limit` bytes of which `spent` are drawn already.
 *
 * @category constructors
 */
export const byteBudget = (limit: number, spent = 0): ByteBudget => {
  let left = limit - spent
  return {
    limit,
    remaining: () => left,
    take: (bytes) => {
      if (bytes > left) return false
      left -= bytes
      return true
    }
  }
}

/**
 * Options of `safeFetch`.
 *
 * @category models
 */
export interface SafeFetchOptions {
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number
  /** Bytes shared with other downloads (default: none); see `ByteBudget`. */
  readonly budget?: ByteBudget | undefined
  /** Time limit for the whole download, redirects included, in milliseconds. */
  readonly timeoutMs: number
  /** Host names trusted although they resolve to non-public addresses (exact, case-insensitive). */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** Redirects followed at most (default 5). */
  readonly maxRedirects?: number | undefined
  /** The request's `Accept` header (default: any media type). */
  readonly accept?: string | undefined
  /** Name resolution (default: the system resolver, `node:dns` `lookup` with `all: true`). */
  readonly resolve?: Resolver | undefined
  /** Read only the first `maxBytes` bytes (see the module doc); default false. */
  readonly head?: boolean | undefined
  /**
   * Sends a POST with this body and these headers instead of a GET (a webhook
   * delivery); the answer is read as a download's, under the same guard.
   */
  readonly post?: { readonly body: string; readonly headers: Readonly<Record<string, string>> } | undefined
  /**
   * More request headers (a `Range`), sent on every hop, redirects included: never a credential, since a
   * redirect may lead to another host.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * A completed download: the final URL (after redirects), the `Content-Type`
 * header as sent (or `undefined`), and the body.
 *
 * @category models
 */
export interface Fetched {
  readonly url: string
  readonly contentType: string | undefined
  readonly bytes: Uint8Array
  /**
   * The whole body's size in bytes as the server announced it (`Content-Range`
   * total of a 206, else `Content-Length`), when it did.
   */
  readonly totalBytes?: number | undefined
}

const redirectStatuses: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

/** An IPv6 address' last 32 bits as IPv4. */
const embeddedIpv4 = (address: ipaddr.IPv6): ipaddr.IPv4 => {
  const parts = address.parts
  return new ipaddr.IPv4([parts[6] >> 8, parts[6] & 0xff, parts[7] >> 8, parts[7] & 0xff])
}

const nat64 = ipaddr.IPv6.parseCIDR("64:ff9b::/96")

/**
 * The special-purpose range an IP address belongs to, or `undefined` when it
 * is public unicast (safe to connect to). Not an IP address → `"invalid"`.
 * Accepts IPv6 with or without brackets and with a zone id (`fe80::1%eth0`).
 *
 * @category guards
 */
export const blockedRange = (address: string): string | undefined => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  if (!ipaddr.isValid(bare)) return "invalid"
  const parsed = ipaddr.parse(bare)
  if (parsed.kind() === "ipv4") {
    const range = (parsed as ipaddr.IPv4).range()
    return range === "unicast" ? undefined : range
  }
  const v6 = parsed as ipaddr.IPv6
  const range = v6.range()
  if (range === "ipv4Mapped" || range === "rfc6145" || (range === "rfc6052" && v6.match(nat64))) {
    const inner = embeddedIpv4(v6).range()
    return inner === "unicast" ? undefined : `${range} ${inner}`
  }
  if (range !== "unicast") return range
  // `::/96` (deprecated IPv4-compatible, `::7f00:1`) is unicast to ipaddr.js but carries an IPv4 address.
  return v6.parts.slice(0, 6).every((part) => part === 0) ? "ipv4Compatible" : undefined
}

/**
 * The system resolver: `node:dns` `lookup` with `all: true` (getaddrinfo, so
 * `/etc/hosts` counts, as it does for the connection itself).
 *
 * @category resolvers
 */
export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    systemLookup(hostname, { all: true }, (error, addresses) => {
      if (error !== null) return reject(error)
      resolve(addresses.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 })))
    })
  })

const clip = (text: string): string => text.length > 200 ? `${text.slice(0, 197)}...` : text

/** A URL as it may be shown: no credentials, no query string (signed URLs carry secrets there), clipped. */
const display = (url: URL): string => clip(`${url.protocol}//${url.host}${url.pathname}`)

/**
 * A URL text as it may be shown to a caller or in a log: without credentials
 * and query string, at most 200 characters (text that is not a URL: clipped).
 *
 * @category formatting
 */
export const displayUrl = (text: string): string => {
  try {
    return display(new URL(text))
  } catch {
    return clip(text)
  }
}

const hostOf = (url: URL): string => {
  const host = url.hostname.toLowerCase().replace(/\.$/, "")
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
}

const normalizeHost = (host: string): string => {
  const lower = host.trim().toLowerCase().replace(/\.$/, "")
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower
}

const fail = (reason: SafeFetchFailure, message: string) => new SafeFetchError({ reason, message })

const parseTarget = (text: string, base: URL | undefined): URL | SafeFetchError => {
  let url: URL
  try {
    url = base === undefined ? new URL(text) : new URL(text, base)
  } catch {
    return fail("invalid-url", `"${clip(text)}" is not a valid absolute URL.`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail("invalid-url", `Only http and https URLs can be downloaded, not "${url.protocol}" (${display(url)}).`)
  }
  return url
}

const blockedMessage = (url: URL, address: string, range: string) =>
  fail("blocked-address", `The URL ${display(url)} points to a blocked address (${address} is ${range}).`)

/** A node `lookup` error that carries the failure it stands for. */
interface GuardError extends Error {
  readonly failure: SafeFetchError
}

const guardError = (failure: SafeFetchError): GuardError =>
  Object.assign(new Error(failure.message), { code: "ERR_SLUICE_BLOCKED", failure })

type LookupCallback = (error: Error | null, address?: unknown, family?: number) => void

/**
 * node:http's `lookup` hook: resolves, refuses when any address is not public
 * (unless the host is trusted), and hands the checked addresses to the socket.
 */
const guardedLookup = (url: URL, resolve: Resolver, trusted: boolean) =>
(
  hostname: string,
  options: { readonly all?: boolean; readonly family?: number | string } | number,
  callback: LookupCallback
): void => {
  const wanted = typeof options === "object" ? Number(options.family ?? 0) : Number(options)
  const all = typeof options === "object" && options.all === true
  resolve(hostname).then((resolved) => {
    if (!trusted) {
      for (const entry of resolved) {
        const range = blockedRange(entry.address)
        if (range !== undefined) return callback(guardError(blockedMessage(url, entry.address, range)))
      }
    }
    const usable = wanted === 4 || wanted === 6 ? resolved.filter((entry) => entry.family === wanted) : resolved
    if (usable.length === 0) {
      return callback(guardError(fail("network", `The host of ${display(url)} has no address.`)))
    }
    if (all) return callback(null, usable.map((entry) => ({ address: entry.address, family: entry.family })))
    callback(null, usable[0].address, usable[0].family)
  }, (error: unknown) => {
    const code = (error as { code?: unknown }).code
    callback(
      guardError(fail("network", `The host of ${display(url)} could not be resolved (${String(code ?? error)}).`))
    )
  })
}

type Hop =
  | { readonly _tag: "Redirect"; readonly location: string }
  | {
    readonly _tag: "Body"
    readonly contentType: string | undefined
    readonly bytes: Uint8Array
    readonly totalBytes: number | undefined
  }
  | {
    readonly _tag: "Open"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly response: http.IncomingMessage
    readonly request: http.ClientRequest
  }

/** A node answer's headers, names in lower case, a repeated header's values joined with `, `. */
const headersOf = (response: http.IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return headers
}

/**
 * One request: a redirect to follow, or (2xx) the body read under the size
 * cap, or with `open` the answer left unread (its announced length checked).
 */
const requestOnce = (
  url: URL,
  options: SafeFetchOptions,
  trusted: boolean,
  signal: AbortSignal,
  open = false
): Promise<Hop> =>
  new Promise<Hop>((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http
    const request = client.request(url, {
      method: options.post === undefined ? "GET" : "POST",
      agent: false,
      signal,
      headers: {
        accept: options.accept ?? "*/*",
        "accept-encoding": "identity",
        "user-agent": options.post === undefined ? "Sluice-MediaFetcher/0.1" : "Sluice-Webhooks/0.1",
        ...(options.head === true ? { range: `bytes=0-${Math.max(0, options.maxBytes - 1)}` } : {}),
        ...options.headers,
        ...options.post?.headers
      },
      lookup: guardedLookup(url, options.resolve ?? systemResolver, trusted) as never
    }, (response) => {
      const status = response.statusCode ?? 0
      if (redirectStatuses.has(status) && typeof response.headers.location === "string") {
        response.resume()
        return resolve({ _tag: "Redirect", location: response.headers.location })
      }
      if (status < 200 || status >= 300) {
        response.resume()
        return reject(
          new SafeFetchError({
            reason: "http-status",
            message: `The URL ${display(url)} answered HTTP ${status}.`,
            status
          })
        )
      }
      const tooLarge = () =>
        fail("too-large", `The download from ${display(url)} is larger than the limit of ${options.maxBytes} bytes.`)
      const budget = options.budget
      const overBudget = () =>
        fail(
          "over-budget",
          `The download from ${display(url)} makes the downloads of this request larger than the limit of ${
            budget?.limit ?? 0
          } bytes in total.`
        )
      const announced = Number(response.headers["content-length"] ?? Number.NaN)
      const rangeTotal = /\/(\d{1,15})\s*$/.exec(String(response.headers["content-range"] ?? ""))
      const totalBytes = rangeTotal !== null
        ? Number(rangeTotal[1])
        : status === 200 && Number.isFinite(announced)
        ? announced
        : undefined
      const contentTypeHeader = response.headers["content-type"]
      const contentType = typeof contentTypeHeader === "string" ? contentTypeHeader : undefined
      const head = options.head === true
      if (!head && Number.isFinite(announced) && announced > options.maxBytes) {
        response.destroy()
        return reject(tooLarge())
      }
      if (!head && budget !== undefined && Number.isFinite(announced) && announced > budget.remaining()) {
        response.destroy()
        return reject(overBudget())
      }
      if (open) return resolve({ _tag: "Open", status, headers: headersOf(response), response, request })
      const chunks: Array<Uint8Array> = []
      let received = 0
      const join = (): Uint8Array => concatBytes(chunks)
      response.on("data", (chunk: Uint8Array) => {
        if (head && received + chunk.byteLength >= options.maxBytes) {
          // The head is complete: keep up to `maxBytes`, stop reading.
          chunks.push(chunk.subarray(0, options.maxBytes - received))
          received = options.maxBytes
          response.destroy()
          request.destroy()
          return resolve({ _tag: "Body", contentType, bytes: join(), totalBytes })
        }
        received += chunk.byteLength
        const failure = received > options.maxBytes
          ? tooLarge()
          : budget !== undefined && !budget.take(chunk.byteLength)
          ? overBudget()
          : undefined
        if (failure !== undefined) {
          response.destroy()
          request.destroy()
          return reject(failure)
        }
        chunks.push(chunk)
      })
      response.on("error", reject)
      response.on("end", () => resolve({ _tag: "Body", contentType, bytes: join(), totalBytes }))
    })
    request.on("error", reject)
    if (options.post !== undefined) request.end(options.post.body)
    else request.end()
  })

const asFailure = (url: URL) => (error: unknown): SafeFetchError => {
  if (error instanceof SafeFetchError) return error
  const carried = (error as Partial<GuardError>).failure
  if (carried instanceof SafeFetchError) return carried
  const code = (error as { code?: unknown }).code
  return fail("network", `The URL ${display(url)} could not be downloaded (${String(code ?? "connection failed")}).`)
}

type FinalHop = Exclude<Hop, { readonly _tag: "Redirect" }>

/**
 * Requests `url` and follows its redirects by hand, each hop checked: the
 * final hop (its body, or with `open` its unread answer) and its URL.
 */
const follow = (
  url: string,
  options: SafeFetchOptions,
  open: boolean
): Effect.Effect<{ readonly url: URL; readonly hop: FinalHop }, SafeFetchError> => {
  const allowed = new Set((options.allowHosts ?? []).map(normalizeHost))
  const maxRedirects = options.maxRedirects ?? 5
  const first = parseTarget(url, undefined)
  return Effect.gen(function* () {
    const origin = first instanceof SafeFetchError ? yield* first : first
    let current = origin
    for (let redirects = 0;; redirects++) {
      const host = hostOf(current)
      const trusted = allowed.has(host)
      if (!trusted && ipaddr.isValid(host)) {
        const range = blockedRange(host)
        if (range !== undefined) return yield* blockedMessage(current, host, range)
      }
      const target = current
      const hop = yield* Effect.tryPromise({
        try: (signal) => requestOnce(target, options, trusted, signal, open),
        catch: asFailure(target)
      })
      if (hop._tag !== "Redirect") return { url: current, hop }
      if (redirects >= maxRedirects) {
        return yield* fail(
          "too-many-redirects",
          `The URL ${display(origin)} redirected more than ${maxRedirects} times.`
        )
      }
      const next = parseTarget(hop.location, current)
      current = next instanceof SafeFetchError ? yield* next : next
    }
  })
}

const timedOut = (url: string, timeoutMs: number) =>
  fail("timeout", `The download from ${displayUrl(url)} did not finish within ${timeoutMs} ms.`)

/**
 * Downloads `url` under the guard described in the module doc. Fails with a
 * `SafeFetchError` whose `reason` says why; an IP literal or a trusted-host
 * check fails before any network use.
 *
 * @category fetching
 */
export const safeFetch = (url: string, options: SafeFetchOptions): Effect.Effect<Fetched, SafeFetchError> =>
  follow(url, options, false).pipe(
    Effect.flatMap(({ url: final, hop }) =>
      hop._tag === "Body"
        ? Effect.succeed({
          url: final.href,
          contentType: hop.contentType,
          bytes: hop.bytes,
          totalBytes: hop.totalBytes
        })
        : Effect.sync(() => {
          hop.response.destroy()
          hop.request.destroy()
        }).pipe(Effect.andThen(Effect.fail(fail("network", `The URL ${display(final)} could not be read.`))))
    ),
    Effect.timeoutOrElse({ duration: options.timeoutMs, orElse: () => Effect.fail(timedOut(url, options.timeoutMs)) })
  )

/**
 * Options of `safeOpen`: those of `safeFetch` but `head`, `post` and
 * `budget` (a download read as it is relayed is one request's only).
 *
 * @category models
 */
export type SafeOpenOptions = Omit<SafeFetchOptions, "head" | "post" | "budget">

/**
 * A 2xx answer opened by `safeOpen`, its body not yet read.
 *
 * @category models
 */
export interface OpenedDownload {
  /** The final URL, after redirects. */
  readonly url: string
  /** 2xx (206 for a `Range` the server honoured). */
  readonly status: number
  /** The answer's headers, names in lower case (a repeated header's values joined with `, `). */
  readonly headers: Readonly<Record<string, string>>
  /**
   * The next chunk of the body, `undefined` at its end. Fails with `too-large` once more than `maxBytes` came
   * (the download is then aborted), `timeout` once the time limit of the whole download has passed, `network`
   * when the connection breaks.
   */
  readonly read: Effect.Effect<Uint8Array | undefined, SafeFetchError>
  /** Ends the download (idempotent). */
  readonly abort: () => void
}

/**
 * Opens `url` under the guard described in the module doc and hands back the
 * 2xx answer unread: the address checks, redirects and the announced
 * `Content-Length` are judged before it is handed back; the size cap and the
 * time limit (`timeoutMs` from the start of the call, redirects included) are
 * enforced by `read`. Fails with a `SafeFetchError` as `safeFetch` does (a
 * non-2xx answer is `http-status` with its `status`).
 *
 * @category fetching
 */
export const safeOpen = (url: string, options: SafeOpenOptions): Effect.Effect<OpenedDownload, SafeFetchError> =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const deadline = started + options.timeoutMs
    const { url: final, hop } = yield* follow(url, options, true).pipe(
      Effect.timeoutOrElse({ duration: options.timeoutMs, orElse: () => Effect.fail(timedOut(url, options.timeoutMs)) })
    )
    if (hop._tag !== "Open") return yield* fail("network", `The URL ${display(final)} could not be opened.`)
    const { response, request } = hop
    // Errors reach the reader through the iterator; this keeps one that comes before the first read from throwing.
    response.on("error", () => {})
    const iterator = response[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>
    let received = 0
    let finished = false
    const abort = () => {
      finished = true
      response.destroy()
      request.destroy()
    }
    const failWith = (failure: SafeFetchError) => Effect.sync(abort).pipe(Effect.andThen(Effect.fail(failure)))
    const tooLarge = fail(
      "too-large",
      `The download from ${display(final)} is larger than the limit of ${options.maxBytes} bytes.`
    )
    const read: Effect.Effect<Uint8Array | undefined, SafeFetchError> = Effect.suspend(() => {
      if (finished) return Effect.undefined
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const left = deadline - now
        if (left <= 0) return failWith(timedOut(url, options.timeoutMs))
        return Effect.tryPromise({ try: () => iterator.next(), catch: asFailure(final) }).pipe(
          Effect.timeoutOrElse({ duration: left, orElse: () => failWith(timedOut(url, options.timeoutMs)) }),
          Effect.flatMap((next): Effect.Effect<Uint8Array | undefined, SafeFetchError> => {
            if (next.done === true) {
              finished = true
              return Effect.undefined
            }
            received += next.value.byteLength
            return received > options.maxBytes ? failWith(tooLarge) : Effect.succeed(next.value)
          })
        )
      })
    })
    return { url: final.href, status: hop.status, headers: hop.headers, read, abort }
  })
