/**
 * The billed submit the task relays share (video submit and remix, async
 * images, Midjourney): one entry of the billed pipeline (`runBilled` in
 * `BilledPipeline.ts`: permit → hold → failover → settle) whose accepted
 * attempt inserts the task row and is answered as JSON. The
 * hold is the task's full price and is charged whole when an attempt is
 * accepted; the poller later re-prices the task or refunds it, once, in
 * `TaskStore.finish` (docs/ARCHITECTURE.md, "The task lifecycle"). A failed submit costs
 * nothing and leaves no row.
 *
 * Each relay keeps its vendor's part: which candidates serve the model, the
 * price and hold, the upstream call of an attempt, and the row's own fields
 * (public id, the request as shown, the billing kept for re-pricing). This
 * module fills in the rest of the row: the caller, the channel and key, the
 * models, the usage-log request id, the charge and the poll times.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { HttpServerResponse } from "effect/http"
import { emptyUsage } from "../../canonical/Usage.ts"
import type { TaskStatus } from "../../canonical/Video.ts"
import { type GatewayError, type UpstreamFailed } from "../../errors/GatewayError.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Candidate, ChannelRouter } from "../../services/ChannelRouter.ts"
import type { GatewaySettings } from "../../services/GatewaySettings.ts"
import type { Ledger } from "../../billing/Ledger.ts"
import type { RateLimiter } from "../../services/RateLimiter.ts"
import type { Catalog } from "../../storage/Catalog.ts"
import {
  insertedTask,
  type NewTask,
  type Task,
  type TaskBilling,
  type TaskKind,
  TaskStore
} from "../../tasks/TaskStore.ts"
import { type PipelineServices, pipelineServices, runBilled } from "./BilledPipeline.ts"
import type { Priced } from "./OneShot.ts"

/** The services a task submit runs on: the billed pipeline's and the `TaskStore`. @category models */
export interface TaskSubmitServices extends PipelineServices {
  readonly store: typeof TaskStore.Service
}

/**
 * The services a task submit runs on, taken from the context (a relay's layer
 * takes them once).
 *
 * @category services
 */
export const taskSubmitServices: Effect.Effect<
  TaskSubmitServices,
  never,
  ChannelRouter | Ledger | RateLimiter | GatewaySettings | TaskStore
> = Effect.gen(function* () {
  return { ...(yield* pipelineServices), store: yield* TaskStore }
})

/** The fields of a new task row that are the relay's own; `insert` adds the rest. @category models */
export interface OwnTaskFields {
  readonly publicId: string
  readonly kind: TaskKind
  /** The upstream's task id, or `null` when no upstream task exists yet (async images). */
  readonly upstreamId: string | null
  /** The request as the public task object shows it (never megabytes of inline media). */
  readonly request: Readonly<Record<string, unknown>>
  readonly status: TaskStatus
  readonly billing: TaskBilling
  /** Milliseconds from the insert to the first poll; default the poll interval (`task_poll_interval_ms`). */
  readonly firstPollAfter?: number | undefined
}

/**
 * Inserts the task an attempt on `candidate` made, from the relay's `row`
 * and the submit's common fields; the task as stored. Storage failures are
 * defects (`TaskStore.insert`).
 *
 * @category models
 */
export type InsertTask = (candidate: Candidate, row: OwnTaskFields) => Effect.Effect<Task>

/** One task submit, its candidates chosen and priced. @category models */
export interface TaskSubmitRequest<A> {
  readonly principal: Principal
  /** The model billed and stored on the task (the caller's name, not the upstream's). */
  readonly model: string
  readonly priced: Priced
  /** Quota units held before the first attempt and charged whole when one is accepted. */
  readonly hold: bigint
  readonly candidates: ReadonlyArray<Candidate>
  /** One attempt on `candidate`: the vendor's submit, then `insert` of its row; what the caller is answered from. */
  readonly attempt: (candidate: Candidate, insert: InsertTask) => Effect.Effect<A, UpstreamFailed>
  readonly respond: (answer: A) => HttpServerResponse.HttpServerResponse
}

/**
 * Runs `request` through the billed pipeline (`runBilled`, not streamed) with
 * a fresh usage-log request id, which the task keeps to log its final
 * adjustment under. The accepted attempt is charged `hold` (no token usage)
 * and answered with `respond`, with `x-sluice-cost`. Fails with the rate limiter's, the
 * ledger's or the last attempt's error; nothing is charged then.
 *
 * @category relay
 */
export const submitTask = <A>(
  services: TaskSubmitServices,
  request: TaskSubmitRequest<A>
): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> => {
  const { principal, hold, priced } = request
  const { settings, store } = services
  // A fresh id per run of the effect, not per call of `submitTask`.
  return Effect.suspend(() => {
    const requestId = crypto.randomUUID().replaceAll("-", "")
    const insert: InsertTask = (candidate, row) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const fields: NewTask = {
          publicId: row.publicId,
          kind: row.kind,
          userId: principal.userId,
          tokenId: principal.tokenId,
          channelId: candidate.channel.id,
          keyPosition: candidate.key.position,
          upstreamId: row.upstreamId,
          model: request.model,
          upstreamModel: candidate.upstreamModel,
          request: row.request,
          status: row.status,
          requestId,
          billing: row.billing,
          quotaCharged: hold,
          nextPollAt: now + (row.firstPollAfter ?? settings.taskPollMillis),
          deadlineAt: now + settings.taskDeadlineMillis
        }
        const id = yield* store.insert(fields)
        return insertedTask(fields, id, now)
      })
    return Effect.flatMap(Clock.currentTimeMillis, (started) =>
      runBilled<A>(services, {
        principal,
        groupLimits: priced.limits,
        model: request.model,
        price: priced.price,
        ratio: priced.ratio,
        promptTokens: 0,
        started,
        stream: false,
        requestId,
        cost: () => hold,
        hold,
        candidates: request.candidates,
        attempt: () => (candidate) => request.attempt(candidate, insert),
        deliver: (accepted, context) =>
          context.answerJson(accepted, { usage: emptyUsage }, request.respond(accepted.value))
      }))
  })
}

/**
 * Where a task made from `original` (a remix, a Midjourney action) runs: the
 * original's channel, its key (the first enabled one when that key is gone)
 * and upstream model; `undefined` when the channel or every key is gone.
 *
 * @category routing
 */
export const homeOf = (catalog: typeof Catalog.Service, original: Task): Candidate | undefined => {
  const channel = catalog.snapshot().channels.get(original.channelId)
  const key = channel?.keys.find((candidate) => candidate.position === original.keyPosition) ??
    channel?.keys.find((candidate) => candidate.enabled)
  return channel === undefined || key === undefined
    ? undefined
    : { channel, key, upstreamModel: original.upstreamModel }
}

/**
 * The billing a per-second task (video) keeps: its prices as decimal strings
 * and the seconds charged at submit.
 *
 * @category billing
 */
export const perSecondBilling = (priced: Priced, seconds: number): TaskBilling => ({
  ratio: String(priced.ratio),
  perSecond: priced.price.perSecond === undefined ? undefined : String(priced.price.perSecond),
  free: priced.price.free,
  seconds
})

/**
 * The billing a per-image task (async images, Midjourney) keeps: its prices
 * as decimal strings and the images charged at submit.
 *
 * @category billing
 */
export const perImageBilling = (priced: Priced, n: number): TaskBilling => ({
  ratio: String(priced.ratio),
  perImage: priced.price.perImage === undefined ? undefined : String(priced.price.perImage),
  free: priced.price.free,
  n
})
