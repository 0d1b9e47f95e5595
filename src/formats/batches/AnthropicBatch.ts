/**
 * Anthropic's Message Batches on the wire (docs.anthropic.com/en/api/creating-message-batches; the
 * `@anthropic-ai/sdk` types in `resources/messages/batches.d.ts`): the create body `{requests: [{custom_id,
 * params}]}` checked before anything is stored, the `MessageBatch` object, the deleted-batch answer, and the
 * JSONL result lines `{custom_id, result}` with `result` `{type: "succeeded", message}`, `{type: "errored",
 * error: {type: "error", error: {type, message}, request_id}}`, `{type: "canceled"}` or `{type: "expired"}`.
 * Times are RFC 3339 strings.
 *
 * @since 0.4.0
 */
import { Result } from "effect"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"

/** The most requests one batch may hold (Anthropic's limit). @category constants */
export const MAX_BATCH_REQUESTS = 100_000

/** A `custom_id` as Anthropic takes it: 1 to 64 letters, digits, `_` or `-`. */
const CUSTOM_ID = /^[A-Za-z0-9_-]{1,64}$/

/** One request of a create body. @category models */
export interface MessageBatchRequest {
  readonly custom_id: string
  /** A Messages create body (without `stream`), checked when the line runs, as Anthropic does. */
  readonly params: Record<string, unknown>
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The requests of a create body, or the `InvalidRequest` naming the first bad field (`requests`,
 * `requests[i].custom_id`, `requests[i].params`, `requests[i].params.stream`). Each request's `params` is only
 * checked to be an object without `stream: true`: the rest is checked when its line runs, and a bad one ends as
 * an `errored` result, as Anthropic's batches do.
 *
 * @category decoding
 */
export const decodeMessageBatchCreate = (
  body: Record<string, unknown>
): Decoded<ReadonlyArray<MessageBatchRequest>> => {
  const fail = (message: string, param: string) => Result.fail(new InvalidRequest({ message, param }))
  const requests = body.requests
  if (!Array.isArray(requests)) return fail("requests: Field required (an array of {custom_id, params}).", "requests")
  if (requests.length === 0) return fail("requests: At least one request is required.", "requests")
  if (requests.length > MAX_BATCH_REQUESTS) {
    return fail(`requests: At most ${MAX_BATCH_REQUESTS} requests may be in one batch.`, "requests")
  }
  const seen = new Set<string>()
  const out: Array<MessageBatchRequest> = []
  for (let index = 0; index < requests.length; index++) {
    const request: unknown = requests[index]
    const at = `requests[${index}]`
    if (!isObject(request)) return fail(`${at}: Expected an object {custom_id, params}.`, at)
    const customId = request.custom_id
    if (typeof customId !== "string" || !CUSTOM_ID.test(customId)) {
      return fail(`${at}.custom_id: Expected 1 to 64 letters, digits, underscores or hyphens.`, `${at}.custom_id`)
    }
    if (seen.has(customId)) {
      return fail(`${at}.custom_id: Duplicate custom_id "${customId}"; each must be unique.`, `${at}.custom_id`)
    }
    seen.add(customId)
    const params = request.params
    if (!isObject(params)) return fail(`${at}.params: Expected a Messages create body.`, `${at}.params`)
    if (params.stream !== undefined && params.stream !== false) {
      return fail(`${at}.params.stream: Streaming is not supported in batches.`, `${at}.params.stream`)
    }
    out.push({ custom_id: customId, params })
  }
  return Result.succeed(out)
}

/** The `MessageBatch` object's fields (the SDK's `MessageBatch`). @category models */
export interface MessageBatchObject {
  readonly id: string
  readonly type: "message_batch"
  readonly processing_status: "in_progress" | "canceling" | "ended"
  readonly request_counts: {
    readonly processing: number
    readonly succeeded: number
    readonly errored: number
    readonly canceled: number
    readonly expired: number
  }
  readonly results_url: string | null
  readonly created_at: string
  readonly ended_at: string | null
  readonly expires_at: string
  readonly cancel_initiated_at: string | null
  readonly archived_at: string | null
}

/** What a `MessageBatch` is made from (the store's batch, in plain terms). @category models */
export interface MessageBatchFacts {
  readonly id: string
  /** Ended (every line finished), cancelling, or running. */
  readonly phase: "running" | "cancelling" | "ended"
  readonly counts: {
    readonly processing: number
    readonly succeeded: number
    readonly errored: number
    readonly canceled: number
    readonly expired: number
  }
  readonly createdAt: Date
  readonly endedAt: Date | null
  readonly expiresAt: Date
  readonly cancelInitiatedAt: Date | null
  readonly archivedAt: Date | null
  /** The gateway's origin as the caller reached it (`results_url` is absolute, as Anthropic's is). */
  readonly origin: string
}

const iso = (date: Date | null): string | null => date === null ? null : date.toISOString()

/**
 * The `MessageBatch` object of `facts`; `results_url` is set once it has ended.
 *
 * @category encoding
 */
export const encodeMessageBatch = (facts: MessageBatchFacts): MessageBatchObject => ({
  id: facts.id,
  type: "message_batch",
  processing_status: facts.phase === "running" ? "in_progress" : facts.phase === "cancelling" ? "canceling" : "ended",
  request_counts: { ...facts.counts },
  results_url: facts.phase === "ended" ? `${facts.origin}/v1/messages/batches/${facts.id}/results` : null,
  created_at: facts.createdAt.toISOString(),
  ended_at: iso(facts.endedAt),
  expires_at: facts.expiresAt.toISOString(),
  cancel_initiated_at: iso(facts.cancelInitiatedAt),
  archived_at: iso(facts.archivedAt)
})

/** Anthropic's error types by HTTP status (docs.anthropic.com/en/api/errors), for an error body that names none. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  503: "overloaded_error",
  529: "overloaded_error"
}

const errorTypeOf = (status: number | null): string =>
  (status === null ? undefined : ERROR_TYPES[status]) ?? "api_error"

/**
 * The error object of an error answer body: the Messages route's own (`{type, message, param, code}`, the code the
 * spec names, such as `insufficient_user_quota` or `budget_exceeded`) kept whole, or one made from OpenAI's envelope
 * (the gateway's own line errors), typed by HTTP status.
 */
const errorObjectOf = (body: unknown, status: number | null): Record<string, unknown> => {
  if (isObject(body) && isObject(body.error)) {
    const error = body.error
    const message = typeof error.message === "string" ? error.message : "The request failed."
    if (body.type === "error" && typeof error.type === "string") return { ...error, message }
    return { type: errorTypeOf(status), message, ...(typeof error.code === "string" ? { code: error.code } : {}) }
  }
  return { type: errorTypeOf(status), message: "The request failed." }
}

/** A finished line as the result encoder reads it. @category models */
export interface MessageBatchLine {
  readonly customId: string
  readonly state: "succeeded" | "errored" | "canceled" | "expired"
  readonly statusCode: number | null
  /** The line's answer body (JSON text), or `null`. */
  readonly result: string | null
  /** The line's request id (`<batch id>.<line index>`). */
  readonly requestId: string
}

/**
 * One JSONL line of a batch's results (with its newline).
 *
 * @category encoding
 */
export const encodeMessageBatchResult = (line: MessageBatchLine): string => {
  const parsed = (): unknown => {
    try {
      return line.result === null ? null : JSON.parse(line.result)
    } catch {
      return null
    }
  }
  const result = line.state === "succeeded" ? { type: "succeeded", message: parsed() } : line.state === "errored"
    ? {
      type: "errored",
      error: { type: "error", error: errorObjectOf(parsed(), line.statusCode), request_id: line.requestId }
    }
    : { type: line.state }
  return JSON.stringify({ custom_id: line.customId, result }) + "\n"
}
