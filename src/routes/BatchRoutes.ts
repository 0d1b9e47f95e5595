/**
 * The batch routes. Anthropic's Message Batches (docs.anthropic.com/en/api/creating-message-batches), with the
 * Messages route's credentials (`x-api-key` or Bearer) and its error envelope:
 *
 * - `POST /v1/messages/batches` `{requests: [{custom_id, params}]}` → the `MessageBatch` (`in_progress`);
 * - `GET /v1/messages/batches/{id}` → the `MessageBatch`;
 * - `GET /v1/messages/batches?before_id&after_id&limit` → `{data, has_more, first_id, last_id}`, newest first;
 * - `POST /v1/messages/batches/{id}/cancel` → the `MessageBatch` (`canceling`, or `ended` once nothing runs);
 * - `DELETE /v1/messages/batches/{id}` → `{id, type: "message_batch_deleted"}` (an ended batch only);
 * - `GET /v1/messages/batches/{id}/results` → JSONL, one result per request in input order (an ended batch only).
 *
 * OpenAI's Batch API (platform.openai.com/docs/api-reference/batch), Bearer key, OpenAI's error envelope:
 *
 * - `POST /v1/batches` `{input_file_id, endpoint, completion_window: "24h", metadata?}` → the `Batch`: the input
 *   file (purpose `batch`, the caller's own) is read and every line checked first; a bad line makes the batch
 *   `failed` with `errors.data[]` naming each bad line (`line` from 1), and nothing runs;
 * - `GET /v1/batches/{id}`, `GET /v1/batches?after&limit` (newest first, `{object: "list", data, first_id, last_id,
 *   has_more}`), `POST /v1/batches/{id}/cancel` (`cancelling`, then `cancelled`).
 *
 * The output and error files are written when the batch ends (`batches/BatchOutput.ts`), in input order.
 *
 * Every line runs through the gateway's own handler as the key's own request (`batches/BatchRunner.ts`). Another
 * user's batch id answers 404, as a missing one does. A batch belongs to its user, whichever of the user's keys made
 * it: every route also takes the console's browser session when no key is sent (`SessionCaller.ts`: same-origin proof
 * on a change, billed to the playground token), and then sees all of the session user's batches.
 *
 * @since 0.4.0
 */
import { Effect, Option, Result, Stream } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { InvalidRequest, NotFound, RateLimited } from "../errors/GatewayError.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { type BatchFacts, decodeBatchCreate, encodeBatch, validateBatchInput } from "../formats/batches/OpenAiBatch.ts"
import { FileStore } from "../files/FileStore.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { formatOf } from "../formats/Formats.ts"
import {
  decodeMessageBatchCreate,
  encodeMessageBatch,
  encodeMessageBatchResult
} from "../formats/batches/AnthropicBatch.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf, gatewayOriginOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { type BatchView, lineRequestId } from "../batches/Batch.ts"
import { BatchRunner } from "../batches/BatchRunner.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { bearerOrSession, makeSessionCaller } from "./SessionCaller.ts"
import {
  deleteEnded,
  insertBatch,
  requestCancel,
  selectBatch,
  selectBatchPage,
  selectFinishedLines,
  tokenDigest,
  unfinishedBatches
} from "../batches/BatchSql.ts"

/** Result lines read from the store per query while the results stream. */
const RESULT_PAGE = 500

/** A new public batch id: `prefix` then 24 hex digits. @category ids */
export const newBatchId = (prefix: "msgbatch_" | "batch_"): string =>
  prefix + crypto.randomUUID().replaceAll("-", "").slice(0, 24)

/** The `MessageBatch` of `view`, its `results_url` under `origin`. */
const messageBatchOf = (view: BatchView, origin: string) => {
  const { batch, counts } = view
  return encodeMessageBatch({
    id: batch.publicId,
    phase: batch.endedAt !== null ? "ended" : batch.cancelInitiatedAt !== null ? "cancelling" : "running",
    counts: {
      processing: counts.pending + counts.running,
      succeeded: counts.succeeded,
      errored: counts.errored,
      canceled: counts.canceled,
      expired: counts.expired
    },
    createdAt: batch.createdAt,
    endedAt: batch.endedAt,
    expiresAt: batch.expiresAt,
    cancelInitiatedAt: batch.cancelInitiatedAt,
    archivedAt: batch.archivedAt,
    origin
  })
}

