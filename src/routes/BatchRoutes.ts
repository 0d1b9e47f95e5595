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
 * Every line runs through the gateway's own handler as the key's own request (`batches/BatchRunner.ts`). Another
 * user's batch id answers 404, as a missing one does.
 *
 * @since 0.4.0
 */
import { Effect, Option, Stream } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { InvalidRequest } from "../errors/GatewayError.ts"
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
import {
  deleteEnded,
  insertBatch,
  requestCancel,
  selectBatch,
  selectBatchPage,
  selectFinishedLines,
  tokenDigest
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

/**
 * The Message Batches routes.
 *
 * @category routes
 */
export const BatchRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const settings = yield* GatewaySettings
  const sql = yield* SqlClient.SqlClient
  const runner = yield* BatchRunner
  const render = formatOf("anthropic").encodeError
  const encoder = new TextEncoder()

  const principalOf = (request: HttpServerRequest.HttpServerRequest) =>
    auth.authenticate(credentialOf("messages", request), clientAddressOf(request))
  const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")
  const origin = (request: HttpServerRequest.HttpServerRequest) => gatewayOriginOf(request, settings.publicUrl)

  const create = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(request)
      const body = yield* readJsonObject(request, settings.maxBodyBytes)
      const decoded = decodeMessageBatchCreate(body)
      if (!decoded.ok) return yield* decoded.error
      const keyHash = yield* tokenDigest(sql, principal.tokenId)
      if (keyHash === undefined) return yield* Effect.die("The caller's token has no stored digest.")
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
      }, decoded.value.map((line) => JSON.stringify({ custom_id: line.custom_id, body: line.params })))
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

  yield* router.add("POST", "/v1/messages/batches", create)
  yield* router.add("GET", "/v1/messages/batches", list)
  yield* router.add("GET", "/v1/messages/batches/:id", retrieve)
  yield* router.add("DELETE", "/v1/messages/batches/:id", remove)
  yield* router.add("POST", "/v1/messages/batches/:id/cancel", cancel)
  yield* router.add("GET", "/v1/messages/batches/:id/results", results)
}))
