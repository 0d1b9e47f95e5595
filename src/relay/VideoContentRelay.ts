/**
 * The video content download (`GET /v1/videos/{task_id}/content`): the bytes
 * of a completed video task, fetched from the vendor that made them and
 * handed on as they arrive. Not billed (docs/ARCHITECTURE.md, "The billed pipeline"), but
 * the same path as the billed calls: the candidate is the task's own channel
 * and key (the vendor holds the bytes there, so no other channel can serve
 * them); the call is made by the channel type's video adapter and wire
 * (`tasks/VideoCalls.ts`: URL, key, the vendor's content call, the
 * channel's timeouts), as one `failover` attempt, so its outcome reaches the
 * channel's health (`ChannelRouter.report`) as every relay's does: a 200/206
 * counts as a success, a timeout, a lost connection or a 5xx towards a
 * cooldown, a refused key disables it — unless no key was sent (a vendor's
 * signed content URL refuses the URL, not the key). Content the vendor no
 * longer holds (404/410) is the caller's `rejected` 400 and tells the health
 * state nothing.
 *
 * A content URL the vendor handed over and that is fetched without the key
 * (Ark's `video_url`, Kling's `videos[].url`) goes through the SSRF guard
 * (`upstreams/transport/SafeFetch.ts` `safeOpen`, `VendorUrls.ts`): public
 * addresses only, but the channel's own host and `media_allow_hosts`;
 * redirects followed and checked again; at most `video_content_max_bytes`
 * (512 MiB) within `video_content_timeout_ms` (10 min). A URL it refuses is a
 * `bad-body` failure of the channel. A call sent with the key goes only to the
 * channel's own origin (the path below its base URL, or a URL the wire checked
 * to be on it: Gemini's) through the upstream client, capped at the same size.
 *
 * The bytes are served as what they are (`http/SafeMedia.ts`): their type is
 * sniffed from the first bytes before anything is sent, never the vendor's
 * `Content-Type`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Stream } from "effect"
import { InvalidRequest, UpstreamFailed } from "../errors/GatewayError.ts"
import { declaredMediaType, sniffRead } from "../http/SafeMedia.ts"
import { type AttemptOutcome, type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import type { Task } from "../tasks/TaskStore.ts"
import { UpstreamClient } from "../upstreams/transport/UpstreamClient.ts"
import { type SafeFetchError, safeOpen } from "../upstreams/transport/SafeFetch.ts"
import { vendorFetchFailure, vendorUrlHosts } from "../upstreams/transport/VendorUrls.ts"
import { sendVideoCall, videoWireOf } from "../tasks/VideoCalls.ts"
import { Catalog } from "../storage/Catalog.ts"
import { failover } from "./Failover.ts"

/** The headers of a content answer that describe its bytes; the type is sniffed instead (`VideoContent`). */
const BYTE_HEADERS = ["content-length", "content-range", "accept-ranges", "last-modified", "etag"]

/** The caller's message for content the vendor no longer holds. */
const GONE = "The video is no longer held by the upstream."

/**
 * The vendor's answer as the caller is to get it: the status (200, or 206 for
 * a range), the headers that describe the bytes (`content-length` dropped
 * when the vendor compressed the body; never the vendor's `content-type`),
 * the type the bytes are served as (`mediaType`: sniffed from their first
 * bytes, `video/mp4`, `video/webm` or `video/quicktime`, else
 * `application/octet-stream`; for a range that starts past the first byte,
 * the vendor's type when it is one of those), the length in bytes when known,
 * and the body, read from the vendor one chunk at a time as it is pulled (the
 * vendor call is aborted when the stream ends early or fails: `timeout`,
 * `stream-broken`, or a body past the size cap).
 *
 * @category models
 */
export interface VideoContent {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly mediaType: string
  readonly contentLength: number | undefined
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
  /** Ends the upstream call without reading the rest of the body (a `HEAD`). */
  readonly abort: () => void
}

/** An accepted vendor answer, whichever way it was opened. */
interface Opened {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly read: Effect.Effect<Uint8Array | undefined, UpstreamFailed>
  readonly abort: () => void
}