/** `limit` of a list query: 1 to 1000, default 20. */
const limitOf = (value: string | null): Effect.Effect<number, InvalidRequest> => {
  if (value === null) return Effect.succeed(20)
  const limit = Number(value)
  return Number.isInteger(limit) && limit >= 1 && limit <= 1000
    ? Effect.succeed(limit)
    : Effect.fail(new InvalidRequest({ message: "limit: Expected an integer from 1 to 1000.", param: "limit" }))
}

/** The OpenAI `Batch` object of `view`. */
const openAiBatchOf = (view: BatchView) => {
  const { batch, counts } = view
  const ended = batch.endedAt?.getTime() ?? null
  const at = (status: string) => batch.status === status ? ended : null
  return encodeBatch({
    id: batch.publicId,
    status: batch.status as BatchFacts["status"],
    endpoint: batch.endpoint,
    inputFileId: batch.inputFileId ?? "",
    outputFileId: batch.outputFileId,
    errorFileId: batch.errorFileId,
    errors: batch.errors as BatchFacts["errors"],
    metadata: batch.metadata as BatchFacts["metadata"],
    counts: { total: batch.lineCount, completed: counts.succeeded, failed: counts.errored },
    createdAt: batch.createdAt.getTime(),
    inProgressAt: batch.inProgressAt?.getTime() ?? null,
    expiresAt: batch.expiresAt.getTime(),
    finalizingAt: batch.finalizingAt?.getTime() ?? null,
    completedAt: at("completed"),
    failedAt: at("failed"),
    expiredAt: at("expired"),
    cancellingAt: batch.cancelInitiatedAt?.getTime() ?? null,
    cancelledAt: at("cancelled")
  })
}

/** The largest `POST /v1/batches` body read, in bytes. @category constants */
export const BATCH_CREATE_BODY_LIMIT = 64 * 1024

/**
 * The Message Batches routes and OpenAI's batch routes.
 *
 * @category routes
 */
