/**
 * The emulator's batch APIs, so the gateway's delegation of a batch to a vendor is tested against the vendors' wire
 * formats:
 *
 * - OpenAI's Files API (platform.openai.com/docs/api-reference/files; shapes as the `openai` SDK's
 *   `resources/files` types them): `POST /v1/files` (multipart `file` + `purpose`), `GET /v1/files`,
 *   `GET /v1/files/{id}`, `GET /v1/files/{id}/content` (the bytes), `DELETE /v1/files/{id}`. Files belong to the key
 *   that uploaded them: another key's id answers 404.
 * - OpenAI's Batch API (platform.openai.com/docs/api-reference/batch; the SDK's `resources/batches`):
 *   `POST /v1/batches` (`input_file_id`, `endpoint`, `completion_window: "24h"`, `metadata`), `GET /v1/batches`,
 *   `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`. A batch is created `validating`; its first retrieve
 *   validates the input (each line `{custom_id, method: "POST", url, body}`, `custom_id` unique, `url` equal to
 *   `endpoint`) and fails it with `errors.data[]` naming the line, or starts it `in_progress`. Output and error files
 *   are JSONL lines `{id, custom_id, response: {status_code, request_id, body}, error: null}` in input order, answers
 *   with status 200 in the output file and the rest in the error file, as OpenAI writes them.
 * - Anthropic's Message Batches (docs.anthropic.com/en/api/creating-message-batches; the SDK's
 *   `resources/messages/batches`): `POST /v1/messages/batches` (`requests: [{custom_id, params}]`),
 *   `GET /v1/messages/batches`, `GET /v1/messages/batches/{id}`, `POST /v1/messages/batches/{id}/cancel`,
 *   `GET /v1/messages/batches/{id}/results` (JSONL `{custom_id, result: {type: succeeded, message} |
 *   {type: errored, error} | {type: canceled}}`, in request order), `results_url` absolute once `ended`.
 *
 * Each line is answered by the emulator's own route for its URL (`run`, the emulator's request handler), so its
 * answer and usage are the emulator's and recorded in `requests` like any other call, with the batch's key and the
 * header `x-emulator-batch: <batch id>`. Nothing runs in the background: every retrieve of an unfinished batch
 * advances it one step, running the next `1 / polls` of its lines, so a batch is in progress for `polls` retrieves
 * (`EmulatorOptions.batchPolls`, default 2) and ends on the last. A cancel marks it `cancelling` / `canceling`; the
 * next retrieve ends it `cancelled` / `ended` with the lines that ran kept and the rest not run (OpenAI: absent from
 * the files; Anthropic: `canceled`).
 *
 * Bounds: a file at most `MAX_BATCH_FILE_BYTES`, all files of the emulator at most `MAX_STORED_BYTES` (the oldest
 * are not evicted: an upload past it is refused), a batch at most `MAX_BATCH_LINES` lines.
 *
 * @since 0.1.0
 */
import { vendorErrorBody } from "./Faults.ts"
import { type Ids, isObject, type JsonObject } from "./Wire.ts"

/** The largest file the emulator's Files API takes, in bytes. @category constants */
export const MAX_BATCH_FILE_BYTES = 32 * 1024 * 1024

/** The most bytes the emulator keeps in files in all. @category constants */
export const MAX_STORED_BYTES = 256 * 1024 * 1024

/** The most lines (OpenAI) or requests (Anthropic) of one batch. @category constants */
export const MAX_BATCH_LINES = 50_000

/** The endpoints an OpenAI batch may target. @category constants */
export const OPENAI_BATCH_ENDPOINTS: ReadonlyArray<string> = [
  "/v1/chat/completions",
  "/v1/responses",
  "/v1/embeddings",
  "/v1/completions"
]

const FILE_PURPOSES = new Set(["assistants", "batch", "fine-tune", "vision", "user_data", "evals"])

