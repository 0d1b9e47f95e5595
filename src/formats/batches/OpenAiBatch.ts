/**
 * OpenAI's Batch API on the wire (platform.openai.com/docs/api-reference/batch; the `openai` 7.57.0 types in
 * `resources/batches.d.ts`): the create body `{input_file_id, endpoint, completion_window: "24h", metadata}`, the
 * input file's lines `{custom_id, method: "POST", url, body}` validated before anything runs (the `errors.data`
 * entries `{code, message, param, line}` OpenAI reports, `line` counted from 1), the `Batch` object (times in epoch
 * seconds, `null` until they happen), and the output and error files' lines `{id, custom_id, response:
 * {status_code, request_id, body}, error}`.
 *
 * @since 0.4.0
 */
import { Result } from "effect"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"

/** The endpoints a batch's lines may target. @category constants */
export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions"] as const

/** A batch endpoint. @category models */
export type BatchEndpoint = typeof BATCH_ENDPOINTS[number]

/** The most lines one batch's input may hold (OpenAI's limit). @category constants */
export const MAX_BATCH_LINES = 50_000

/** The most validation errors one failed batch reports. @category constants */
export const MAX_REPORTED_ERRORS = 100

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A create body, decoded. @category models */
export interface BatchCreate {
  readonly inputFileId: string
  readonly endpoint: BatchEndpoint
  readonly metadata: Record<string, string> | null
}

/**
 * The create body, or the `InvalidRequest` naming its first bad field (`input_file_id`, `endpoint`,
 * `completion_window`, `metadata`). `metadata` takes at most 16 string pairs, keys of at most 64 characters and
 * values of at most 512, as OpenAI's does.
 *
 * @category decoding
 */
export const decodeBatchCreate = (
  body: Record<string, unknown>
): Decoded<BatchCreate> => {
  const fail = (message: string, param: string) => Result.fail(new InvalidRequest({ message, param }))
  const inputFileId = body.input_file_id
  if (typeof inputFileId !== "string" || inputFileId === "") {
    return fail("input_file_id is required: the id of a file uploaded with purpose batch.", "input_file_id")
  }
  const endpoint = body.endpoint
  if (typeof endpoint !== "string" || !(BATCH_ENDPOINTS as ReadonlyArray<string>).includes(endpoint)) {
    return fail(`endpoint must be one of ${BATCH_ENDPOINTS.join(", ")}.`, "endpoint")
  }
  if (body.completion_window !== "24h") return fail('completion_window must be "24h".', "completion_window")
  const metadata = body.metadata
  if (metadata !== undefined && metadata !== null) {
    if (!isObject(metadata)) return fail("metadata must be an object of string values.", "metadata")
    const entries = Object.entries(metadata)
    if (entries.length > 16) return fail("metadata takes at most 16 keys.", "metadata")
    for (const [key, value] of entries) {
      if (key.length > 64 || typeof value !== "string" || value.length > 512) {
        return fail("metadata keys are at most 64 characters and values strings of at most 512.", "metadata")
      }
    }
  }
  return Result.succeed({
    inputFileId,
    endpoint: endpoint as BatchEndpoint,
    metadata: metadata === undefined || metadata === null ? null : metadata as Record<string, string>
  })
}

/** One validation error of an input file. @category models */
export interface BatchLineError {
  readonly code: string
  readonly message: string
  readonly param: string | null
  /** The line, counted from 1. */
  readonly line: number | null
}

/** A valid input line. @category models */
export interface BatchInputLine {
  readonly custom_id: string
  readonly body: Record<string, unknown>
}

/**
 * Validates an input file's `lines` (its text split at line breaks; blank lines are skipped) for `endpoint`:
 * each a JSON object `{custom_id, method: "POST", url, body}`, `custom_id` a non-empty string unique in the file,
 * `url` equal to `endpoint`, `body` an object whose `model` is one of `models` (the key's) and that does not
 * stream. The valid lines, or the first `MAX_REPORTED_ERRORS` errors.
 *
 * @category decoding
 */
