/**
 * OpenAI's Files API (OpenAI API reference, "Files"), for the caller's own files (`files/FileStore.ts`):
 *
 * - `POST /v1/files` (multipart: `file`, `purpose` one of `assistants`, `batch`, `user_data`, `vision`, `evals`,
 *   optional `expires_after[anchor]=created_at` and `expires_after[seconds]` 3600 to 2592000, as the `openai` SDK
 *   encodes `expires_after`) → the File object. The file's bytes are stored as they arrive (Effect's multipart
 *   stream, `effect/http/Multipart`), never whole in memory. Past `settings.file_max_bytes`: 413, past the user's
 *   `settings.file_storage_per_user_bytes`: 400, both with `param: "file"` and nothing kept; more than
 *   `settings.file_max_uploads_in_flight` of one user at once on one instance: 429.
 * - `GET /v1/files` (`after`, `limit` 1 to 10,000, default 10,000, `order` `asc`/`desc`, default `desc`, `purpose`)
 *   → `{object: "list", data, first_id, last_id, has_more}`.
 * - `GET /v1/files/{file_id}` → the File object; `GET /v1/files/{file_id}/content` → its bytes, streamed
 *   (`application/octet-stream`, as an attachment, `nosniff`, a sandboxing CSP); `DELETE /v1/files/{file_id}` →
 *   `{id, object: "file", deleted: true}`.
 *
 * The caller's key comes as `Authorization: Bearer` (with no key, the console's browser session: `SessionCaller.ts`,
 * same-origin proof on a change; the session user's files, whichever key uploaded them); an unknown, another user's, an expired or a malformed file id
 * answers the same 404 (`No such File object: <id>`, OpenAI's wording; an id longer than the router's longest path
 * parameter, 100 characters, gets the 404 of an unknown route, also `not_found`). Files are not billed; an upload counts
 * against the key's and the user's request rate. Errors leave in the gateway envelope.
 *
 * The body deadline (`SLUICE_BODY_TIMEOUT_SECONDS`) is, for an upload, the longest wait for the next piece of the
 * body (an upload of 200 MiB may take longer than the deadline in all, never a pause that long); the whole upload
 * must end within `UPLOAD_DEADLINE_SECONDS`.
 *
 * @since 0.3.0
 */