/** Whether the answer's bytes start at the file's first byte (a whole file, or a range from 0). */
const startsAtZero = (answer: Opened): boolean =>
  answer.status === 200 || /^bytes\s+0-/i.test(answer.headers["content-range"] ?? "")

/** The caller-facing part of an accepted answer (see `VideoContent`); reads the first bytes to sniff them. */
const contentOf = (answer: Opened): Effect.Effect<VideoContent, UpstreamFailed> =>
  Effect.gen(function* () {
    const headers: Record<string, string> = {}
    for (const name of BYTE_HEADERS) {
      const value = answer.headers[name]
      if (value !== undefined && value.length <= 200) headers[name] = value
    }
    if ((answer.headers["content-encoding"] ?? "identity") !== "identity") delete headers["content-length"]
    const length = headers["content-length"] === undefined ? undefined : Number(headers["content-length"])
    const sniffed = startsAtZero(answer)
      ? yield* sniffRead("video", answer.read).pipe(Effect.tapError(() => Effect.sync(answer.abort)))
      : { mediaType: declaredMediaType("video", answer.headers["content-type"]), read: answer.read }
    const body = Stream.unfold(
      undefined,
      () => Effect.map(sniffed.read, (chunk) => chunk === undefined ? undefined : [chunk, undefined] as const)
    ).pipe(Stream.ensuring(Effect.sync(answer.abort)))
    return {
      status: answer.status,
      headers,
      mediaType: sniffed.mediaType,
      contentLength: length !== undefined && Number.isSafeInteger(length) ? length : undefined,
      body,
      abort: answer.abort
    }
  })

/**
 * `read` failing with a `bad-body` `UpstreamFailed` of `channelId` (and the
 * call aborted) once more than `maxBytes` came.
 */
const capped = (
  read: Effect.Effect<Uint8Array | undefined, UpstreamFailed>,
  maxBytes: number,
  abort: () => void,
  channelId: number
): Effect.Effect<Uint8Array | undefined, UpstreamFailed> => {
  let received = 0
  return Effect.flatMap(read, (chunk) => {
    received += chunk?.byteLength ?? 0
    if (received <= maxBytes) return Effect.succeed(chunk)
    abort()
    return Effect.fail(
      new UpstreamFailed({
        kind: "bad-body",
        status: 0,
        message: `The video is larger than the limit of ${maxBytes} bytes.`,
        channelId
      })
    )
  })
}

