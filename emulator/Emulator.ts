/**
 * A small, fast HTTP server that speaks three vendors' wire formats, as the
 * upstream for the gateway's demo, tests and benchmarks. Never imported by the
 * gateway. Plain `Deno.serve`, no Effect.
 *
 * Routes:
 * - OpenAI (`Authorization: Bearer`): `POST /v1/chat/completions`, `POST /v1/completions`,
 *   `POST /v1/responses`, `POST /v1/responses/compact`, `POST /v1/embeddings`, `GET /v1/models`.
 * - Anthropic (`x-api-key`, `anthropic-version` required): `POST /v1/messages`, `POST /v1/messages/count_tokens`,
 *   `GET /v1/models`
 *   (told apart from OpenAI's by the `anthropic-version` / `x-api-key` header).
 * - Gemini (`x-goog-api-key` or `?key=`): `POST /{v1,v1beta,v1alpha}/models/{model}:generateContent`,
 *   `…:streamGenerateContent` (`?alt=sse` → SSE, else a streamed JSON array), `…:countTokens`,
 *   `…:embedContent`, `…:batchEmbedContents` (deterministic vectors, see `Embeddings.ts`),
 *   `GET /v1beta/models` (and `GET /v1/models` with a Gemini key).
 * - OpenAI's Realtime socket (see `Realtime.ts`): `GET /v1/realtime?model=` with `Upgrade: websocket`, and Azure's
 *   `GET /azure/openai/v1/realtime?model=<deployment>` (key as `api-key`) speaking the same GA events.
 * - OpenAI's Responses socket (see `ResponsesSocket.ts`): `GET /v1/responses` with `Upgrade: websocket`, each
 *   `response.create` run as `POST /v1/responses` (recorded with `transport: "websocket"`).
 * - Audio and moderations (see `Audio.ts`): OpenAI `POST /v1/audio/speech`, `/v1/audio/transcriptions` and
 *   `/v1/audio/translations` (multipart), `POST /v1/moderations`; rerank (see `Rerank.ts`): Cohere `POST /v2/rerank`,
 *   Jina `POST /v1/rerank`.
 * - Images (see `Images.ts`): OpenAI `POST /v1/images/generations`, `POST /v1/images/edits` (multipart, parsed
 *   into the body as `{filename, type, size}` per file); Ark `POST /api/v3/images/generations` and its chat
 *   completions at `POST /api/v3/chat/completions`; generate-content with `responseModalities` holding `IMAGE`;
 *   `GET /_emulator/images/<seed>.png` serves the images the URLs name.
 * - Videos, one task store (`VideoTasks.ts`) under four vendors' task APIs: OpenAI (`VideosOpenAi.ts`)
 *   `POST /v1/videos` (JSON or multipart), `GET /v1/videos/{id}`, `POST /v1/videos/{id}/remix`,
 *   `GET /v1/videos/{id}/content` (MP4 bytes, `Range` honoured); Ark (`VideosArk.ts`)
 *   `POST /api/v3/contents/generations/tasks`, `GET|DELETE …/tasks/{id}`, results at
 *   `GET /_emulator/videos/<token>.mp4` (no key); Gemini (`VideosGemini.ts`) `POST …/models/{model}:predictLongRunning`,
 *   `GET /v1beta/models/{model}/operations/{id}`, `GET /v1beta/files/{id}:download` (key required); Kling
 *   (`VideosKling.ts`) `POST /v1/videos/{text2video|image2video}`, `GET …/{task_id}` (a signed token checked
 *   with `jose`), results at `GET /_emulator/videos/<token>.mp4` (no key). Prompt words
 *   `unsafe` / `broken` / `expire` / `stall` fail a task (content policy / generic / expired) or keep it running.
 * - DeepSeek (`Authorization: Bearer`, see `DeepSeek.ts`) under the path prefix `/deepseek`:
 *   `POST /deepseek/chat/completions`, `POST /deepseek/v1/chat/completions`, `POST /deepseek/beta/completions`
 *   (FIM), with DeepSeek's usage fields, context cache hits, `reasoning_content` and its refusals.
 * - Amazon Bedrock Runtime under the path prefix `/bedrock` (a channel's `base_url` is `<emulator>/bedrock`), the model
 *   id URL-encoded in the path (`%3A` or a plain `:` both taken): `POST /bedrock/model/{modelId}/converse`,
 *   `…/converse-stream` (see `BedrockConverse.ts`), `…/invoke`, `…/invoke-with-response-stream` (Claude's Messages
 *   body, Titan and Cohere embeddings; see `BedrockInvoke.ts`); streams are binary `application/vnd.amazon.eventstream`
 *   frames, errors `{message}` with an `x-amzn-ErrorType` header, in-stream errors exception frames (`BedrockWire.ts`).
 *   Every request is authenticated before its body is read (see `BedrockAuth.ts`): a SigV4 signature for the service
 *   `bedrock` recomputed with the secret of `bedrockAccounts` (default `AKIDEXAMPLE` /
 *   `wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY`, session tokens taken), or `Authorization: Bearer` with one of
 *   `bedrockApiKeys` (default `BEDROCK_TEST_API_KEY`); the recorded key is the access key id or the API key, and
 *   `validKeys`, when set, must hold it. A fault's `status` answers the exception the status stands for, or the one
 *   its `errorType` names (`ModelNotReadyException`, `ServiceQuotaExceededException`, …); with `breakAfterEvents` on
 *   a stream, the exception frame comes after N events.
 * - Azure OpenAI (`api-key`, or an Entra ID Bearer token; see `Azure.ts`) under the path prefix `/azure`:
 *   `POST /azure/openai/deployments/{deployment}/{chat/completions|completions|embeddings|images/…|audio/…}` with
 *   a required `api-version`, and the v1 API `POST /azure/openai/v1/{…|responses}` (and Sora 2's
 *   `/azure/openai/v1/videos…`, OpenAI's video schema); Azure's 401/404/400 shapes,
 *   its content filter's annotations and refusals (prompt word `unsafe`; an answer with `violent` is cut).
 * - Vertex AI (see `Vertex.ts`) under the path prefix `/vertex`: `POST /vertex/token` (the JWT bearer grant, RS256
 *   assertions verified against the service-account key it issues, `serviceAccountKey()`), and with a token it
 *   issued or a test API key, `POST /vertex/v1/projects/{project}/locations/{location}/publishers/google/models/
 *   {model}:{generateContent,streamGenerateContent,predict}` and `…/publishers/anthropic/models/{model}:
 *   {rawPredict,streamRawPredict}`.
 * - Midjourney-proxy (`mj-api-secret`, see `Midjourney.ts`): `POST /mj/submit/{imagine,change,action,modal,blend,
 *   describe}`, `GET /mj/task/{id}/fetch`, `POST /mj/task/list-by-condition`; images at
 *   `GET /_emulator/mj/<id>.png` (no key); tasks move on the video step.
 * - Batches (see `Batches.ts`): OpenAI's Files API (`POST|GET /v1/files`, `GET|DELETE /v1/files/{id}`,
 *   `GET /v1/files/{id}/content`) and Batch API (`POST|GET /v1/batches`, `GET /v1/batches/{id}`, `POST …/cancel`), and
 *   Anthropic's Message Batches (`POST|GET /v1/messages/batches`, `GET …/{id}`, `GET …/{id}/results`, `POST …/cancel`);
 *   each line answered by the emulator's own route (recorded with its usage), a batch ending after `batchPolls`
 *   retrieves.
 * - Control: `POST /_emulator/faults` (JSON `Fault[]`), `DELETE /_emulator/faults`,
 *   `GET /_emulator/requests`, `GET /_emulator/stats` → `{requests, aborts}`, `POST /_emulator/reset`,
 *   `PUT /_emulator/keys` (JSON `string[]` or `null`), `GET /_emulator/vertex-key` (the service-account key JSON
 *   its Vertex AI takes), `GET /healthz` → 200.
 *
 * Deterministic answers (see `Answer.ts`):
 * - Text `Echo: <text of the last user message>` (joined text parts, at most 64 words), streamed one
 *   word (with its trailing space) per delta. Output tokens = words produced. A smaller max-output-tokens
 *   field cuts the text there and finishes with the format's length reason.
 * - Prompt tokens `ceil(characters of all message/system text / 4) + 3 per message`; when any text contains
 *   the word `cached`, half of them are reported in the format's cached field.
 * - Images in the last user message: the text starts `I see N image(s) [<url or media type>, …]`.
 * - Function tools present, tool choice not none, last message not a tool result: a call of the named tool
 *   (else the first) with arguments sampled from its JSON Schema (string "sample", number 1, boolean true,
 *   enum first, objects recursively with only `required` properties when some are listed); two calls with
 *   distinct ids when the last user text contains `parallel`; `tool:<name> {json}` in the last user text calls
 *   that offered tool with those arguments. After tool results: `Tool result: <texts>`. With the option
 *   `toolCalls: "asked"` (the demo's), tool choice `auto` gets a call only when `tool:<name> {json}` asks for it.
 * - Reasoning when asked (chat `reasoning_effort` ≠ none, Responses `reasoning.effort` ≠ none, Anthropic
 *   `thinking.type` enabled/adaptive, Gemini `includeThoughts` or `thinkingBudget` > 0): `Thinking about:
 *   <last user text>`, counted as reasoning tokens (Anthropic signature `sig-<hash>`).
 * - Structured output: the text is JSON sampled from the schema with the same rules.
 * - Stop sequences: the text is cut before the first one found.
 *
 * Faults (`setFaults`) apply before normal handling, first match wins, each `times` use spent on a match.
 * Order inside one request: `latencyMs`, fault `delayMs`, fault `hang`, fault `status`, fault `malformed`,
 * JSON parsing, key check, the route; `breakAfterEvents` cuts the body after N events by erroring the
 * body stream (the client sees a truncated transfer; Deno logs that error once). `status` together with
 * `breakAfterEvents` on a stream request instead sends 200, N events, then the vendor's in-band error
 * event, and ends the stream (see `Routes.inBandErrorFrame`). A client that goes away before the whole body was
 * handed over counts in `aborts()` and marks its `RecordedRequest.aborted`. `endAfterEvents` ends a stream
 * cleanly after N events without its end marker; `paceMs` paces one request's events; `echo` makes the error
 * message quote caller-supplied text (see `Faults.echoMessage`).
 * When no `validKeys` are set, any key (or none) is accepted. Fields a gateway passes through without
 * modelling them (chat `video_url` parts, Responses references and hosted tool choices, Gemini thinking
 * levels) are checked as the vendors check them (`RequestChecks.ts`).
 *
 * @since 0.1.0
 */
