/**
 * Reads a request's JSON body within the size limit and the body deadline: a
 * declared length above the limit is refused before anything is read (413); a
 * declared one within it is taken whole (the runtime's fast path, no stream
 * reader); an undeclared one is read only up to the limit. A body that has not
 * arrived within the deadline (`BodyTimeout`) is a 408 (`RequestTimeout`).
 *
 * @since 0.1.0
 */
import { Effect, Result } from "effect"
import type { HttpServerRequest } from "effect/http"
import { concatBytes } from "../domain/Bytes.ts"
import { MAX_JSON_DEPTH, parseJsonWithin } from "../domain/JsonDepth.ts"
import { InvalidRequest, PayloadTooLarge, RequestTimeout } from "../errors/GatewayError.ts"
import { BodyTimeout, readBefore, TIMED_OUT } from "./BodyDeadline.ts"
import { headerOf } from "./Credentials.ts"

/** The body's bytes, at most `limit` of them ("too-large" past it), read within `deadlineMillis`. */
const readBytesLimited = (
  request: Request,
  limit: number,
  deadlineMillis: number
): Promise<Uint8Array<ArrayBuffer> | "too-large" | typeof TIMED_OUT> => {
  if (request.body === null) return Promise.resolve(new Uint8Array())
  const reader = request.body.getReader()
  const read = async (): Promise<Uint8Array<ArrayBuffer> | "too-large"> => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > limit) {
        await reader.cancel().catch(() => undefined)
        return "too-large"
      }
      chunks.push(value)
    }
    return concatBytes(chunks)
  }
  // Past the deadline the reader is cancelled, so a trickled body is not kept in memory any longer.
  return readBefore(deadlineMillis, read(), () => void reader.cancel().catch(() => undefined))
}

const readLimited = async (
  request: Request,
  limit: number,
  declared: boolean,
  deadlineMillis: number
): Promise<string | "too-large" | typeof TIMED_OUT> => {
  // A declared length is enforced by the HTTP server: the body cannot run past it. Reading it
  // with `text()` before touching `request.body` keeps the runtime from building a stream for it.
  if (declared) return readBefore(deadlineMillis, request.text())
  const bytes = await readBytesLimited(request, limit, deadlineMillis)
  return typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes)
}

const tooSlow = (deadlineMillis: number) => new RequestTimeout({ seconds: Math.round(deadlineMillis / 100) / 10 })

/**
 * The body parsed as a JSON object (`parseJsonObject`). Fails with
 * `PayloadTooLarge` (over `limitBytes`), `RequestTimeout` (not arrived within
 * the body deadline) or `InvalidRequest` (nested deeper than
 * `MAX_JSON_DEPTH`, not JSON, or not an object).
 *
 * @category http
 */
export const readJsonObject = (
  request: HttpServerRequest.HttpServerRequest,
  limitBytes: number
): Effect.Effect<Record<string, unknown>, PayloadTooLarge | InvalidRequest | RequestTimeout> =>
  Effect.gen(function* () {
    const declared = Number(headerOf(request, "content-length") ?? "NaN")
    if (Number.isFinite(declared) && declared > limitBytes) return yield* new PayloadTooLarge({ limitBytes })
    const source = request.source as Request
    const deadline = yield* BodyTimeout
    const text = yield* Effect.tryPromise({
      try: () => readLimited(source, limitBytes, Number.isSafeInteger(declared) && declared >= 0, deadline),
      catch: () => new InvalidRequest({ message: "The request body could not be read.", param: "" })
    })
    if (text === TIMED_OUT) return yield* tooSlow(deadline)
    if (text === "too-large") return yield* new PayloadTooLarge({ limitBytes })
    return yield* parseJsonObject(text)
  })

/** The message of a body refused for its nesting (`MAX_JSON_DEPTH`), the same on every route. */
const TOO_DEEP_MESSAGE =
  `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, the most the gateway reads.`

/**
 * A request body's text as a JSON object: its nesting checked before it is
 * parsed (`parseJsonWithin`). Fails with `InvalidRequest` (`param` empty):
 * deeper than `MAX_JSON_DEPTH` levels (`TOO_DEEP_MESSAGE`), not JSON, or not
 * an object.
 *
 * @category http
 */
export const parseJsonObject = (text: string): Effect.Effect<Record<string, unknown>, InvalidRequest> => {
  const parsed = parseJsonWithin(text)
  if (Result.isFailure(parsed)) {
    return Effect.fail(
      new InvalidRequest({
        message: parsed.failure === "too-deep" ? TOO_DEEP_MESSAGE : "The request body is not valid JSON.",
        param: ""
      })
    )
  }
  const value = parsed.success
  return typeof value !== "object" || value === null || Array.isArray(value)
    ? Effect.fail(new InvalidRequest({ message: "The request body must be a JSON object.", param: "" }))
    : Effect.succeed(value as Record<string, unknown>)
}

/**
 * The body parsed as `multipart/form-data` (the Fetch API's parser), read
 * within `limitBytes` and the body deadline. Fails with `PayloadTooLarge`,
 * `RequestTimeout`, or `InvalidRequest` when the content type is not multipart
 * or the form cannot be parsed.
 *
 * @category http
 */
export const readFormData = (
  request: HttpServerRequest.HttpServerRequest,
  limitBytes: number
): Effect.Effect<FormData, PayloadTooLarge | InvalidRequest | RequestTimeout> =>
  Effect.gen(function* () {
    const contentType = headerOf(request, "content-type") ?? ""
    if (!/^multipart\/form-data\s*;/i.test(contentType)) {
      return yield* new InvalidRequest({ message: "The request body must be multipart/form-data.", param: "" })
    }
    const declared = Number(headerOf(request, "content-length") ?? "NaN")
    if (Number.isFinite(declared) && declared > limitBytes) return yield* new PayloadTooLarge({ limitBytes })
    const unreadable = () => new InvalidRequest({ message: "The multipart body could not be read.", param: "" })
    const deadline = yield* BodyTimeout
    const bytes = yield* Effect.tryPromise({
      try: () => readBytesLimited(request.source as Request, limitBytes, deadline),
      catch: unreadable
    })
    if (bytes === "too-large") return yield* new PayloadTooLarge({ limitBytes })
    if (bytes === TIMED_OUT) return yield* tooSlow(deadline)
    return yield* Effect.tryPromise({
      try: () => new Response(bytes, { headers: { "content-type": contentType } }).formData(),
      catch: unreadable
    })
  })
