/**
 * One poll call to the upstream of a claimed task, on the task's own channel
 * and key (`POLL_TIMEOUTS`), and what its answer means (`PollOutcome.ts`).
 * A channel that went away, cannot serve the task any more, or lost the key
 * is `NoChannel` (the task waits for it, or for its deadline); a call that
 * failed (network, 5xx, an unreadable answer) is `PollFailed`. Never fails.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { UpstreamFailed } from "../../errors/GatewayError.ts"
import type { Settings } from "../../services/GatewaySettings.ts"
import type { Channel } from "../../storage/Catalog.ts"
import type { UpstreamClient } from "../../upstreams/transport/UpstreamClient.ts"
import { videoAdapters } from "../../upstreams/VideoAdapter.ts"
import { pollMidjourney, runsMidjourney } from "../MidjourneyCalls.ts"
import type { Task } from "../store/Task.ts"
import { callVideoJson, videoWireOf } from "../VideoCalls.ts"
import { POLL_TIMEOUTS } from "./PollerOptions.ts"
import { midjourneyOutcome, type PollOutcome, videoOutcome } from "./PollOutcome.ts"

/**
 * What a poll call found: no channel to ask, a call that failed on channel
 * `channel` (its name), or an answer.
 *
 * @category models
 */
export type UpstreamAnswer =
  | { readonly _tag: "NoChannel" }
  | { readonly _tag: "PollFailed"; readonly channel: string; readonly error: UpstreamFailed }
  | { readonly _tag: "Answered"; readonly outcome: PollOutcome }

/**
 * Whether the poller polls `channel`'s tasks: it makes videos or runs
 * Midjourney tasks.
 *
 * @category channels
 */
export const pollsTasks = (channel: Pick<Channel, "type">): boolean =>
  videoWireOf(channel) !== undefined || runsMidjourney(channel)

/** The channel of `task` among `channels` and the task's key on it, when both are still there. */
const targetOf = (channels: ReadonlyMap<number, Channel>, task: Task) => {
  const channel = channels.get(task.channelId)
  const key = channel?.keys.find((candidate) => candidate.position === task.keyPosition)
  return channel === undefined || key === undefined ? undefined : { channel, key: key.key }
}

const failedOn = (channel: Channel) => (error: UpstreamFailed): UpstreamAnswer => ({
  _tag: "PollFailed",
  channel: channel.name,
  error
})

/**
 * Polls the video task `upstreamId` of `task` on its channel among `channels`
 * with the channel's video wire.
 *
 * @category upstream
 */
export const askVideo = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  channels: ReadonlyMap<number, Channel>,
  task: Task,
  upstreamId: string
): Effect.Effect<UpstreamAnswer> => {
  const target = targetOf(channels, task)
  const wire = target === undefined ? undefined : videoWireOf(target.channel)
  if (target === undefined || wire === undefined) return Effect.succeed({ _tag: "NoChannel" })
  const call = wire.poll(upstreamId, task.upstreamModel)
  // The URL the poll goes to: a wire trusts a keyed content location only on its origin.
  const pollUrl = videoAdapters[target.channel.type]!.target(target.channel, target.key, call, false).url
  return callVideoJson(client, settings, target, wire, call, POLL_TIMEOUTS).pipe(
    Effect.map((json) => wire.decodePoll(json, pollUrl)),
    Effect.map((state): UpstreamAnswer =>
      state instanceof UpstreamFailed
        ? failedOn(target.channel)(state)
        : { _tag: "Answered", outcome: videoOutcome(task, state) }
    ),
    Effect.catch((error: UpstreamFailed) => Effect.succeed(failedOn(target.channel)(error)))
  )
}

/**
 * Polls the Midjourney task `upstreamId` of `task` on its channel among
 * `channels` through the channel's proxy.
 *
 * @category upstream
 */
export const askMidjourney = (
  client: typeof UpstreamClient.Service,
  settings: Settings,
  channels: ReadonlyMap<number, Channel>,
  task: Task,
  upstreamId: string
): Effect.Effect<UpstreamAnswer> => {
  const target = targetOf(channels, task)
  if (target === undefined || !runsMidjourney(target.channel)) return Effect.succeed({ _tag: "NoChannel" })
  return pollMidjourney(client, settings, target, upstreamId, POLL_TIMEOUTS).pipe(
    Effect.map((poll): UpstreamAnswer => ({ _tag: "Answered", outcome: midjourneyOutcome(task, poll) })),
    Effect.catch((error: UpstreamFailed) => Effect.succeed(failedOn(target.channel)(error)))
  )
}