/** One stored file. Times are epoch seconds. @category models */
export interface StoredFile {
  readonly id: string
  readonly key: string
  readonly filename: string
  readonly purpose: string
  readonly bytes: Uint8Array<ArrayBuffer>
  readonly createdAt: number
}

/** One line's outcome: the route's status, request id and JSON body. */
interface LineAnswer {
  readonly status: number
  readonly requestId: string
  readonly body: unknown
}

/** One line of a batch as the emulator runs it. */
interface BatchLine {
  readonly customId: string
  readonly body: JsonObject
  answer?: LineAnswer | undefined
}

/** One batch, of either vendor. Times are epoch seconds. */
interface StoredBatch {
  readonly id: string
  readonly vendor: "openai" | "anthropic"
  readonly key: string
  readonly createdAt: number
  /** OpenAI: the target endpoint; Anthropic: `/v1/messages`. */
  readonly endpoint: string
  readonly inputFileId: string | null
  readonly metadata: unknown
  readonly completionWindow: string
  status: "validating" | "failed" | "in_progress" | "cancelling" | "cancelled" | "completed"
  lines: ReadonlyArray<BatchLine>
  steps: number
  errors: ReadonlyArray<JsonObject> | undefined
  inProgressAt?: number | undefined
  cancellingAt?: number | undefined
  endedAt?: number | undefined
  outputFileId?: string | undefined
  errorFileId?: string | undefined
  /** Serializes the steps of concurrent retrieves. */
  advancing: Promise<void>
}

/** What the batch routes need from the emulator. @category models */
export interface BatchHost {
  readonly ids: Ids
  /** The emulator's base URL (for Anthropic's `results_url`). */
  readonly baseUrl: () => string
  /** Runs one request through the emulator's own handler (recorded, faults applied). */
  readonly run: (request: Request) => Promise<Response>
  /** Retrieves an unfinished batch answers in progress for (at least 1). */
  readonly polls: number
}

/** The emulator's files and batches, and the routes serving them. @category models */
export interface BatchStore {
  /** Whether `method path` is one of the batch or file routes (and its vendor). */
  readonly vendorOf: (method: string, path: string) => "openai" | "anthropic" | undefined
  /** Serves a batch or file route for the (already checked) `key`. */
  readonly serve: (request: Request, path: string, key: string) => Promise<Response>
  /** Forgets every file and batch. */
  readonly clear: () => void
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })

const openAiError = (status: number, message: string, param?: string): Response =>
  json(vendorErrorBody("openai", status, message, param), status)

const anthropicError = (status: number, message: string): Response =>
  json(vendorErrorBody("anthropic", status, message), status)

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString()

const now = (): number => Math.floor(Date.now() / 1000)

const clip = (text: string): string => text.slice(0, 200)

const filesPath = /^\/v1\/files(?:\/([^/]+)(\/content)?)?$/
const openAiBatchPath = /^\/v1\/batches(?:\/([^/]+)(\/cancel)?)?$/
const anthropicBatchPath = /^\/v1\/messages\/batches(?:\/([^/]+)(\/cancel|\/results)?)?$/

const DAY = 24 * 3600

/**
 * Makes an empty store of files and batches whose lines run through `host.run`.
 *
 * @category constructors
 */
