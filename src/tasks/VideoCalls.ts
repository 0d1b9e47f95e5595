/**
 * The upstream calls of video tasks, shared by the submit (`relay/videos/VideoRelay.ts`),
 * the poller (`TaskPoller`) and the content download
 * (`relay/videos/VideoContentRelay.ts`): a channel's video wire, one call whose 2xx
 * answer is JSON (the channel's timeouts, the vendor's error classified by the
 * wire), and the content download left open for streaming. URL and key come
 * from the channel type's `VideoAdapter`; the key never leaves the gateway.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { UpstreamFailed } from "../errors/GatewayError.ts"
import { type VideoCall, type VideoWire, videoWires } from "../formats/videos/Wires.ts"
import type { Channel } from "../storage/Catalog.ts"
import { videoAdapters } from "../upstreams/VideoAdapter.ts"
import type { Settings } from "../services/GatewaySettings.ts"
import {
  channelTimeouts,
  encodeForm,
  readJsonAnswer,
  type Timeouts,
  type UpstreamClient,
  type UpstreamResponse
} from "../upstreams/transport/UpstreamClient.ts"

/**
 * The video wire of `channel`, or `undefined` when its type cannot make
 * videos (or its wire is not built).
 *
 * @category attempts
 */
export const videoWireOf = (channel: Pick<Channel, "type">): VideoWire | undefined => {
  const adapter = videoAdapters[channel.type]
  return adapter === undefined ? undefined : videoWires[adapter.wire]
}

/** A call's body as bytes or text, with its content type (a form's carries its boundary). */
const encoded = (call: VideoCall): Effect.Effect<{ body: string | Uint8Array | undefined; contentType?: string }> =>
  call.body === undefined
    ? Effect.succeed({ body: undefined })
    : call.body._tag === "json"
    ? Effect.succeed({ body: JSON.stringify(call.body.body) })
    : encodeForm(call.body.form)

/** Where a call goes: the channel, the key to send, and whether to send it (a vendor content URL may not need it). */
export interface VideoTarget {
  readonly channel: Channel
  readonly key: string
}

/**
 * Sends `call` to `target` and opens the answer. Fails with `UpstreamFailed`
 * (`network`, `timeout`); the status is the caller's to judge.
 *
 * @category upstream
 */
export const sendVideoCall = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  target: VideoTarget,
  call: VideoCall,
  options: {
    readonly withKey: boolean
    readonly headers?: Record<string, string> | undefined
    /** Limits of this call (default the channel's, else the gateway's). */
    readonly timeouts?: Timeouts | undefined
  }
): Effect.Effect<UpstreamResponse, UpstreamFailed> =>
  Effect.gen(function* () {
    const adapter = videoAdapters[target.channel.type]
    if (adapter === undefined) {
      return yield* new UpstreamFailed({ kind: "server", status: 503, message: "The channel cannot make videos." })
    }
    const { body, contentType } = yield* encoded(call)
    const { url, headers } = adapter.target(target.channel, target.key, call, options.withKey)
    const signed = options.withKey && adapter.authorize !== undefined
      ? yield* adapter.authorize(target.key).pipe(
        Effect.mapError((error) => new UpstreamFailed({ ...error, channelId: target.channel.id }))
      )
      : {}
    const allHeaders = { ...headers, ...signed, ...(contentType === undefined ? {} : { "content-type": contentType }) }
    return yield* client.send(
      call.method,
      url,
      { ...allHeaders, ...options.headers },
      body,
      options.timeouts ?? channelTimeouts(target.channel, settings)
    ).pipe(Effect.mapError((error) => new UpstreamFailed({ ...error, channelId: target.channel.id })))
  })

/**
 * One call whose 2xx answer is JSON: the parsed value. A non-2xx answer is
 * an `UpstreamFailed` as `wire.classifyError` reads it; a 2xx answer that is
 * not JSON is `bad-body`; a 2xx answer that breaks off while it is read is
 * `copy-failed` (500 `bad_response` on a submit). Answers are read up to 4 MiB
 * (a task object is a few hundred bytes).
 *
 * @category upstream
 */
export const callVideoJson = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  target: VideoTarget,
  wire: VideoWire,
  call: VideoCall,
  timeouts?: Timeouts | undefined
): Effect.Effect<unknown, UpstreamFailed> =>
  Effect.gen(function* () {
    const response = yield* sendVideoCall(client, settings, target, call, { withKey: true, timeouts })
    const { json } = yield* readJsonAnswer(response, wire.classifyError, target.channel.id, 4 * 1024 * 1024, {
      // An accepted answer that breaks off while it is read: the vendor may hold a task whose id never arrived.
      copyFailed: true
    })
    return json
  })