import { type RealtimeRecord, serveRealtime } from "./Realtime.ts"
import { serveResponsesSocket } from "./ResponsesSocket.ts"
import { type ArmedFault, armFaults, echoMessage, type Fault, takeFault, vendorErrorBody } from "./Faults.ts"

export type { Fault } from "./Faults.ts"
export type { ToolCallMode } from "./Answer.ts"
import { inBandErrorFrame, malformedBody, requestKey, resolveRoute, unauthorizedMessage } from "./Routes.ts"
import { pngFor } from "./Png.ts"
import type { ToolCallMode } from "./Answer.ts"
import { type ReportedUsage, reportedUsage } from "./ReportedUsage.ts"
import { makeMjTasks, mjImageSeed } from "./Midjourney.ts"
import { makeVideoTasks } from "./VideoTasks.ts"
import { makeBatchStore } from "./Batches.ts"
import { arkVideoBytes } from "./VideosArk.ts"
import { mp3Seconds } from "./Audio.ts"
import { KLING_TEST_ACCESS_KEY, KLING_TEST_SECRET_KEY, klingErrorBody, verifyKlingToken } from "./VideosKling.ts"
import { deliver, jsonReply, sleep } from "./Sse.ts"
import {
  BEDROCK_TEST_ACCESS_KEY_ID,
  BEDROCK_TEST_API_KEY,
  BEDROCK_TEST_SECRET_ACCESS_KEY,
  type BedrockAccounts,
  verifyBedrockRequest
} from "./BedrockAuth.ts"
import {
  bedrockError,
  bedrockExceptionOf,
  bedrockStreamExceptionOf,
  defaultBedrockMessage,
  frameWriter,
  isBedrockException
} from "./BedrockWire.ts"
import { isObject, type JsonObject, makeIds, makePromptCache, stringOr } from "./Wire.ts"
import {
  makeVertexAuthority,
  placeError,
  VERTEX_PREFIX,
  VERTEX_TEST_API_KEY,
  vertexCallOf,
  vertexUnauthenticated
} from "./Vertex.ts"

