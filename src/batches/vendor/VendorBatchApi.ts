/**
 * A client of the vendors' own batch APIs, as the gateway delegates a batch to a channel (`settings.vendor_batches`):
 *
 * - OpenAI (platform.openai.com/docs/api-reference/batch, /files): the input uploaded as a JSONL file
 *   (`POST /v1/files`, multipart `file` + `purpose: "batch"`), the batch created (`POST /v1/batches`), retrieved
 *   (`GET /v1/batches/{id}`), cancelled (`POST /v1/batches/{id}/cancel`), its output and error files read
 *   (`GET /v1/files/{id}/content`, lines `{custom_id, response: {status_code, body}, error}`).
 * - Anthropic (docs.anthropic.com/en/api/creating-message-batches): `POST /v1/messages/batches`
 *   (`requests: [{custom_id, params}]`), `GET /v1/messages/batches/{id}`, `POST …/{id}/cancel`, and the results
 *   (`GET …/{id}/results`, lines `{custom_id, result: {type, message | error}}`).
 *
 * URLs follow the channel's base URL rule (`Adapter.channelUrl`), headers its auth and extra headers as the
 * adapters send them (Bearer key for OpenAI; `x-api-key` and `anthropic-version` for Anthropic). Every line's model
 * is mapped before upload. Answers are bounded (`MAX_ANSWER_CHARS`); an error never carries the key.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { type Channel, channelUrl, withExtraHeaders } from "../../upstreams/Adapter.ts"
import { VendorBatchError } from "./VendorBatchError.ts"

/** The vendor batch APIs the gateway delegates to. @category models */
export type VendorApi = "openai" | "anthropic"

/** One line to submit: its `custom_id` and its request body (as the caller sent it; the model is mapped here). @category models */
export interface VendorLineInput {
  readonly customId: string
  readonly body: Readonly<Record<string, unknown>>
}

/**
 * A vendor batch as retrieved: `running` (in progress or validating), `cancelling`, or `ended` with how it ended
 * (`completed`, `cancelled`, `expired`, `failed`) and, for OpenAI, its output and error file ids.
 *
 * @category models
 */
export interface VendorBatchState {
  readonly phase: "running" | "cancelling" | "ended"
  readonly end: "completed" | "cancelled" | "expired" | "failed" | undefined
  readonly outputFileId: string | undefined
  readonly errorFileId: string | undefined
}

/**
 * One line's result as the gateway records it (`BatchSql.finishLine`): its state, HTTP status and answer (or error)
 * body as JSON text.
 *
 * @category models
 */
export interface VendorLineResult {
  readonly customId: string
  readonly state: "succeeded" | "errored" | "canceled" | "expired"
  readonly statusCode: number | null
  readonly result: string | null
}

/** A batch submitted: the vendor's batch id, and the input file's id (OpenAI; `undefined` for Anthropic). @category models */
export interface SubmittedBatch {
  readonly id: string
  readonly fileId: string | undefined
}

/** The longest answer of a vendor batch call kept, in UTF-16 code units (a results file past it fails the call). */
export const MAX_ANSWER_CHARS = 256 * 1024 * 1024

const OPENAI_FILE_PREFIX = "file-"

const headersOf = (api: VendorApi, channel: Channel, key: string, json: boolean): Record<string, string> =>
  withExtraHeaders(channel, {
    ...(json ? { "content-type": "application/json" } : {}),
    ...(api === "openai" ? { authorization: `Bearer ${key}` } : { "x-api-key": key, "anthropic-version": "2023-06-01" })
  })

/** Calls `path` on the channel and reads the answer text; an error status or no answer fails, without the key. */
const call = (
  api: VendorApi,
  channel: Channel,
  key: string,
  method: "GET" | "POST",
  path: string,
  body?: string | FormData
): Effect.Effect<string, VendorBatchError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(channelUrl(channel, path), {
        method,
        headers: headersOf(api, channel, key, typeof body === "string"),
        body,
        signal
      })
      const text = await response.text()
      if (text.length > MAX_ANSWER_CHARS) throw new VendorBatchError({ status: 0, detail: "The answer is too large." })
      if (!response.ok) {
        throw new VendorBatchError({ status: response.status, detail: text.slice(0, 500).replaceAll(key, "[key]") })
      }
      return text
    },
    catch: (cause) =>
      cause instanceof VendorBatchError
        ? cause
        : new VendorBatchError({ status: 0, detail: "The vendor's batch API could not be reached." })
  })

const parseObject = (text: string): Effect.Effect<Record<string, unknown>, VendorBatchError> =>
  Effect.try({
    try: () => {
      const value: unknown = JSON.parse(text)
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object")
      return value as Record<string, unknown>
    },
    catch: () => new VendorBatchError({ status: 0, detail: "The vendor's answer is not a JSON object." })
  })

