/**
 * The upstream calls of Midjourney tasks, shared by the submit
 * (`relay/midjourney/MidjourneyRelay.ts`), the poller (`TaskPoller`) and the image
 * proxy (`routes/MidjourneyRoutes.ts`): one JSON call to a channel's proxy
 * server (the channel's timeouts, the proxy's errors classified by
 * `classifyMjError`), and the poll of one task. URL and key come from the
 * channel type's `MidjourneyAdapter`; the key never leaves the gateway.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import { classifyMjError, decodeMjTask, type MjPoll } from "../formats/midjourney/Wire.ts"
import type { Settings } from "../services/GatewaySettings.ts"
import type { Channel } from "../storage/Catalog.ts"
import { midjourneyAdapters } from "../upstreams/MidjourneyAdapter.ts"
import {
  channelTimeouts,
  readJsonAnswer,
  type Timeouts,
  type UpstreamClient
} from "../upstreams/transport/UpstreamClient.ts"

/** The largest answer read from a proxy (a task object is a few kilobytes). @category constants */
export const MAX_MJ_ANSWER_BYTES = 4 * 1024 * 1024

/**
 * Whether `channel` runs Midjourney tasks (its type has a `MidjourneyAdapter`).
 *
 * @category attempts
 */
export const runsMidjourney = (channel: Pick<Channel, "type">): boolean =>
  midjourneyAdapters[channel.type] !== undefined

/**
 * One call to `path` (`/mj/...`) of `channel`'s proxy with `key`, a JSON
 * `body` for a POST: the parsed 2xx answer. Fails with `UpstreamFailed`: the
 * transport's failures, a non-2xx answer as `classifyMjError` reads it,
 * `bad-body` for a 2xx answer that is not JSON, and `copy-failed` for a
 * submit whose accepted answer broke off (the proxy may hold a task whose id
 * never arrived).
 *
 * @category upstream
 */
export const callMidjourney = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  target: { readonly channel: Channel; readonly key: string },
  method: "GET" | "POST",
  path: string,
  body: Record<string, unknown> | undefined,
  timeouts?: Timeouts | undefined
): Effect.Effect<unknown, UpstreamFailed> =>
  Effect.gen(function* () {
    const adapter = midjourneyAdapters[target.channel.type]
    if (adapter === undefined) {
      return yield* new UpstreamFailed({
        kind: "server",
        status: 503,
        message: "The channel cannot run Midjourney tasks."
      })
    }
    const { url, headers } = adapter.target(target.channel, target.key, path, body !== undefined)
    const response = yield* client.send(
      method,
      url,
      headers,
      body === undefined ? undefined : JSON.stringify(body),
      timeouts ?? channelTimeouts(target.channel, settings)
    ).pipe(Effect.mapError((error) => new UpstreamFailed({ ...error, channelId: target.channel.id })))
    const { json } = yield* readJsonAnswer(response, classifyMjError, target.channel.id, MAX_MJ_ANSWER_BYTES, {
      copyFailed: method === "POST"
    })
    return json
  })

/**
 * Polls the upstream task `upstreamId` (`GET /mj/task/{id}/fetch`). Fails
 * with `UpstreamFailed` as `callMidjourney` does, or `bad-body` when the
 * answer is not a task object (a proxy that forgot the task answers `null`).
 *
 * @category upstream
 */
export const pollMidjourney = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  target: { readonly channel: Channel; readonly key: string },
  upstreamId: string,
  timeouts: Timeouts
): Effect.Effect<MjPoll, UpstreamFailed> =>
  callMidjourney(
    client,
    settings,
    target,
    "GET",
    `/mj/task/${encodeURIComponent(upstreamId)}/fetch`,
    undefined,
    timeouts
  )
    .pipe(Effect.flatMap((json) => {
      const poll = decodeMjTask(json)
      return poll === undefined
        ? Effect.fail(
          new UpstreamFailed({
            kind: "bad-body",
            status: 200,
            message: "The upstream answer is not a task.",
            channelId: target.channel.id
          })
        )
        : Effect.succeed(poll)
    }))