/** @category services */
export class VideoContentRelay extends Context.Service<VideoContentRelay, {
  /**
   * Opens the bytes of `task` (a video task of the caller's: the route checks
   * the owner), forwarding `range` (a single `bytes=` range, already checked)
   * when given. Fails with `InvalidRequest` (param `task_id`) when the task is
   * not completed or has no result, with a 503 `UpstreamFailed` (`server`)
   * when its channel, wire or key is no longer configured, with a `rejected`
   * `UpstreamFailed` when the vendor no longer holds the bytes (404/410), and
   * with the vendor's other failures as its wire classifies them.
   */
  readonly open: (task: Task, range: string | undefined) => Effect.Effect<VideoContent, InvalidRequest | UpstreamFailed>
}>()("sluice/relay/VideoContentRelay") {
  /** Needs the `ChannelRouter` (health), the `Catalog`, the `UpstreamClient` and the `GatewaySettings`. */
  static readonly layer = Layer.effect(
    VideoContentRelay,
    Effect.gen(function* () {
      const router = yield* ChannelRouter
      const catalog = yield* Catalog
      const client = yield* UpstreamClient
      const settings = yield* GatewaySettings

      const open = Effect.fn("VideoContentRelay.open")(function* (task: Task, range: string | undefined) {
        const result = task.result
        const upstreamId = task.upstreamId
        if (task.status !== "completed" || result === null || upstreamId === null) {
          return yield* new InvalidRequest({
            message: `The video is not ready: the task is ${task.status}.`,
            param: "task_id"
          })
        }
        const channel = catalog.snapshot().channels.get(task.channelId)
        const wire = channel === undefined ? undefined : videoWireOf(channel)
        const key = channel?.keys.find((candidate) => candidate.position === task.keyPosition)
        if (channel === undefined || wire === undefined || key === undefined) {
          return yield* new UpstreamFailed({
            kind: "server",
            status: 503,
            message: "The task's channel is no longer configured."
          })
        }
        const candidate: Candidate = { channel, key, upstreamModel: task.upstreamModel }
        const call = wire.content(upstreamId, { status: "completed", content: result })
        const vendorUrl = /^https?:\/\//i.test(call.path) && !result.withKey
        const rangeHeaders: Record<string, string> = range === undefined ? {} : { range }
        const classify = (status: number) => wire.classifyError(status, "")

        /** A vendor-given URL fetched without the key: through the SSRF guard. */
        const openVendorUrl = (chosen: Candidate): Effect.Effect<Opened, UpstreamFailed> => {
          const failure = (error: SafeFetchError) => vendorFetchFailure(error, chosen.channel.id, GONE, classify)
          return safeOpen(call.path, {
            maxBytes: settings.videoContentMaxBytes,
            timeoutMs: settings.videoContentTimeoutMs,
            allowHosts: vendorUrlHosts(chosen.channel.baseUrl, settings.mediaAllowHosts),
            headers: rangeHeaders
          }).pipe(
            Effect.tapError((error) =>
              error.reason === "http-status" ? Effect.void : Effect.logWarning("Vendor video URL refused").pipe(
                Effect.annotateLogs({ channel: chosen.channel.name, reason: error.reason })
              )
            ),
            Effect.map((opened) => ({
              status: opened.status,
              headers: opened.headers,
              read: Effect.mapError(opened.read, failure),
              abort: opened.abort
            })),
            Effect.mapError(failure)
          )
        }

        /** A call on the channel's own origin, with the key where the wire says so. */
        const sendOwnCall = (chosen: Candidate): Effect.Effect<Opened, UpstreamFailed> =>
          Effect.gen(function* () {
            const answer = yield* sendVideoCall(
              client,
              settings,
              { channel: chosen.channel, key: chosen.key.key },
              call,
              { withKey: result.withKey, headers: rangeHeaders }
            )
            if (answer.status === 200 || answer.status === 206) {
              const announced = Number(answer.headers["content-length"] ?? Number.NaN)
              if (Number.isFinite(announced) && announced > settings.videoContentMaxBytes) {
                answer.abort()
                return yield* new UpstreamFailed({
                  kind: "bad-body",
                  status: answer.status,
                  message: `The video is larger than the limit of ${settings.videoContentMaxBytes} bytes.`,
                  channelId: chosen.channel.id
                })
              }
              return {
                status: answer.status,
                headers: answer.headers,
                read: capped(answer.read, settings.videoContentMaxBytes, answer.abort, chosen.channel.id),
                abort: answer.abort
              }
            }
            answer.abort()
            const gone = answer.status === 404 || answer.status === 410
            const classified = classify(answer.status)
            return yield* new UpstreamFailed({
              kind: gone ? "rejected" : classified.kind,
              status: answer.status,
              message: gone ? GONE : classified.message,
              channelId: chosen.channel.id
            })
          })

        const attempt = vendorUrl ? openVendorUrl : sendOwnCall
        // A content URL sent without the key cannot tell anything about the key.
        const report = (chosen: Candidate, outcome: AttemptOutcome) =>
          outcome._tag === "KeyRejected" && !result.withKey ? Effect.void : router.report(chosen, outcome)
        const accepted = yield* failover({
          candidates: [candidate],
          maxAttempts: 1,
          deadline: (yield* Clock.currentTimeMillis) + settings.requestDeadlineMs,
          attempt,
          report,
          // Not billed: no usage row for a failed download; the failure is logged below.
          logFailed: () => Effect.void
        }).pipe(
          Effect.tapError((error) =>
            error.kind === "rejected" ? Effect.void : Effect.logWarning("Video content download failed").pipe(
              Effect.annotateLogs({ channel: channel.name, status: error.status, kind: error.kind })
            )
          )
        )
        return yield* contentOf(accepted.value)
      })

      return VideoContentRelay.of({ open })
    })
  )
}
