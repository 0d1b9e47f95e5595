/**
 * Drives one video task on an upstream the way the gateway's relay and poller
 * will: a wire's calls made into HTTP requests by the channel type's
 * `VideoAdapter`, sent with plain `fetch`, answers read back by the wire.
 */
import { Effect } from "effect"
import type { UpstreamTaskState, VideoRequest } from "../../src/canonical/Video.ts"
import { UpstreamFailed } from "../../src/errors/GatewayError.ts"
import type { VideoCall, VideoWire } from "../../src/formats/videos/VideoWire.ts"
import type { Channel } from "../../src/upstreams/Adapter.ts"
import { videoAdapters } from "../../src/upstreams/VideoAdapter.ts"

/** One sent call: where it went, with which headers, and its answer. */
export interface Sent {
  readonly url: string
  readonly headers: Record<string, string>
  readonly response: Response
}

/** Sends `call` on `channel` with `key` (given to the adapter only when `withKey`). */
export const send = async (channel: Channel, key: string, call: VideoCall, withKey = true): Promise<Sent> => {
  const adapter = videoAdapters[channel.type]!
  const target = adapter.target(channel, key, call, withKey)
  // A type whose credential is made per call (Kling's signed token) adds it as the gateway does.
  if (withKey && adapter.authorize !== undefined) {
    Object.assign(target.headers, await Effect.runPromise(adapter.authorize(key)))
  }
  const body = call.body === undefined
    ? undefined
    : call.body._tag === "json"
    ? JSON.stringify(call.body.body)
    : call.body.form
  const response = await fetch(target.url, { method: call.method, headers: target.headers, body })
  return { url: target.url, headers: target.headers, response }
}

/** What running a task gave: its upstream id, the states polled, and the content call's answer when completed. */
export interface TaskRun {
  readonly upstreamId: string
  readonly states: ReadonlyArray<UpstreamTaskState>
  readonly last: UpstreamTaskState | UpstreamFailed
  readonly content?: Sent | undefined
}

/**
 * Submits `request` as `model`, polls every `everyMs` until the state is final
 * (or the wire refuses an answer), then fetches the content of a completed
 * task. A refused submit is returned as the wire classifies it.
 */
export const runTask = async (
  wire: VideoWire,
  channel: Channel,
  key: string,
  request: VideoRequest,
  model: string,
  everyMs: number
): Promise<TaskRun | { readonly refused: { readonly kind: string; readonly message: string } }> => {
  const submitCall = wire.submit(request, model)
  const submitted = await send(channel, key, submitCall)
  if (!submitted.response.ok) {
    return { refused: wire.classifyError(submitted.response.status, await submitted.response.text()) }
  }
  const decoded = wire.decodeSubmit(await submitted.response.json(), submitCall)
  if (decoded instanceof UpstreamFailed) throw decoded
  const states: Array<UpstreamTaskState> = []
  for (let attempt = 0; attempt < 200; attempt++) {
    const polled = await send(channel, key, wire.poll(decoded.upstreamId, model))
    if (!polled.response.ok) throw new Error(`Poll answered HTTP ${polled.response.status}.`)
    const state = wire.decodePoll(await polled.response.json(), polled.url)
    if (state instanceof UpstreamFailed) return { upstreamId: decoded.upstreamId, states, last: state }
    states.push(state)
    if (state.status === "completed") {
      const content = await send(channel, key, wire.content(decoded.upstreamId, state), state.content?.withKey)
      return { upstreamId: decoded.upstreamId, states, last: state, content }
    }
    if (state.status === "failed") return { upstreamId: decoded.upstreamId, states, last: state }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
  throw new Error("The task never finished.")
}