import { ByteSize, Duration, Effect, Stream } from "effect"
import { HttpIncomingMessage, HttpRouter, type HttpServerRequest, HttpServerResponse, Multipart } from "effect/http"
import { type GatewayError, InvalidRequest, PayloadTooLarge, RequestTimeout } from "../errors/GatewayError.ts"
import { isFileId, isUploadPurpose, UPLOAD_PURPOSES } from "../files/FileObject.ts"
import { EXPIRES_AFTER_RANGE, FileStore, type StagedFile } from "../files/FileStore.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { BodyTimeout } from "../http/BodyDeadline.ts"
import { headerOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { limitSubjects } from "../relay/text/Relay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { RateLimiter } from "../services/RateLimiter.ts"
import { Catalog } from "../storage/Catalog.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { bearerOrSession, makeSessionCaller } from "./SessionCaller.ts"

/** The longest file name kept, in UTF-16 code units; a longer one is refused (400, `param: "file"`). @category constants */
export const MAX_FILENAME_LENGTH = 512

/** Parts one upload form may have (the SDK sends four). */
const MAX_PARTS = 32

/** Bytes one text field of the form may hold. */
const MAX_FIELD_BYTES = 16 * 1024

/** Bytes the form may add around its file (part headers, the text fields). */
const FORM_OVERHEAD_BYTES = MAX_PARTS * (MAX_FIELD_BYTES + 1024)

/** The largest `limit` of the list, and its default (OpenAI's). @category constants */
export const MAX_LIST_LIMIT = 10_000

/**
 * A file name as it is kept: NUL (which PostgreSQL text cannot hold) and unpaired surrogates (which UTF-8 cannot
 * encode) become U+FFFD. `undefined` when it is longer than `MAX_FILENAME_LENGTH`.
 *
 * @category constructors
 */
export const cleanFilename = (name: string): string | undefined =>
  name.length > MAX_FILENAME_LENGTH ? undefined : name.replaceAll("\u0000", "\uFFFD").toWellFormed()

/** A multipart failure as the gateway's error. */
const fromMultipart = (error: Multipart.MultipartError, maxFileBytes: number): GatewayError => {
  switch (error.reason._tag) {
    case "FileTooLarge":
      return new PayloadTooLarge({ limitBytes: maxFileBytes, param: "file" })
    case "BodyTooLarge":
      return new PayloadTooLarge({ limitBytes: maxFileBytes + FORM_OVERHEAD_BYTES })
    case "FieldTooLarge":
      return new InvalidRequest({ message: `A form field is longer than ${MAX_FIELD_BYTES} bytes.`, param: "" })
    case "TooManyParts":
      return new InvalidRequest({ message: `The form has more than ${MAX_PARTS} parts.`, param: "" })
    case "Parse":
      return new InvalidRequest({ message: "The multipart body could not be parsed.", param: "" })
    case "InternalError":
      return new InvalidRequest({ message: "The multipart body could not be read.", param: "" })
  }
}

/** `stream` failing with `RequestTimeout` when a pull waits longer than `millis` (0: no limit). */
const idleLimited = <A, E>(stream: Stream.Stream<A, E>, millis: number): Stream.Stream<A, E | RequestTimeout> =>
  millis <= 0 ? stream : stream.pipe(
    Stream.timeoutOrElse({
      duration: Duration.millis(millis),
      orElse: () => Stream.fail(new RequestTimeout({ seconds: Math.round(millis / 100) / 10 }))
    })
  )

/** The `expires_after` of a form (`expires_after[anchor]`, `expires_after[seconds]`): its seconds, or none. */
const expiresAfterOf = (fields: ReadonlyMap<string, string>): Effect.Effect<number | undefined, InvalidRequest> => {
  const anchor = fields.get("expires_after[anchor]")
  const seconds = fields.get("expires_after[seconds]")
  if (anchor === undefined && seconds === undefined) return Effect.succeed(undefined)
  if (anchor !== "created_at") {
    return Effect.fail(
      new InvalidRequest({
        message: "expires_after[anchor] must be created_at.",
        param: "expires_after[anchor]"
      })
    )
  }
  const value = seconds === undefined || !/^\d{1,10}$/.test(seconds) ? Number.NaN : Number(seconds)
  if (!(value >= EXPIRES_AFTER_RANGE.min && value <= EXPIRES_AFTER_RANGE.max)) {
    return Effect.fail(
      new InvalidRequest({
        message:
          `expires_after[seconds] must be a whole number of seconds from ${EXPIRES_AFTER_RANGE.min} to ${EXPIRES_AFTER_RANGE.max}.`,
        param: "expires_after[seconds]"
      })
    )
  }
  return Effect.succeed(value)
}

const badPurpose = (purpose: string | undefined) =>
  new InvalidRequest({
    message: purpose === undefined
      ? `purpose is required: one of ${UPLOAD_PURPOSES.join(", ")}.`
      : `purpose must be one of ${UPLOAD_PURPOSES.join(", ")}.`,
    param: "purpose"
  })

/** The `GET /v1/files` query: OpenAI's `after`, `limit`, `order` and `purpose`. */
const listQueryOf = (url: string) => {
  const params = new URL(url, "http://localhost").searchParams
  const after = params.get("after") ?? undefined
  if (after !== undefined && !isFileId(after)) {
    return Effect.fail(new InvalidRequest({ message: "after must be a file id from a previous page.", param: "after" }))
  }
  const limitText = params.get("limit")
  const limit = limitText === null ? MAX_LIST_LIMIT : /^\d{1,6}$/.test(limitText) ? Number(limitText) : Number.NaN
  if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) {
    return Effect.fail(
      new InvalidRequest({ message: `limit must be a whole number from 1 to ${MAX_LIST_LIMIT}.`, param: "limit" })
    )
  }
  const order = params.get("order") ?? "desc"
  if (order !== "asc" && order !== "desc") {
    return Effect.fail(new InvalidRequest({ message: "order must be asc or desc.", param: "order" }))
  }
  const purpose = params.get("purpose") ?? undefined
  return Effect.succeed({ after, limit, order, purpose: purpose === "" ? undefined : purpose } as const)
}

/**
 * `POST /v1/files`, `GET /v1/files`, `GET /v1/files/{file_id}`, `GET /v1/files/{file_id}/content` and
 * `DELETE /v1/files/{file_id}`.
 *
 * @category routes
 */