const stringField = (object: Record<string, unknown>, name: string): string | undefined =>
  typeof object[name] === "string" ? object[name] : undefined

/** The JSON objects of a JSONL text; a line that is not one is skipped. */
const jsonLines = (text: string): ReadonlyArray<Record<string, unknown>> =>
  text.split("\n").flatMap((line) => {
    if (line.trim() === "") return []
    try {
      const value: unknown = JSON.parse(line)
      return typeof value === "object" && value !== null && !Array.isArray(value)
        ? [value as Record<string, unknown>]
        : []
    } catch {
      return []
    }
  })

/**
 * Submits `lines` as one batch of `api` to `channel` with `key`, each line's `model` replaced by `mapModel(model)`;
 * OpenAI lines target `endpoint` (`/v1/chat/completions`, …). Returns the vendor's batch id and, for OpenAI, the
 * id of the input file uploaded.
 *
 * @category vendor
 */
export const submitVendorBatch = (
  api: VendorApi,
  channel: Channel,
  key: string,
  endpoint: string,
  lines: ReadonlyArray<VendorLineInput>,
  mapModel: (model: string) => string
): Effect.Effect<SubmittedBatch, VendorBatchError> =>
  Effect.gen(function* () {
    const mapped = lines.map((line) => ({
      customId: line.customId,
      body: typeof line.body.model === "string" ? { ...line.body, model: mapModel(line.body.model) } : line.body
    }))
    if (api === "anthropic") {
      const created = yield* call(
        api,
        channel,
        key,
        "POST",
        "/v1/messages/batches",
        JSON.stringify({ requests: mapped.map((line) => ({ custom_id: line.customId, params: line.body })) })
      ).pipe(Effect.flatMap(parseObject))
      const id = stringField(created, "id")
      if (id === undefined) return yield* new VendorBatchError({ status: 0, detail: "The batch has no id." })
      return { id, fileId: undefined }
    }
    const jsonl = mapped.map((line) =>
      JSON.stringify({ custom_id: line.customId, method: "POST", url: endpoint, body: line.body })
    ).join("\n") + "\n"
    const form = new FormData()
    form.set("purpose", "batch")
    form.set("file", new File([jsonl], "batch.jsonl", { type: "application/jsonl" }))
    const file = yield* call(api, channel, key, "POST", "/v1/files", form).pipe(Effect.flatMap(parseObject))
    const fileId = stringField(file, "id")
    if (fileId === undefined || !fileId.startsWith(OPENAI_FILE_PREFIX)) {
      return yield* new VendorBatchError({ status: 0, detail: "The uploaded file has no id." })
    }
    const created = yield* call(
      api,
      channel,
      key,
      "POST",
      "/v1/batches",
      JSON.stringify({ input_file_id: fileId, endpoint, completion_window: "24h" })
    ).pipe(Effect.flatMap(parseObject))
    const id = stringField(created, "id")
    if (id === undefined) return yield* new VendorBatchError({ status: 0, detail: "The batch has no id." })
    return { id, fileId }
  })

const batchPath = (api: VendorApi, id: string): string =>
  `${api === "openai" ? "/v1/batches" : "/v1/messages/batches"}/${encodeURIComponent(id)}`

/** The state of an OpenAI Batch object or an Anthropic MessageBatch object. */
const stateOf = (api: VendorApi, batch: Record<string, unknown>): VendorBatchState => {
  const none = { outputFileId: undefined, errorFileId: undefined }
  if (api === "anthropic") {
    const status = stringField(batch, "processing_status")
    return status === "ended"
      ? {
        phase: "ended",
        end: stringField(batch, "cancel_initiated_at") === undefined ? "completed" : "cancelled",
        ...none
      }
      : { phase: status === "canceling" ? "cancelling" : "running", end: undefined, ...none }
  }
  const status = stringField(batch, "status")
  const files = { outputFileId: stringField(batch, "output_file_id"), errorFileId: stringField(batch, "error_file_id") }
  switch (status) {
    case "completed":
    case "cancelled":
    case "expired":
    case "failed":
      return { phase: "ended", end: status, ...files }
    case "cancelling":
      return { phase: "cancelling", end: undefined, ...files }
    default:
      return { phase: "running", end: undefined, ...files }
  }
}

/**
 * Retrieves the vendor batch `id` (OpenAI's and the emulator's retrieve is also what advances it).
 *
 * @category vendor
 */