/** One request as the emulator saw it. @category models */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  /** Header names in lower case. */
  readonly headers: Record<string, string>
  readonly key: string | undefined
  /** Parsed JSON body, or undefined (no body, or not JSON). */
  readonly body: unknown
  aborted: boolean
  completed: boolean
  /**
   * How it arrived: `http`, or `websocket` (a Realtime or Responses socket's handshake, or a `response.create` sent
   * over the emulator's Responses socket).
   */
  readonly transport: "http" | "websocket"
  /** The usage the answer reported, in the vendor's terms (`ReportedUsage.ts`); `undefined` when none. */
  usage: ReportedUsage | undefined
}

/** Options of `startEmulator`. @category models */
export interface EmulatorOptions {
  /** 0 = random free port (default 0). */
  readonly port?: number
  /** Default 127.0.0.1. */
  readonly hostname?: string
  /** Delay before the first byte, in milliseconds (default 0). */
  readonly latencyMs?: number
  /** Stream pacing: events per second (default 0 = unpaced). */
  readonly tokensPerSecond?: number
  /** When set, any other key gets 401 in the vendor's shape. */
  readonly validKeys?: ReadonlyArray<string>
  /** Keep `RecordedRequest`s (default true; false for benchmarks). */
  readonly record?: boolean
  /** Milliseconds a video task spends in each phase step: final four steps after creation (default 1000). */
  readonly videoStepMs?: number
  /** Most video tasks kept; the oldest is forgotten beyond it (default 50,000). */
  readonly maxVideoTasks?: number
  /**
   * Kling accounts, access key → secret key, whose signed tokens the Kling routes take (default the one test
   * account, `KLING_TEST_ACCESS_KEY` / `KLING_TEST_SECRET_KEY` of `VideosKling.ts`).
   */
  readonly klingAccounts?: Readonly<Record<string, string>>
  /**
   * Bedrock's AWS accounts, access key id → secret access key, whose SigV4 signatures the Bedrock routes take (default
   * the one test account, `BEDROCK_TEST_ACCESS_KEY_ID` / `BEDROCK_TEST_SECRET_ACCESS_KEY` of `BedrockAuth.ts`).
   */
  readonly bedrockAccounts?: Readonly<Record<string, string>>
  /** Bedrock API keys the Bedrock routes take as Bearer tokens (default `[BEDROCK_TEST_API_KEY]`). */
  readonly bedrockApiKeys?: ReadonlyArray<string>
  /** The Vertex AI API keys (express mode) model calls may carry (default `[VERTEX_TEST_API_KEY]`). */
  readonly vertexApiKeys?: ReadonlyArray<string>
  /**
   * Retrieves an OpenAI batch or Anthropic Message Batch answers in progress for, each running the next share of its
   * lines, the last ending it (`Batches.ts`; default 2, at least 1).
   */
  readonly batchPolls?: number
  /**
   * When a request that offers tools gets a tool call, on every wire (`Answer.ts`, `ToolCallMode`): `automatic`
   * (default; what the tests rely on) whenever tool choice allows one; `asked` (the demo's) only when the last user
   * message asks for one (`tool:<name> {json}`) or tool choice requires one, plain text otherwise.
   */
  readonly toolCalls?: ToolCallMode
}