export const FileRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const files = yield* FileStore
  const limiter = yield* RateLimiter
  const catalog = yield* Catalog
  const settings = yield* GatewaySettings
  const maxFileBytes = settings.fileMaxBytes

  // A Bearer key, or with none the console's session (`SessionCaller.ts`): a file is its user's, whichever key.
  const principalOf = bearerOrSession(auth, makeSessionCaller(yield* Sessions, yield* Tokens, auth))

  const fileId = Effect.map(HttpRouter.params, (params) => params.file_id ?? "")

  const create = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      const permit = yield* limiter.acquire(
        limitSubjects(principal, catalog.snapshot().groups.get(principal.group)?.limits)
      )
      yield* permit.release(0)
      const contentType = headerOf(httpRequest, "content-type") ?? ""
      if (!/^multipart\/form-data\s*;/i.test(contentType)) {
        return yield* new InvalidRequest({ message: "The request body must be multipart/form-data.", param: "" })
      }
      const declared = Number(headerOf(httpRequest, "content-length") ?? "NaN")
      if (Number.isFinite(declared) && declared > maxFileBytes + FORM_OVERHEAD_BYTES) {
        return yield* new PayloadTooLarge({ limitBytes: maxFileBytes, param: "file" })
      }
      const idleMillis = yield* BodyTimeout
      const fields = new Map<string, string>()
      let staged: StagedFile | undefined
      const parts = idleLimited(
        httpRequest.multipartStream.pipe(Stream.mapError((error) => fromMultipart(error, maxFileBytes))),
        idleMillis
      )
      const onPart = (part: Multipart.Part): Effect.Effect<void, GatewayError> => {
        if (part._tag === "Field") {
          fields.set(part.key, part.value)
          return Effect.void
        }
        const content = idleLimited(
          part.content.pipe(Stream.mapError((error) => fromMultipart(error, maxFileBytes))),
          idleMillis
        )
        if (part.key !== "file") return Stream.runDrain(content)
        return Effect.gen(function* () {
          if (staged !== undefined) {
            return yield* new InvalidRequest({ message: "The form has more than one file.", param: "file" })
          }
          const purpose = fields.get("purpose")
          if (purpose !== undefined && !isUploadPurpose(purpose)) return yield* badPurpose(purpose)
          const filename = cleanFilename(part.name)
          if (filename === undefined) {
            return yield* new InvalidRequest({
              message: `The file's name is longer than ${MAX_FILENAME_LENGTH} characters.`,
              param: "file"
            })
          }
          if (filename === "") {
            yield* Stream.runDrain(content)
            return yield* new InvalidRequest({ message: "The file has no name.", param: "file" })
          }
          staged = yield* files.upload(principal.userId, filename, content)
        })
      }
      const stored = Effect.gen(function* () {
        yield* Stream.runForEach(parts, onPart).pipe(
          Effect.provideService(Multipart.MaxParts, MAX_PARTS),
          Effect.provideService(Multipart.MaxFieldSize, ByteSize.bytes(MAX_FIELD_BYTES)),
          Effect.provideService(Multipart.MaxFileSize, ByteSize.bytes(maxFileBytes)),
          // Every part with a file name is a file, whatever its type (an `application/json` one too).
          Effect.provideService(Multipart.FieldMimeTypes, []),
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxFileBytes + FORM_OVERHEAD_BYTES))
        )
        if (staged === undefined) {
          return yield* new InvalidRequest({ message: "file is required: the form has no file part.", param: "file" })
        }
        const purpose = fields.get("purpose")
        if (purpose === undefined || !isUploadPurpose(purpose)) return yield* badPurpose(purpose)
        const expiresAfterSeconds = yield* expiresAfterOf(fields)
        return yield* files.commit(staged, { purpose, expiresAfterSeconds })
      }).pipe(
        Effect.onExit((exit) => exit._tag === "Success" || staged === undefined ? Effect.void : files.discard(staged))
      )
      return HttpServerResponse.jsonUnsafe(yield* stored)
    }).pipe(respondWith(encodeOpenAiError))

  const list = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      const query = yield* listQueryOf(httpRequest.url)
      return HttpServerResponse.jsonUnsafe(yield* files.list(principal.userId, query))
    }).pipe(respondWith(encodeOpenAiError))

  const retrieve = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      return HttpServerResponse.jsonUnsafe(yield* files.get(principal.userId, yield* fileId))
    }).pipe(respondWith(encodeOpenAiError))

  const content = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      const found = yield* files.content(principal.userId, yield* fileId)
      return HttpServerResponse.stream(found.stream, {
        contentType: "application/octet-stream",
        contentLength: found.file.bytes,
        // A caller's bytes, never rendered on the gateway's origin (docs/OPERATING.md, "Security").
        headers: {
          "content-disposition": `attachment; filename*=UTF-8''${encodeURIComponent(found.file.filename)}`,
          "x-content-type-options": "nosniff",
          "content-security-policy": "default-src 'none'; sandbox"
        }
      })
    }).pipe(respondWith(encodeOpenAiError))

  const remove = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      return HttpServerResponse.jsonUnsafe(yield* files.remove(principal.userId, yield* fileId))
    }).pipe(respondWith(encodeOpenAiError))

  yield* router.add("POST", "/v1/files", create)
  yield* router.add("GET", "/v1/files", list)
  yield* router.add("GET", "/v1/files/:file_id", retrieve)
  yield* router.add("GET", "/v1/files/:file_id/content", content)
  yield* router.add("DELETE", "/v1/files/:file_id", remove)
}))