export const validateBatchInput = (
  lines: ReadonlyArray<string>,
  endpoint: BatchEndpoint,
  models: ReadonlySet<string>
): Result.Result<ReadonlyArray<BatchInputLine>, ReadonlyArray<BatchLineError>> => {
  const errors: Array<BatchLineError> = []
  const valid: Array<BatchInputLine> = []
  const seen = new Set<string>()
  const report = (line: number, code: string, message: string, param: string | null) => {
    if (errors.length < MAX_REPORTED_ERRORS) errors.push({ code, message, param, line })
  }
  let count = 0
  lines.forEach((text, index) => {
    const line = index + 1
    if (text.trim() === "") return
    count++
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return report(line, "invalid_json_line", `Line ${line} is not valid JSON.`, null)
    }
    if (!isObject(parsed)) return report(line, "invalid_json_line", `Line ${line} is not a JSON object.`, null)
    const customId = parsed.custom_id
    if (typeof customId !== "string" || customId === "" || customId.length > 512) {
      return report(
        line,
        "missing_required_parameter",
        "custom_id must be a string of 1 to 512 characters.",
        "custom_id"
      )
    }
    if (seen.has(customId)) {
      return report(
        line,
        "duplicate_custom_id",
        "The custom_id for this request is a duplicate of another request.",
        "custom_id"
      )
    }
    seen.add(customId)
    if (parsed.method !== "POST") return report(line, "invalid_method", 'method must be "POST".', "method")
    if (parsed.url !== endpoint) {
      return report(line, "mismatched_endpoint", `url must be the batch's endpoint, ${endpoint}.`, "url")
    }
    const body = parsed.body
    if (!isObject(body)) return report(line, "missing_required_parameter", "body must be a JSON object.", "body")
    if (typeof body.model !== "string" || !models.has(body.model)) {
      return report(
        line,
        "model_not_found",
        `The model ${JSON.stringify(String(body.model).slice(0, 100))} is not available for this key.`,
        "body.model"
      )
    }
    if (body.stream !== undefined && body.stream !== false) {
      return report(line, "invalid_request", "Streaming is not supported in batches.", "body.stream")
    }
    valid.push({ custom_id: customId, body })
  })
  if (count === 0) {
    errors.push({ code: "empty_file", message: "The input file has no requests.", param: null, line: null })
  }
  if (count > MAX_BATCH_LINES) {
    errors.unshift({
      code: "too_many_requests",
      message: `A batch may hold at most ${MAX_BATCH_LINES} requests.`,
      param: null,
      line: null
    })
  }
  return errors.length > 0 ? Result.fail(errors) : Result.succeed(valid)
}

/** What a `Batch` object is made from. Times in epoch milliseconds (`null`: not yet). @category models */
export interface BatchFacts {
  readonly id: string
  readonly status:
    | "validating"
    | "failed"
    | "in_progress"
    | "finalizing"
    | "completed"
    | "expired"
    | "cancelling"
    | "cancelled"
  readonly endpoint: string
  readonly inputFileId: string
  readonly outputFileId: string | null
  readonly errorFileId: string | null
  readonly errors: ReadonlyArray<BatchLineError> | null
  readonly metadata: Record<string, string> | null
  readonly counts: { readonly total: number; readonly completed: number; readonly failed: number }
  readonly createdAt: number
  readonly inProgressAt: number | null
  readonly expiresAt: number
  readonly finalizingAt: number | null
  readonly completedAt: number | null
  readonly failedAt: number | null
  readonly expiredAt: number | null
  readonly cancellingAt: number | null
  readonly cancelledAt: number | null
}

const seconds = (millis: number | null): number | null => millis === null ? null : Math.floor(millis / 1000)

/**
 * The `Batch` object of `facts`.
 *
 * @category encoding
 */
export const encodeBatch = (facts: BatchFacts) => ({
  id: facts.id,
  object: "batch" as const,
  endpoint: facts.endpoint,
  errors: facts.errors === null ? null : { object: "list", data: facts.errors },
  input_file_id: facts.inputFileId,
  completion_window: "24h",
  status: facts.status,
  output_file_id: facts.outputFileId,
  error_file_id: facts.errorFileId,
  created_at: seconds(facts.createdAt),
  in_progress_at: seconds(facts.inProgressAt),
  expires_at: seconds(facts.expiresAt),
  finalizing_at: seconds(facts.finalizingAt),
  completed_at: seconds(facts.completedAt),
  failed_at: seconds(facts.failedAt),
  expired_at: seconds(facts.expiredAt),
  cancelling_at: seconds(facts.cancellingAt),
  cancelled_at: seconds(facts.cancelledAt),
  request_counts: { ...facts.counts },
  metadata: facts.metadata
})

/** A finished line as the output encoder reads it. @category models */
export interface BatchOutputLine {
  readonly customId: string
  readonly state: "succeeded" | "errored" | "canceled" | "expired"
  readonly statusCode: number | null
  readonly result: string | null
  /** The line's request id (`<batch id>.<line index>`). */
  readonly requestId: string
}

/**
 * A line of the output file (a line that succeeded) or of the error file (the rest), without its line break:
 * `{id: "batch_req_…", custom_id, response: {status_code, request_id, body} | null, error: {code, message} |
 * null}`. A line that was answered (2xx or an error status) has its `response`; one that never ran (cancelled,
 * expired) has `response: null` and `error` `batch_cancelled` / `batch_expired`.
 *
 * @category encoding
 */
export const encodeBatchOutputLine = (line: BatchOutputLine): string => {
  const id = `batch_req_${line.requestId.replace(/[^A-Za-z0-9]/g, "").slice(-32)}`
  if (line.state === "canceled" || line.state === "expired") {
    return JSON.stringify({
      id,
      custom_id: line.customId,
      response: null,
      error: line.state === "canceled"
        ? { code: "batch_cancelled", message: "This request was not run: the batch was cancelled." }
        : { code: "batch_expired", message: "This request was not run before the batch expired." }
    })
  }
  let body: unknown = null
  try {
    body = line.result === null ? null : JSON.parse(line.result)
  } catch {
    body = null
  }
  return JSON.stringify({
    id,
    custom_id: line.customId,
    response: { status_code: line.statusCode ?? 500, request_id: line.requestId, body },
    error: null
  })
}