export const retrieveVendorBatch = (
  api: VendorApi,
  channel: Channel,
  key: string,
  id: string
): Effect.Effect<VendorBatchState, VendorBatchError> =>
  call(api, channel, key, "GET", batchPath(api, id)).pipe(
    Effect.flatMap(parseObject),
    Effect.map((batch) => stateOf(api, batch))
  )

/**
 * Asks the vendor to cancel batch `id` (its finished lines stay; the rest end `canceled`).
 *
 * @category vendor
 */
export const cancelVendorBatch = (
  api: VendorApi,
  channel: Channel,
  key: string,
  id: string
): Effect.Effect<void, VendorBatchError> =>
  Effect.asVoid(call(api, channel, key, "POST", `${batchPath(api, id)}/cancel`))

const errorText = (type: string, code: string, message: string): string =>
  JSON.stringify({ error: { message, type, param: null, code } })

/** An Anthropic error type's HTTP status (docs.anthropic.com/en/api/errors). */
const anthropicStatus = (type: string | undefined): number => {
  switch (type) {
    case "invalid_request_error":
      return 400
    case "authentication_error":
      return 401
    case "permission_error":
      return 403
    case "not_found_error":
      return 404
    case "request_too_large":
      return 413
    case "rate_limit_error":
      return 429
    case "overloaded_error":
      return 529
    default:
      return 500
  }
}

/** One OpenAI output or error file line as the gateway records it. */
const openAiLine = (line: Record<string, unknown>): VendorLineResult | undefined => {
  const customId = stringField(line, "custom_id")
  if (customId === undefined) return undefined
  const response = line.response
  if (typeof response === "object" && response !== null) {
    const status = (response as Record<string, unknown>).status_code
    const statusCode = typeof status === "number" && Number.isSafeInteger(status) ? status : 500
    return {
      customId,
      state: statusCode < 300 ? "succeeded" : "errored",
      statusCode,
      result: JSON.stringify((response as Record<string, unknown>).body ?? null)
    }
  }
  const error = typeof line.error === "object" && line.error !== null ? line.error as Record<string, unknown> : {}
  return {
    customId,
    state: "errored",
    statusCode: 500,
    result: errorText(
      "api_error",
      stringField(error, "code") ?? "batch_line_failed",
      stringField(error, "message") ?? "The vendor failed this line."
    )
  }
}

/** One Anthropic results line as the gateway records it. */
const anthropicLine = (line: Record<string, unknown>): VendorLineResult | undefined => {
  const customId = stringField(line, "custom_id")
  const result = typeof line.result === "object" && line.result !== null
    ? line.result as Record<string, unknown>
    : undefined
  if (customId === undefined || result === undefined) return undefined
  switch (result.type) {
    case "succeeded":
      return { customId, state: "succeeded", statusCode: 200, result: JSON.stringify(result.message ?? null) }
    case "canceled":
      return { customId, state: "canceled", statusCode: null, result: null }
    case "expired":
      return { customId, state: "expired", statusCode: null, result: null }
    default: {
      const outer = typeof result.error === "object" && result.error !== null
        ? result.error as Record<string, unknown>
        : {}
      const inner = typeof outer.error === "object" && outer.error !== null
        ? outer.error as Record<string, unknown>
        : outer
      const type = stringField(inner, "type")
      return {
        customId,
        state: "errored",
        statusCode: anthropicStatus(type),
        result: errorText(
          type ?? "api_error",
          type ?? "api_error",
          stringField(inner, "message") ?? "The vendor failed this line."
        )
      }
    }
  }
}

/**
 * The results of the ended vendor batch `id` (`state` as `retrieveVendorBatch` gave it), one per line the vendor
 * reported, by `custom_id`. A line the vendor left out (an OpenAI batch cancelled or expired before running it) is
 * absent: the caller ends it `canceled` or `expired`.
 *
 * @category vendor
 */
export const vendorBatchResults = (
  api: VendorApi,
  channel: Channel,
  key: string,
  id: string,
  state: VendorBatchState
): Effect.Effect<ReadonlyArray<VendorLineResult>, VendorBatchError> =>
  Effect.gen(function* () {
    if (api === "anthropic") {
      const text = yield* call(api, channel, key, "GET", `${batchPath(api, id)}/results`)
      return jsonLines(text).flatMap((line) => anthropicLine(line) ?? [])
    }
    const results: Array<VendorLineResult> = []
    for (const fileId of [state.outputFileId, state.errorFileId]) {
      if (fileId === undefined) continue
      const text = yield* call(api, channel, key, "GET", `/v1/files/${encodeURIComponent(fileId)}/content`)
      for (const line of jsonLines(text)) {
        const result = openAiLine(line)
        if (result !== undefined) results.push(result)
      }
    }
    return results
  })