/** A running emulator and its test controls. @category models */
export interface Emulator {
  /** Base URL, e.g. `http://127.0.0.1:43123`. */
  readonly url: string
  readonly port: number
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Requests whose client went away before the answer was complete. */
  readonly aborts: () => number
  setFaults(faults: ReadonlyArray<Fault>): void
  clearFaults(): void
  setValidKeys(keys: ReadonlyArray<string> | undefined): void
  /** Clears requests, faults, video and Midjourney tasks, files, batches and the abort count (valid keys stay). */
  reset(): void
  /**
   * A Vertex AI service-account key JSON (as text) whose `token_uri` is this emulator's `POST /vertex/token`: the
   * key its token endpoint takes assertions of (`Vertex.ts`).
   */
  vertexServiceAccountKey(): Promise<string>
  /** Every response the Realtime socket finished, in order, with the `usage` its `response.done` sent (`Realtime.ts`). */
  readonly realtime: ReadonlyArray<RealtimeRecord>
  /** Responses sockets (`ResponsesSocket.ts`) open now. */
  readonly openResponsesSockets: () => number
  /** Stops listening, ends hanging or streaming answers, and waits for the server to finish. */
  close(): Promise<void>
}

const jsonResponse = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

const waitForAbort = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve()
    signal.addEventListener("abort", () => resolve(), { once: true })
  })

/** The duration of a RIFF/WAVE file from its first bytes (canonical 44-byte header), or `undefined`. */
const wavSeconds = (head: Uint8Array): number | undefined => {
  const text = (start: number, end: number) => String.fromCharCode(...head.subarray(start, end))
  if (head.length < 44 || text(0, 4) !== "RIFF" || text(8, 12) !== "WAVE" || text(36, 40) !== "data") return undefined
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength)
  const byteRate = view.getUint32(28, true)
  return byteRate === 0 ? undefined : view.getUint32(40, true) / byteRate
}

/**
 * A multipart body as a JSON object, as the image edit route reads it: text fields as strings, files as
 * `{filename, type, size}` (and `seconds`, a WAV file's duration from its header, or an MP3's from its frames), a name sent more than once (`image[]`) as an array; `undefined` when unparsable.
 */
const formBody = async (request: Request): Promise<JsonObject | undefined> => {
  const form = await request.formData().catch(() => undefined)
  if (form === undefined) return undefined
  const body: JsonObject = {}
  for (const [name, value] of form.entries()) {
    const seconds = typeof value === "string"
      ? undefined
      : wavSeconds(new Uint8Array(await value.slice(0, 64).arrayBuffer())) ??
        mp3Seconds(new Uint8Array(await value.arrayBuffer()))
    const item = typeof value === "string"
      ? value
      : { filename: value.name, type: value.type, size: value.size, ...(seconds === undefined ? {} : { seconds }) }
    const previous = body[name]
    body[name] = previous === undefined
      ? (name.endsWith("[]") ? [item] : item)
      : Array.isArray(previous)
      ? [...previous, item]
      : [previous, item]
  }
  return body
}

const asKeys = (value: unknown): ReadonlyArray<string> | undefined =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : undefined

/**
 * Starts an emulator; it is listening when this returns (synchronous start).
 * Close it with `close()` (tests: in a `finally`, so Deno's sanitizers pass).
 *
 * @category constructors
 */