export const makeBatchStore = (host: BatchHost): BatchStore => {
  const files = new Map<string, StoredFile>()
  const batches = new Map<string, StoredBatch>()
  let storedBytes = 0
  const polls = Math.max(1, Math.floor(host.polls))

  const saveFile = (key: string, filename: string, purpose: string, bytes: Uint8Array<ArrayBuffer>): StoredFile => {
    const file = { id: host.ids.next("file-"), key, filename, purpose, bytes, createdAt: now() }
    files.set(file.id, file)
    storedBytes += bytes.length
    return file
  }

  const fileObject = (file: StoredFile): JsonObject => ({
    id: file.id,
    object: "file",
    bytes: file.bytes.length,
    created_at: file.createdAt,
    expires_at: null,
    filename: file.filename,
    purpose: file.purpose,
    status: "processed",
    status_details: null
  })

  const ownFile = (id: string, key: string): StoredFile | undefined => {
    const file = files.get(id)
    return file !== undefined && file.key === key ? file : undefined
  }

  const ownBatch = (id: string, key: string, vendor: StoredBatch["vendor"]): StoredBatch | undefined => {
    const batch = batches.get(id)
    return batch !== undefined && batch.key === key && batch.vendor === vendor ? batch : undefined
  }

  /** Runs one line through the emulator's route for `batch.endpoint`. */
  const runLine = async (batch: StoredBatch, line: BatchLine): Promise<LineAnswer> => {
    if (line.body.stream === true) {
      return {
        status: 400,
        requestId: host.ids.next("req_"),
        body: vendorErrorBody(batch.vendor, 400, "Streaming is not supported in batches.", "stream")
      }
    }
    const headers: Record<string, string> = { "content-type": "application/json", "x-emulator-batch": batch.id }
    if (batch.vendor === "openai") headers.authorization = `Bearer ${batch.key}`
    else {
      headers["x-api-key"] = batch.key
      headers["anthropic-version"] = "2023-06-01"
    }
    const response = await host.run(
      new Request(new URL(batch.endpoint, host.baseUrl()), {
        method: "POST",
        headers,
        body: JSON.stringify(line.body)
      })
    )
    const text = await response.text()
    const requestId = response.headers.get("x-request-id") ?? response.headers.get("request-id") ??
      host.ids.next("req_")
    try {
      return { status: response.status, requestId, body: JSON.parse(text) }
    } catch {
      return {
        status: 500,
        requestId,
        body: vendorErrorBody(batch.vendor, 500, "The model's answer could not be read.")
      }
    }
  }

  /** OpenAI: validates the input file's lines; the lines, or the errors naming them. */
  const validateOpenAi = (batch: StoredBatch): ReadonlyArray<BatchLine> | ReadonlyArray<JsonObject> => {
    const file = batch.inputFileId === null ? undefined : files.get(batch.inputFileId)
    if (file === undefined) return [{ code: "invalid_file", message: "The input file was deleted.", line: null }]
    const texts = new TextDecoder().decode(file.bytes).split("\n").filter((text) => text.trim().length > 0)
    const errors: Array<JsonObject> = []
    const lines: Array<BatchLine> = []
    const seen = new Set<string>()
    const error = (code: string, message: string, param: string | null, line: number) =>
      errors.length < 1000 && errors.push({ code, message, param, line })
    if (texts.length === 0) error("empty_file", "The input file has no lines.", null, 1)
    if (texts.length > MAX_BATCH_LINES) {
      error("too_many_requests", `A batch holds at most ${MAX_BATCH_LINES} requests.`, null, MAX_BATCH_LINES + 1)
    }
    texts.slice(0, MAX_BATCH_LINES).forEach((text, index) => {
      const number = index + 1
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return error("invalid_json_line", "This line is not parseable as valid JSON.", null, number)
      }
      if (!isObject(parsed)) return error("invalid_json_line", "This line is not a JSON object.", null, number)
      const customId = parsed.custom_id
      if (typeof customId !== "string" || customId.length === 0) {
        return error("missing_required_parameter", "Missing required parameter: 'custom_id'.", "custom_id", number)
      }
      if (seen.has(customId)) {
        return error(
          "duplicate_custom_id",
          `The custom_id '${clip(customId)}' is used more than once; each must be unique.`,
          "custom_id",
          number
        )
      }
      seen.add(customId)
      if (parsed.method !== "POST") {
        return error("invalid_value", "Invalid 'method': only POST is supported.", "method", number)
      }
      if (parsed.url !== batch.endpoint) {
        return error(
          "mismatched_endpoint",
          `The url '${clip(String(parsed.url))}' does not match the batch's endpoint '${batch.endpoint}'.`,
          "url",
          number
        )
      }
      if (!isObject(parsed.body)) {
        return error("missing_required_parameter", "Missing required parameter: 'body'.", "body", number)
      }
      lines.push({ customId, body: parsed.body })
    })
    return errors.length > 0 ? errors : lines
  }

  const outputLine = (line: BatchLine): string =>
    JSON.stringify({
      id: host.ids.next("batch_req_"),
      custom_id: line.customId,
      response: line.answer === undefined
        ? null
        : { status_code: line.answer.status, request_id: line.answer.requestId, body: line.answer.body },
      error: null
    })

  /** OpenAI: writes the output and error files of a batch that ended. */
  const writeOpenAiFiles = (batch: StoredBatch) => {
    const done = batch.lines.filter((line) => line.answer !== undefined)
    const good = done.filter((line) => line.answer?.status === 200)
    const bad = done.filter((line) => line.answer?.status !== 200)
    const write = (lines: ReadonlyArray<BatchLine>, name: string) =>
      lines.length === 0 ? undefined : saveFile(
        batch.key,
        `${batch.id}_${name}.jsonl`,
        `batch_${name}`,
        new TextEncoder().encode(lines.map(outputLine).join("\n") + "\n")
      ).id
    batch.outputFileId = write(good, "output")
    batch.errorFileId = write(bad, "error")
  }

  /** One step of an unfinished batch: validation, the next share of its lines, or the end of a cancel. */
  const step = async (batch: StoredBatch): Promise<void> => {
    if (batch.status === "validating") {
      const checked = validateOpenAi(batch)
      const valid = checked.every((item): item is BatchLine => "customId" in item)
      if (!valid) {
        batch.status = "failed"
        batch.errors = checked as ReadonlyArray<JsonObject>
        batch.endedAt = now()
        return
      }
      batch.lines = checked
      batch.status = "in_progress"
      batch.inProgressAt = now()
    }
    if (batch.status === "cancelling") {
      batch.status = "cancelled"
      batch.endedAt = now()
      if (batch.vendor === "openai") writeOpenAiFiles(batch)
      return
    }
    if (batch.status !== "in_progress") return
    batch.steps++
    const until = Math.ceil(batch.lines.length * batch.steps / polls)
    for (const line of batch.lines.slice(0, until)) {
      if (line.answer === undefined) line.answer = await runLine(batch, line)
    }
    if (batch.steps >= polls) {
      batch.status = "completed"
      batch.endedAt = now()
      if (batch.vendor === "openai") writeOpenAiFiles(batch)
    }
  }

  const advance = (batch: StoredBatch): Promise<void> => {
    batch.advancing = batch.advancing.then(() => step(batch)).catch(() => undefined)
    return batch.advancing
  }

  const openAiBatchObject = (batch: StoredBatch): JsonObject => {
    const done = batch.lines.filter((line) => line.answer !== undefined)
    const failed = done.filter((line) => line.answer?.status !== 200).length
    const ended = batch.endedAt ?? null
    return {
      id: batch.id,
      object: "batch",
      endpoint: batch.endpoint,
      errors: batch.errors === undefined ? null : { object: "list", data: batch.errors },
      input_file_id: batch.inputFileId,
      completion_window: batch.completionWindow,
      status: batch.status,
      output_file_id: batch.outputFileId ?? null,
      error_file_id: batch.errorFileId ?? null,
      created_at: batch.createdAt,
      in_progress_at: batch.inProgressAt ?? null,
      expires_at: batch.createdAt + DAY,
      finalizing_at: batch.status === "completed" ? ended : null,
      completed_at: batch.status === "completed" ? ended : null,
      failed_at: batch.status === "failed" ? ended : null,
      expired_at: null,
      cancelling_at: batch.cancellingAt ?? null,
      cancelled_at: batch.status === "cancelled" ? ended : null,
      request_counts: { total: batch.lines.length, completed: done.length - failed, failed },
      metadata: batch.metadata ?? null
    }
  }

  const anthropicBatchObject = (batch: StoredBatch): JsonObject => {
    const ended = batch.status === "completed" || batch.status === "cancelled"
    const done = batch.lines.filter((line) => line.answer !== undefined)
    const succeeded = done.filter((line) => line.answer?.status === 200).length
    return {
      id: batch.id,
      type: "message_batch",
      processing_status: ended ? "ended" : batch.status === "cancelling" ? "canceling" : "in_progress",
      request_counts: {
        processing: ended ? 0 : batch.lines.length - done.length,
        succeeded,
        errored: done.length - succeeded,
        canceled: ended ? batch.lines.length - done.length : 0,
        expired: 0
      },
      ended_at: batch.endedAt === undefined ? null : iso(batch.endedAt),
      created_at: iso(batch.createdAt),
      expires_at: iso(batch.createdAt + DAY),
      archived_at: null,
      cancel_initiated_at: batch.cancellingAt === undefined ? null : iso(batch.cancellingAt),
      results_url: ended ? `${host.baseUrl()}/v1/messages/batches/${batch.id}/results` : null
    }
  }

  const anthropicResult = (line: BatchLine): JsonObject => {
    const answer = line.answer
    if (answer === undefined) return { custom_id: line.customId, result: { type: "canceled" } }
    if (answer.status === 200) return { custom_id: line.customId, result: { type: "succeeded", message: answer.body } }
    const body = isObject(answer.body) ? answer.body : {}
    const { request_id: _, ...error } = body
    return { custom_id: line.customId, result: { type: "errored", error } }
  }

  const listOf = (items: ReadonlyArray<JsonObject>): JsonObject => ({
    object: "list",
    data: items,
    first_id: items[0]?.id ?? null,
    last_id: items.at(-1)?.id ?? null,
    has_more: false
  })

  const uploadFile = async (request: Request, key: string): Promise<Response> => {
    const length = Number(request.headers.get("content-length") ?? "0")
    if (length > MAX_BATCH_FILE_BYTES + 64 * 1024) {
      return openAiError(413, `A file holds at most ${MAX_BATCH_FILE_BYTES} bytes.`, "file")
    }
    const form = await request.formData().catch(() => undefined)
    if (form === undefined) return openAiError(400, "Expected a multipart/form-data body.")
    const file = form.get("file")
    const purpose = form.get("purpose")
    if (file === null || typeof file === "string") {
      return openAiError(400, "Missing required parameter: 'file'.", "file")
    }
    if (typeof purpose !== "string" || !FILE_PURPOSES.has(purpose)) {
      return openAiError(
        400,
        `Invalid value for 'purpose': expected one of ${[...FILE_PURPOSES].join(", ")}.`,
        "purpose"
      )
    }
    if (file.size > MAX_BATCH_FILE_BYTES) {
      return openAiError(413, `A file holds at most ${MAX_BATCH_FILE_BYTES} bytes.`, "file")
    }
    if (storedBytes + file.size > MAX_STORED_BYTES) {
      return openAiError(400, "The emulator's file storage is full; delete files first.", "file")
    }
    const bytes = new Uint8Array(await file.arrayBuffer())
    return json(fileObject(saveFile(key, clip(file.name || "file"), purpose, bytes)))
  }

  const readJson = async (request: Request): Promise<JsonObject | undefined> => {
    const parsed: unknown = await request.json().catch(() => undefined)
    return isObject(parsed) ? parsed : undefined
  }

  const serveFiles = (request: Request, path: string, key: string): Response | Promise<Response> => {
    const [, rawId, content] = filesPath.exec(path) ?? []
    const id = rawId === undefined ? undefined : decodeURIComponent(rawId)
    if (id === undefined) {
      if (request.method === "POST") return uploadFile(request, key)
      const own = [...files.values()].filter((file) => file.key === key).reverse().map(fileObject)
      return json(listOf(own))
    }
    const file = ownFile(id, key)
    if (file === undefined) return openAiError(404, `No such File object: ${clip(id)}`, "id")
    if (content !== undefined) {
      return new Response(file.bytes, { headers: { "content-type": "application/octet-stream" } })
    }
    if (request.method === "DELETE") {
      files.delete(file.id)
      storedBytes -= file.bytes.length
      return json({ id: file.id, object: "file", deleted: true })
    }
    return json(fileObject(file))
  }

  const createOpenAiBatch = async (request: Request, key: string): Promise<Response> => {
    const body = await readJson(request)
    if (body === undefined) return openAiError(400, "We could not parse the JSON body of your request.")
    const inputFileId = body.input_file_id
    if (typeof inputFileId !== "string" || ownFile(inputFileId, key) === undefined) {
      return openAiError(400, "Invalid 'input_file_id': no such file.", "input_file_id")
    }
    if (typeof body.endpoint !== "string" || !OPENAI_BATCH_ENDPOINTS.includes(body.endpoint)) {
      return openAiError(
        400,
        `Invalid 'endpoint': expected one of ${OPENAI_BATCH_ENDPOINTS.join(", ")}.`,
        "endpoint"
      )
    }
    if (body.completion_window !== "24h") {
      return openAiError(400, "Invalid 'completion_window': only '24h' is supported.", "completion_window")
    }
    const batch: StoredBatch = {
      id: host.ids.next("batch_"),
      vendor: "openai",
      key,
      createdAt: now(),
      endpoint: body.endpoint,
      inputFileId,
      metadata: isObject(body.metadata) ? body.metadata : null,
      completionWindow: "24h",
      status: "validating",
      lines: [],
      steps: 0,
      errors: undefined,
      advancing: Promise.resolve()
    }
    batches.set(batch.id, batch)
    return json(openAiBatchObject(batch))
  }

  const serveOpenAiBatches = async (request: Request, path: string, key: string): Promise<Response> => {
    const [, rawId, cancel] = openAiBatchPath.exec(path) ?? []
    if (rawId === undefined) {
      if (request.method === "POST") return createOpenAiBatch(request, key)
      const own = [...batches.values()].filter((batch) => batch.key === key && batch.vendor === "openai")
      return json(listOf(own.reverse().map(openAiBatchObject)))
    }
    const id = decodeURIComponent(rawId)
    const batch = ownBatch(id, key, "openai")
    if (batch === undefined) return openAiError(404, `No batch found with id '${clip(id)}'.`, "batch_id")
    if (cancel !== undefined) {
      if (batch.status !== "validating" && batch.status !== "in_progress") {
        return openAiError(409, `Cannot cancel a batch with status '${batch.status}'.`)
      }
      if (batch.status === "validating") {
        const checked = validateOpenAi(batch)
        batch.lines = checked.every((item): item is BatchLine => "customId" in item) ? checked : []
      }
      batch.status = "cancelling"
      batch.cancellingAt = now()
      return json(openAiBatchObject(batch))
    }
    await advance(batch)
    return json(openAiBatchObject(batch))
  }

  const createAnthropicBatch = async (request: Request, key: string): Promise<Response> => {
    const body = await readJson(request)
    if (body === undefined) return anthropicError(400, "The request body is not valid JSON.")
    const requests = body.requests
    if (!Array.isArray(requests) || requests.length === 0) {
      return anthropicError(400, "requests: Field required (a non-empty list).")
    }
    if (requests.length > MAX_BATCH_LINES) {
      return anthropicError(400, `requests: at most ${MAX_BATCH_LINES} requests in a batch.`)
    }
    const seen = new Set<string>()
    const lines: Array<BatchLine> = []
    for (const [index, item] of requests.entries()) {
      const customId = isObject(item) ? item.custom_id : undefined
      if (typeof customId !== "string" || !/^[a-zA-Z0-9_-]{1,64}$/.test(customId)) {
        return anthropicError(400, `requests.${index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`)
      }
      if (seen.has(customId)) return anthropicError(400, `Duplicate custom_id '${customId}' in requests.`)
      seen.add(customId)
      const params = isObject(item) ? item.params : undefined
      if (!isObject(params)) return anthropicError(400, `requests.${index}.params: Field required`)
      lines.push({ customId, body: params })
    }
    const batch: StoredBatch = {
      id: host.ids.next("msgbatch_"),
      vendor: "anthropic",
      key,
      createdAt: now(),
      endpoint: "/v1/messages",
      inputFileId: null,
      metadata: null,
      completionWindow: "24h",
      status: "in_progress",
      lines,
      steps: 0,
      errors: undefined,
      inProgressAt: now(),
      advancing: Promise.resolve()
    }
    batches.set(batch.id, batch)
    return json(anthropicBatchObject(batch))
  }

  const serveAnthropicBatches = async (request: Request, path: string, key: string): Promise<Response> => {
    const [, rawId, action] = anthropicBatchPath.exec(path) ?? []
    if (rawId === undefined) {
      if (request.method === "POST") return createAnthropicBatch(request, key)
      const own = [...batches.values()].filter((batch) => batch.key === key && batch.vendor === "anthropic")
      const data = own.reverse().map(anthropicBatchObject)
      return json({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null })
    }
    const id = decodeURIComponent(rawId)
    const batch = ownBatch(id, key, "anthropic")
    if (batch === undefined) return anthropicError(404, `Message batch '${clip(id)}' not found.`)
    if (action === "/results") {
      if (batch.status !== "completed" && batch.status !== "cancelled") {
        return anthropicError(400, `Message batch ${batch.id} has not ended yet.`)
      }
      const text = batch.lines.map((line) => JSON.stringify(anthropicResult(line))).join("\n") + "\n"
      return new Response(text, { headers: { "content-type": "application/binary" } })
    }
    if (action === "/cancel") {
      if (batch.status === "in_progress") {
        batch.status = "cancelling"
        batch.cancellingAt = now()
      }
      return json(anthropicBatchObject(batch))
    }
    await advance(batch)
    return json(anthropicBatchObject(batch))
  }

  return {
    vendorOf: (method, path) => {
      if (filesPath.test(path) || openAiBatchPath.test(path)) {
        const post = method === "POST"
        const files = filesPath.exec(path)
        if (files !== null) {
          const ok = files[1] === undefined
            ? method === "GET" || post
            : files[2] === undefined
            ? method === "GET" || method === "DELETE"
            : method === "GET"
          return ok ? "openai" : undefined
        }
        const batch = openAiBatchPath.exec(path)
        return batch?.[2] !== undefined
          ? (post ? "openai" : undefined)
          : batch?.[1] === undefined
          ? (post || method === "GET" ? "openai" : undefined)
          : method === "GET"
          ? "openai"
          : undefined
      }
      const batch = anthropicBatchPath.exec(path)
      if (batch === null) return undefined
      if (batch[1] === undefined) return method === "POST" || method === "GET" ? "anthropic" : undefined
      if (batch[2] === "/cancel") return method === "POST" ? "anthropic" : undefined
      return method === "GET" ? "anthropic" : undefined
    },
    serve: (request, path, key) =>
      path.startsWith("/v1/files")
        ? Promise.resolve(serveFiles(request, path, key))
        : path.startsWith("/v1/batches")
        ? serveOpenAiBatches(request, path, key)
        : serveAnthropicBatches(request, path, key),
    clear: () => {
      files.clear()
      batches.clear()
      storedBytes = 0
    }
  }
}