export const BatchRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const settings = yield* GatewaySettings
  const sql = yield* SqlClient.SqlClient
  const runner = yield* BatchRunner
  const files = yield* FileStore
  const channels = yield* ChannelRouter
  const render = formatOf("anthropic").encodeError
  const encoder = new TextEncoder()

  /** The caller's token digest, once its user is under `batch_max_in_progress` unfinished batches. */
  const admit = (principal: { readonly userId: bigint; readonly tokenId: bigint }) =>
    Effect.gen(function* () {
      if ((yield* unfinishedBatches(sql, principal.userId)) >= settings.batchMaxInProgress) {
        return yield* new RateLimited({
          message: `You have ${settings.batchMaxInProgress} batches unfinished, the most allowed at once; ` +
            "wait for one to end.",
          retryAfterSeconds: 60
        })
      }
      const keyHash = yield* tokenDigest(sql, principal.tokenId)
      if (keyHash === undefined) return yield* Effect.die("The caller's token has no stored digest.")
      return keyHash
    })

  const sessionCaller = makeSessionCaller(yield* Sessions, yield* Tokens, auth)
  // A key (`x-api-key` or Bearer) decides; with none, the console's session (its playground token, `SessionCaller.ts`).
  const principalOf = (request: HttpServerRequest.HttpServerRequest) => {
    const key = credentialOf("messages", request)
    const viaSession = key === undefined ? sessionCaller(request) : undefined
    return viaSession ?? auth.authenticate(key, clientAddressOf(request))
  }
  const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")
  const origin = (request: HttpServerRequest.HttpServerRequest) => gatewayOriginOf(request, settings.publicUrl)

  const create = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const body = yield* readJsonObject(request, settings.maxBodyBytes)
      const decoded = decodeMessageBatchCreate(body)
      if (Result.isFailure(decoded)) return yield* decoded.failure
      const keyHash = yield* admit(principal)
      const batch = yield* insertBatch(sql, {
        publicId: newBatchId("msgbatch_"),
        api: "anthropic",
        userId: principal.userId,
        tokenId: principal.tokenId,
        keyHash,
        clientAddress: clientAddressOf(request),
        endpoint: "/v1/messages",
        status: "in_progress",
        windowMillis: settings.batchWindowMillis
      }, decoded.success.map((line) => JSON.stringify({ custom_id: line.custom_id, body: line.params })))
      yield* runner.wake
      const view = yield* selectBatch(sql, "anthropic", batch.publicId, principal.userId)
      return HttpServerResponse.jsonUnsafe(messageBatchOf(view, origin(request)))
    }).pipe(respondWith(render))

  const retrieve = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const view = yield* selectBatch(sql, "anthropic", yield* idParam, principal.userId)
      return HttpServerResponse.jsonUnsafe(messageBatchOf(view, origin(request)))
    }).pipe(respondWith(render))

  const list = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const query = new URL(request.url, "http://gateway").searchParams
      const limit = yield* limitOf(query.get("limit"))
      const beforeId = query.get("before_id") ?? undefined
      const afterId = query.get("after_id") ?? undefined
      if (beforeId !== undefined && afterId !== undefined) {
        return yield* new InvalidRequest({ message: "Give before_id or after_id, not both.", param: "before_id" })
      }
      const page = yield* selectBatchPage(sql, "anthropic", principal.userId, { beforeId, afterId, limit })
      const data = page.views.map((view) => messageBatchOf(view, origin(request)))
      return HttpServerResponse.jsonUnsafe({
        data,
        has_more: page.hasMore,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null
      })
    }).pipe(respondWith(render))

  const cancel = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const id = yield* idParam
      const found = yield* selectBatch(sql, "anthropic", id, principal.userId)
      yield* requestCancel(sql, found.batch.id)
      yield* runner.wake
      const view = yield* selectBatch(sql, "anthropic", id, principal.userId)
      return HttpServerResponse.jsonUnsafe(messageBatchOf(view, origin(request)))
    }).pipe(respondWith(render))

  const remove = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const found = yield* selectBatch(sql, "anthropic", yield* idParam, principal.userId)
      if (!(yield* deleteEnded(sql, found.batch.id))) {
        return yield* new InvalidRequest({
          message: `Batch ${found.batch.publicId} has not ended; cancel it and wait for it to end before deleting it.`,
          param: "message_batch_id"
        })
      }
      return HttpServerResponse.jsonUnsafe({ id: found.batch.publicId, type: "message_batch_deleted" })
    }).pipe(respondWith(render))

  const results = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const { batch } = yield* selectBatch(sql, "anthropic", yield* idParam, principal.userId)
      if (batch.endedAt === null) {
        return yield* new InvalidRequest({
          message: `Batch ${batch.publicId} is still processing; its results are ready once it has ended.`,
          param: "message_batch_id"
        })
      }
      const lines = Stream.paginate(0, (from: number) =>
        Effect.map(selectFinishedLines(sql, batch.id, from, RESULT_PAGE), (page) =>
          [
            page.map((line) =>
              encoder.encode(encodeMessageBatchResult({
                customId: (JSON.parse(line.line) as { readonly custom_id: string }).custom_id,
                state: line.state === "pending" || line.state === "running" ? "errored" : line.state,
                statusCode: line.statusCode,
                result: line.result,
                requestId: lineRequestId(batch.publicId, line.lineIndex)
              }))
            ),
            page.length < RESULT_PAGE ? Option.none<number>() : Option.some(from + RESULT_PAGE)
          ] as const))
      return HttpServerResponse.stream(lines, { contentType: "application/x-jsonl" })
    }).pipe(respondWith(render))

  const bearerOf = bearerOrSession(auth, sessionCaller)

  const openAiCreate = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* bearerOf(request)
      const body = yield* readJsonObject(request, BATCH_CREATE_BODY_LIMIT)
      const decoded = decodeBatchCreate(body)
      if (Result.isFailure(decoded)) return yield* decoded.failure
      const { inputFileId, endpoint, metadata } = decoded.success
      const content = yield* files.content(principal.userId, inputFileId).pipe(
        Effect.catchTag("NotFound", (error) => Effect.fail(new NotFound({ ...error, param: "input_file_id" })))
      )
      if (content.file.purpose !== "batch") {
        return yield* new InvalidRequest({
          message: `File ${inputFileId} has purpose "${content.file.purpose}"; a batch's input needs purpose "batch".`,
          param: "input_file_id"
        })
      }
      // The file is within the upload limit (`file_max_bytes`); its lines are checked before anything is stored.
      const lines = yield* content.stream.pipe(Stream.decodeText, Stream.splitLines, Stream.runCollect)
      const validated = validateBatchInput(lines, endpoint, new Set(channels.models(principal)))
      const keyHash = yield* admit(principal)
      const batch = yield* insertBatch(sql, {
        publicId: newBatchId("batch_"),
        api: "openai",
        userId: principal.userId,
        tokenId: principal.tokenId,
        keyHash,
        clientAddress: clientAddressOf(request),
        endpoint,
        status: Result.isSuccess(validated) ? "in_progress" : "failed",
        inputFileId,
        metadata,
        errors: Result.isFailure(validated) ? validated.failure : null,
        windowMillis: settings.batchWindowMillis
      }, Result.isSuccess(validated) ? validated.success.map((line) => JSON.stringify(line)) : [])
      if (Result.isSuccess(validated)) yield* runner.wake
      return HttpServerResponse.jsonUnsafe(
        openAiBatchOf(yield* selectBatch(sql, "openai", batch.publicId, principal.userId))
      )
    }).pipe(respondWith(encodeOpenAiError))

  const openAiRetrieve = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* bearerOf(request)
      return HttpServerResponse.jsonUnsafe(
        openAiBatchOf(yield* selectBatch(sql, "openai", yield* idParam, principal.userId))
      )
    }).pipe(respondWith(encodeOpenAiError))

  const openAiList = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* bearerOf(request)
      const query = new URL(request.url, "http://gateway").searchParams
      const limitText = query.get("limit")
      const limit = limitText === null ? 20 : Number(limitText)
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
        return yield* new InvalidRequest({ message: "limit must be an integer from 1 to 100.", param: "limit" })
      }
      const page = yield* selectBatchPage(sql, "openai", principal.userId, {
        afterId: query.get("after") ?? undefined,
        limit
      })
      const data = page.views.map(openAiBatchOf)
      return HttpServerResponse.jsonUnsafe({
        object: "list",
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.hasMore
      })
    }).pipe(respondWith(encodeOpenAiError))

  const openAiCancel = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* bearerOf(request)
      const id = yield* idParam
      const found = yield* selectBatch(sql, "openai", id, principal.userId)
      yield* requestCancel(sql, found.batch.id)
      yield* runner.wake
      return HttpServerResponse.jsonUnsafe(openAiBatchOf(yield* selectBatch(sql, "openai", id, principal.userId)))
    }).pipe(respondWith(encodeOpenAiError))

  yield* router.add("POST", "/v1/batches", openAiCreate)
  yield* router.add("GET", "/v1/batches", openAiList)
  yield* router.add("GET", "/v1/batches/:id", openAiRetrieve)
  yield* router.add("POST", "/v1/batches/:id/cancel", openAiCancel)
  yield* router.add("POST", "/v1/messages/batches", create)
  yield* router.add("GET", "/v1/messages/batches", list)
  yield* router.add("GET", "/v1/messages/batches/:id", retrieve)
  yield* router.add("DELETE", "/v1/messages/batches/:id", remove)
  yield* router.add("POST", "/v1/messages/batches/:id/cancel", cancel)
  yield* router.add("GET", "/v1/messages/batches/:id/results", results)
}))
