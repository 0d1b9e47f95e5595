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
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Stream } from "effect"
import { InvalidRequest, UpstreamFailed } from "../errors/GatewayError.ts"
import { type AttemptOutcome, type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import type { Task } from "../tasks/TaskStore.ts"
import { UpstreamClient, type UpstreamResponse } from "../upstreams/transport/UpstreamClient.ts"
import { sendVideoCall, videoWireOf } from "../tasks/VideoCalls.ts"
import { Catalog } from "../storage/Catalog.ts"
import { failover } from "./Failover.ts"

/** The headers of a content answer the caller gets: what the bytes are, never the vendor's other headers. */
const CONTENT_HEADERS = ["content-type", "content-length", "content-range", "accept-ranges", "last-modified", "etag"]

/**
 * The vendor's answer as the caller is to get it: the status (200, or 206 for
 * a range), the headers that describe the bytes (`content-type` defaulted to
 * `video/mp4`; `content-length` dropped when the vendor compressed the body),
 * the length in bytes when known, and the body, read from the vendor one chunk
 * at a time as it is pulled (the vendor call is aborted when the stream ends
 * early or fails: `timeout`, `stream-broken`).
 *
 * @category models
 */
export interface VideoContent {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly contentLength: number | undefined
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
  /** Ends the upstream call without reading the body (a `HEAD`). */
  readonly abort: () => void
}

/** The caller-facing part of an accepted answer (see `VideoContent`). */
const contentOf = (answer: UpstreamResponse): VideoContent => {
  const headers: Record<string, string> = {}
  for (const name of CONTENT_HEADERS) {
    const value = answer.headers[name]
    if (value !== undefined && value.length <= 200) headers[name] = value
  }
  if ((answer.headers["content-encoding"] ?? "identity") !== "identity") delete headers["content-length"]
  headers["content-type"] ??= "video/mp4"
  const length = headers["content-length"] === undefined ? undefined : Number(headers["content-length"])
  const body = Stream.unfold(
    undefined,
    () => Effect.map(answer.read, (chunk) => chunk === undefined ? undefined : [chunk, undefined] as const)
  ).pipe(Stream.ensuring(Effect.sync(answer.abort)))
  return {
    status: answer.status,
    headers,
    contentLength: length !== undefined && Number.isSafeInteger(length) ? length : undefined,
    body,
    abort: answer.abort
  }
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
        const attempt = (chosen: Candidate): Effect.Effect<UpstreamResponse, UpstreamFailed> =>
          Effect.gen(function* () {
            const answer = yield* sendVideoCall(
              client,
              settings,
              { channel: chosen.channel, key: chosen.key.key },
              wire.content(upstreamId, { status: "completed", content: result }),
              { withKey: result.withKey, headers: range === undefined ? {} : { range } }
            )
            if (answer.status === 200 || answer.status === 206) return answer
            answer.abort()
            const gone = answer.status === 404 || answer.status === 410
            const classified = wire.classifyError(answer.status, "")
            return yield* new UpstreamFailed({
              kind: gone ? "rejected" : classified.kind,
              status: answer.status,
              message: gone ? "The video is no longer held by the upstream." : classified.message,
              channelId: chosen.channel.id
            })
          })
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
          logFailed: () => undefined
        }).pipe(
          Effect.tapError((error) =>
            error.kind === "rejected" ? Effect.void : Effect.logWarning("Video content download failed").pipe(
              Effect.annotateLogs({ channel: channel.name, status: error.status, kind: error.kind })
            )
          )
        )
        return contentOf(accepted.value)
      })

      return VideoContentRelay.of({ open })
    })
  )
}