export const startEmulator = (options: EmulatorOptions = {}): Emulator => {
  const record = options.record ?? true
  const latencyMs = options.latencyMs ?? 0
  const pacingMs = (options.tokensPerSecond ?? 0) > 0 ? 1000 / (options.tokensPerSecond ?? 1) : 0
  let validKeys: ReadonlySet<string> | undefined = options.validKeys ? new Set(options.validKeys) : undefined
  let armed: Array<ArmedFault> = []
  let requests: Array<RecordedRequest> = []
  let realtime: Array<RealtimeRecord> = []
  let requestCount = 0
  let abortCount = 0
  const closing = new AbortController()
  const ids = makeIds()
  const videos = makeVideoTasks(options.videoStepMs ?? 1000, options.maxVideoTasks ?? 50_000)
  const midjourney = makeMjTasks(options.videoStepMs ?? 1000, options.maxVideoTasks ?? 50_000)
  const klingAccounts = options.klingAccounts ?? { [KLING_TEST_ACCESS_KEY]: KLING_TEST_SECRET_KEY }
  const bedrockAccounts: BedrockAccounts = {
    secrets: options.bedrockAccounts ?? { [BEDROCK_TEST_ACCESS_KEY_ID]: BEDROCK_TEST_SECRET_ACCESS_KEY },
    apiKeys: new Set(options.bedrockApiKeys ?? [BEDROCK_TEST_API_KEY])
  }
  const prompts = makePromptCache()
  let baseUrl = ""
  const vertex = makeVertexAuthority(() => baseUrl, options.vertexApiKeys ?? [VERTEX_TEST_API_KEY])

  /** `POST /vertex/token`: recorded (the assertion left out), faults applied, then the grant. */
  const vertexToken = async (request: Request, path: string): Promise<Response> => {
    const form = await request.text()
    const fields = Object.fromEntries(new URLSearchParams(form))
    const recorded: RecordedRequest = {
      method: request.method,
      path,
      query: {},
      headers: Object.fromEntries(request.headers),
      key: undefined,
      body: { grant_type: fields.grant_type, assertion: fields.assertion === undefined ? undefined : "(a JWT)" },
      aborted: false,
      completed: true,
      transport: "http",
      usage: undefined
    }
    requestCount++
    if (record) requests.push(recorded)
    const fault = takeFault(armed, { path, model: undefined, key: undefined })
    if (fault?.delayMs !== undefined) await sleep(fault.delayMs, closing.signal)
    if (fault?.status !== undefined) {
      return jsonResponse(fault.body ?? { error: "internal_failure", error_description: "Fault." }, fault.status)
    }
    const answer = await vertex.token(form)
    return jsonResponse(answer.body, answer.status)
  }

  /** Counts a WebSocket handshake and records it (its headers without `credentials`, which go in `key`). */
  const recordHandshake = (
    request: Request,
    url: URL,
    key: string | undefined,
    credentials: ReadonlyArray<string>
  ): void => {
    const headers = Object.fromEntries(request.headers)
    for (const name of credentials) delete headers[name]
    requestCount++
    if (!record) return
    requests.push({
      method: request.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      key,
      body: undefined,
      aborted: false,
      completed: true,
      transport: "websocket",
      usage: undefined
    })
  }

  /**
   * `GET /v1/realtime?model=` (and Azure's `GET /azure/openai/v1/realtime?model=<deployment>`, the key as
   * `api-key`) upgrades: the key from `Authorization: Bearer` (or the browser subprotocol
   * `openai-insecure-api-key.<key>`, answered with the `realtime` subprotocol), checked against `validKeys`, the
   * handshake recorded, then the socket served by `Realtime.ts`.
   */
  const realtimeHandshake = (request: Request, url: URL): Response => {
    const protocols = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((item) => item.trim())
    const fromProtocol = protocols.find((item) => item.startsWith("openai-insecure-api-key."))
    const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]
    // Azure's path (`/azure/openai/v1/realtime`) takes the key as `api-key`, or an Entra token as Bearer.
    const key = bearer ?? request.headers.get("api-key") ?? fromProtocol?.slice("openai-insecure-api-key.".length)
    const model = url.searchParams.get("model") ?? ""
    recordHandshake(request, url, key, ["authorization", "api-key", "sec-websocket-protocol"])
    if (validKeys !== undefined && (key === undefined || !validKeys.has(key))) {
      return jsonResponse({
        error: { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" }
      }, 401)
    }
    if (model === "") {
      return jsonResponse({
        error: { message: "Missing required parameter: 'model'.", type: "invalid_request_error", param: "model" }
      }, 400)
    }
    const { socket, response } = Deno.upgradeWebSocket(
      request,
      protocols.includes("realtime") ? { protocol: "realtime" } : {}
    )
    serveRealtime(socket, model, {
      nextId: ids.next,
      recordResponse: (entry) => {
        if (record) realtime.push(entry)
      },
      closing: closing.signal,
      pacingMs
    })
    return response
  }

  /** The requests a Responses socket made for its creates (recorded as `transport: "websocket"`). */
  const socketCreates = new WeakSet<Request>()
  /** Responses sockets open now. */
  let openSockets = 0

  /**
   * `GET /v1/responses` upgrades: the key from `Authorization: Bearer` checked against `validKeys`, the handshake
   * recorded, then the socket served by `ResponsesSocket.ts`, each create run through `handle` with the
   * handshake's headers.
   */
  const responsesHandshake = (request: Request, url: URL): Response => {
    const key = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]
    recordHandshake(request, url, key, ["authorization"])
    if (validKeys !== undefined && (key === undefined || !validKeys.has(key))) {
      return jsonResponse(vendorErrorBody("openai", 401, unauthorizedMessage.openai), 401)
    }
    const { socket, response } = Deno.upgradeWebSocket(request)
    let counted = false
    socket.addEventListener("open", () => {
      counted = true
      openSockets++
    })
    socket.addEventListener("close", () => {
      if (counted) openSockets--
      counted = false
    })
    const forwarded = new Headers()
    for (const name of ["authorization", "openai-organization", "openai-project", "user-agent"]) {
      const value = request.headers.get(name)
      if (value !== null) forwarded.set(name, value)
    }
    forwarded.set("content-type", "application/json")
    serveResponsesSocket(socket, {
      run: (body, signal) => {
        const create = new Request(new URL("/v1/responses", url), {
          method: "POST",
          headers: forwarded,
          body: JSON.stringify(body),
          signal
        })
        socketCreates.add(create)
        return handle(create)
      },
      closing: closing.signal
    })
    return response
  }

  const batches = makeBatchStore({
    ids,
    baseUrl: () => baseUrl,
    run: (request) => handle(request),
    polls: options.batchPolls ?? 2
  })

  /**
   * The Files, Batch and Message Batches routes (`Batches.ts`): the key checked against `validKeys`, the call recorded
   * (a JSON body parsed; an upload as `{purpose, filename, bytes}`), a fault's `delayMs` and `status` applied.
   */
  const batchCall = async (request: Request, url: URL, vendor: "openai" | "anthropic"): Promise<Response> => {
    const path = url.pathname
    const key = requestKey(vendor, request.headers, {})
    const multipart = /^multipart\/form-data/i.test(request.headers.get("content-type") ?? "")
    let body: unknown = undefined
    if (request.method === "POST" && !multipart) body = await request.clone().json().catch(() => undefined)
    if (multipart) {
      const form = await request.clone().formData().catch(() => undefined)
      const file = form?.get("file")
      body = {
        purpose: form?.get("purpose") ?? undefined,
        filename: file instanceof File ? file.name : undefined,
        bytes: file instanceof File ? file.size : undefined
      }
    }
    requestCount++
    if (record) {
      requests.push({
        method: request.method,
        path,
        query: Object.fromEntries(url.searchParams),
        headers: Object.fromEntries(request.headers),
        key,
        body,
        aborted: false,
        completed: true,
        transport: "http",
        usage: undefined
      })
    }
    const fault = takeFault(armed, { path, model: undefined, key })
    if (fault?.delayMs !== undefined) await sleep(fault.delayMs, closing.signal)
    if (fault?.status !== undefined) {
      return jsonResponse(fault.body ?? vendorErrorBody(vendor, fault.status, fault.message), fault.status)
    }
    if (validKeys !== undefined && (key === undefined || !validKeys.has(key))) {
      return jsonResponse(vendorErrorBody(vendor, 401, unauthorizedMessage[vendor]), 401)
    }
    return batches.serve(request, path, key ?? "")
  }

  const control = async (request: Request, path: string): Promise<Response> => {
    const route = `${request.method} ${path}`
    switch (route) {
      case "POST /_emulator/faults": {
        const faults = await request.json().catch(() => undefined)
        if (!Array.isArray(faults)) return jsonResponse({ error: "Expected a JSON array of faults." }, 400)
        armed = armFaults(faults.filter(isObject) as ReadonlyArray<Fault>)
        return new Response(null, { status: 204 })
      }
      case "DELETE /_emulator/faults":
        armed = []
        return new Response(null, { status: 204 })
      case "GET /_emulator/requests":
        return jsonResponse(requests)
      case "GET /_emulator/stats":
        return jsonResponse({ requests: requestCount, aborts: abortCount })
      case "POST /_emulator/reset":
        reset()
        return new Response(null, { status: 204 })
      case "GET /_emulator/vertex-key":
        // The service-account key JSON its Vertex AI token endpoint takes (for an emulator run as its own process).
        return new Response(await vertex.serviceAccountKey(), { headers: { "content-type": "application/json" } })
      case "PUT /_emulator/keys": {
        const keys = await request.json().catch(() => undefined)
        if (keys !== null && !Array.isArray(keys)) {
          return jsonResponse({ error: "Expected a JSON array of keys or null." }, 400)
        }
        validKeys = keys === null ? undefined : new Set(asKeys(keys))
        return new Response(null, { status: 204 })
      }
      default:
        return jsonResponse({ error: `Unknown control route ${route}.` }, 404)
    }
  }

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    const path = url.pathname
    if (path === "/healthz") return new Response("ok")
    const image = /^\/_emulator\/images\/([0-9a-f]{1,8})\.png$/.exec(path)
    if (image !== null && request.method === "GET") {
      return new Response(pngFor(parseInt(image[1], 16)), { headers: { "content-type": "image/png" } })
    }
    const mjImage = /^\/_emulator\/mj\/(\d{1,32})\.png$/.exec(path)
    if (mjImage !== null && request.method === "GET") {
      const seed = mjImageSeed(midjourney, mjImage[1])
      return seed === undefined
        ? new Response("Not found", { status: 404, headers: { "content-type": "text/plain" } })
        : new Response(pngFor(seed), { headers: { "content-type": "image/png" } })
    }
    const video = /^\/_emulator\/videos\/([0-9a-f]{32})\.mp4$/.exec(path)
    if (video !== null && request.method === "GET") {
      return arkVideoBytes(videos, video[1], request.headers.get("range"), Date.now()) ??
        new Response("Not found", { status: 404, headers: { "content-type": "text/plain" } })
    }
    if (path.startsWith("/_emulator/")) return control(request, path)
    if (request.method === "POST" && path === `${VERTEX_PREFIX}/token`) return vertexToken(request, path)
    if (
      (path === "/v1/realtime" || path === "/azure/openai/v1/realtime") &&
      request.headers.get("upgrade")?.toLowerCase() === "websocket"
    ) {
      return realtimeHandshake(request, url)
    }
    if (path === "/v1/responses" && request.headers.get("upgrade")?.toLowerCase() === "websocket") {
      return responsesHandshake(request, url)
    }
    const batchVendor = batches.vendorOf(request.method, path)
    if (batchVendor !== undefined) return batchCall(request, url, batchVendor)

    const query: Record<string, string> = {}
    for (const [name, value] of url.searchParams) query[name] = value
    const multipart = /^multipart\/form-data/i.test(request.headers.get("content-type") ?? "")
    // The bytes as sent: Bedrock's SigV4 signature covers them.
    const bytes = request.method === "GET" || request.method === "HEAD" || multipart
      ? new Uint8Array()
      : new Uint8Array(await request.arrayBuffer())
    const text = new TextDecoder().decode(bytes)
    let parsed: unknown = undefined
    let parseFailed = false
    if (multipart) {
      parsed = await formBody(request)
      parseFailed = parsed === undefined
    } else if (text.length > 0) {
      try {
        parsed = JSON.parse(text)
      } catch {
        parseFailed = true
      }
    }
    const body: JsonObject = isObject(parsed) ? parsed : {}
    const route = resolveRoute(request.method, path, query, request.headers, body)
    if (route === undefined) {
      return jsonResponse(vendorErrorBody("openai", 404, `Invalid URL (${request.method} ${path})`), 404)
    }
    // Kling: the Bearer token is a JWT signed with an account's secret key; the recorded key is its access key.
    const klingAuth = route.vendor === "kling"
      ? await verifyKlingToken(request.headers.get("authorization"), klingAccounts)
      : undefined
    // Vertex AI: a token the emulator issued (recorded as the service account's email) or a test API key.
    const vertexCall = path.startsWith(`${VERTEX_PREFIX}/`) ? vertexCallOf(path) : undefined
    const vertexCaller = vertexCall === undefined ? undefined : vertex.caller(request.headers)
    const key = vertexCaller !== undefined
      ? (vertexCaller.ok ? vertexCaller.key : undefined)
      : klingAuth === undefined
      ? requestKey(route.vendor, request.headers, query)
      : klingAuth.ok
      ? klingAuth.accessKey
      : undefined
    const headers: Record<string, string> = {}
    if (record) { for (const [name, value] of request.headers) headers[name] = value }
    const recorded: RecordedRequest = {
      method: request.method,
      path,
      query,
      headers,
      key,
      body: parsed,
      aborted: false,
      completed: false,
      transport: socketCreates.has(request) ? "websocket" : "http",
      usage: undefined
    }
    requestCount++
    if (record) requests.push(recorded)
    const markAborted = () => {
      if (recorded.completed || recorded.aborted) return
      recorded.aborted = true
      abortCount++
    }
    request.signal.addEventListener("abort", markAborted, { once: true })
    const model = route.pathModel ?? stringOr(body.model)
    const fault = takeFault(armed, { path, model, key })
    // Only answers that wait or stream need to hear about the client leaving or the emulator closing.
    const signal = fault !== undefined || latencyMs > 0 || pacingMs > 0
      ? AbortSignal.any([request.signal, closing.signal])
      : closing.signal
    if (latencyMs > 0) await sleep(latencyMs, signal)
    if (fault?.delayMs !== undefined) await sleep(fault.delayMs, signal)
    if (fault?.hang === true) await waitForAbort(signal)
    if (signal.aborted) {
      return jsonResponse(vendorErrorBody(route.vendor, 503, "The emulator is closing."), 503)
    }

    const responseHeaders: Record<string, string> = route.vendor === "openai" || route.vendor === "azure"
      ? { "x-request-id": ids.next("req_") }
      : route.vendor === "anthropic"
      ? { "request-id": ids.next("req_") }
      : route.vendor === "bedrock"
      ? { "x-amzn-requestid": crypto.randomUUID() }
      : {}
    const delivery = {
      pacingMs: fault?.paceMs ?? pacingMs,
      breakAfterEvents: fault?.breakAfterEvents,
      endAfterEvents: fault?.endAfterEvents,
      stallAfterEvents: fault?.stallAfterEvents,
      signal,
      headers: responseHeaders,
      onComplete: () => {
        recorded.completed = true
      },
      onCancel: markAborted
    }
    const fail = (status: number, message: string | undefined, errorBody?: unknown) =>
      deliver(
        route.vendor === "bedrock"
          ? bedrockError(
            isBedrockException(fault?.errorType) ? fault.errorType : bedrockExceptionOf(status),
            message ?? defaultBedrockMessage(status),
            status,
            errorBody
          )
          : jsonReply(errorBody ?? vendorErrorBody(route.vendor, status, message), status),
        { ...delivery, breakAfterEvents: undefined }
      )

    // `status` with `breakAfterEvents` on a stream: N events, then the vendor's in-band error event.
    const inBand = fault?.status !== undefined && fault.breakAfterEvents !== undefined && route.stream
    const faultMessage = fault?.echo === undefined ? fault?.message : echoMessage(fault, body, key)
    if (fault?.status !== undefined && !inBand) return fail(fault.status, faultMessage, fault.body)
    if (fault?.malformed === true) {
      const malformed = malformedBody(route)
      recorded.completed = true
      return new Response(malformed.text, { headers: { ...responseHeaders, "content-type": malformed.contentType } })
    }
    // Bedrock, as AWS does, authenticates the request before it reads the body.
    if (route.vendor === "bedrock") {
      const auth = await verifyBedrockRequest(
        { method: request.method, url, headers: request.headers, body: bytes },
        bedrockAccounts
      )
      if (!auth.ok) {
        return deliver(bedrockError(auth.exception, auth.message), { ...delivery, breakAfterEvents: undefined })
      }
      if (validKeys !== undefined && !validKeys.has(auth.key)) {
        return deliver(bedrockError("UnrecognizedClientException", unauthorizedMessage.bedrock), {
          ...delivery,
          breakAfterEvents: undefined
        })
      }
    }
    if (route.hasBody && (parseFailed || !isObject(parsed))) {
      return fail(400, "We could not parse the JSON body of your request. The body must be a JSON object.")
    }
    if (klingAuth !== undefined && !klingAuth.ok) {
      return fail(401, klingAuth.message, klingErrorBody(klingAuth.code, klingAuth.message))
    }
    if (vertexCall !== undefined && vertexCaller !== undefined) {
      if (!vertexCaller.ok) return fail(401, undefined, vertexUnauthenticated)
      const misplaced = placeError(vertexCall, vertexCaller.via)
      if (misplaced !== undefined) return deliver(misplaced, { ...delivery, breakAfterEvents: undefined })
    } else if (
      klingAuth === undefined && route.vendor !== "bedrock" && validKeys !== undefined &&
      (key === undefined || !validKeys.has(key))
    ) {
      return fail(401, unauthorizedMessage[route.vendor])
    }
    try {
      const reply = await route.handler({
        body,
        query,
        headers: request.headers,
        path,
        model: model ?? "",
        ids,
        created: Math.floor(Date.now() / 1000),
        videos,
        midjourney,
        prompts,
        toolCalls: options.toolCalls
      })
      if (inBand && fault?.status !== undefined && reply._tag === "Events") {
        const kept = reply.frames.slice(0, fault.breakAfterEvents)
        const error = route.vendor === "bedrock"
          ? (await frameWriter()).exception(
            isBedrockException(fault.errorType) ? fault.errorType : bedrockStreamExceptionOf(fault.status),
            faultMessage ?? defaultBedrockMessage(fault.status)
          )
          : inBandErrorFrame(route, path, fault.status, faultMessage, fault.body, kept.length)
        recorded.usage = reportedUsage(reply, kept.length)
        return deliver({ ...reply, frames: [...kept, error] }, { ...delivery, breakAfterEvents: undefined })
      }
      if (record) {
        recorded.usage = reportedUsage(
          reply,
          fault?.breakAfterEvents ?? fault?.endAfterEvents ?? fault?.stallAfterEvents ?? Number.POSITIVE_INFINITY
        )
      }
      return deliver(reply, delivery)
    } catch (error) {
      return fail(500, `The emulator failed: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  const server = Deno.serve({
    port: options.port ?? 0,
    hostname: options.hostname ?? "127.0.0.1",
    onListen: () => {}
  }, handle)
  const port = server.addr.port
  baseUrl = `http://${options.hostname ?? "127.0.0.1"}:${port}`

  const reset = () => {
    requests = []
    realtime = []
    armed = []
    requestCount = 0
    abortCount = 0
    videos.clear()
    midjourney.clear()
    batches.clear()
    prompts.seen.clear()
    // Vertex tokens stay valid: a gateway holds them until they expire, as it would Google's.
  }

  return {
    url: `http://${options.hostname ?? "127.0.0.1"}:${port}`,
    port,
    get requests() {
      return requests
    },
    aborts: () => abortCount,
    setFaults: (faults) => {
      armed = armFaults(faults)
    },
    clearFaults: () => {
      armed = []
    },
    setValidKeys: (keys) => {
      validKeys = keys === undefined ? undefined : new Set(keys)
    },
    reset,
    vertexServiceAccountKey: vertex.serviceAccountKey,
    get realtime() {
      return realtime
    },
    openResponsesSockets: () => openSockets,
    close: async () => {
      closing.abort()
      await server.shutdown()
    }
  }
}
