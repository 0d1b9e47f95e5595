/**
 * Layer doubles of the billed pipeline's services for its unit tests (`BilledPipeline.test.ts`,
 * `TaskSubmit.test.ts`): partial `ChannelRouter`, `RateLimiter`, `Ledger`, `GatewaySettings`, `TaskStore` and `UpstreamClient` that
 * record what they were asked (`Seen`), a principal and candidates with obviously fake names.
 */
import { Effect, Layer } from "effect"
import { Ledger } from "../../../src/billing/Ledger.ts"
import type { Hold } from "../../../src/billing/QuotaLedger.ts"
import type { UsageRow } from "../../../src/billing/UsageLog.ts"
import { InsufficientQuota, UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import type { Principal } from "../../../src/services/Auth.ts"
import { type AttemptOutcome, type Candidate, ChannelRouter } from "../../../src/services/ChannelRouter.ts"
import { GatewaySettings, type Settings } from "../../../src/services/GatewaySettings.ts"
import { RateLimiter } from "../../../src/services/RateLimiter.ts"
import type { NewTask } from "../../../src/tasks/TaskStore.ts"
import { UpstreamClient, type UpstreamResponse } from "../../../src/upstreams/transport/UpstreamClient.ts"
import { TaskStore } from "../../../src/tasks/TaskStore.ts"

/** A caller: token 1 of user 2 in the default group, no limits. */
export const principal: Principal = {
  tokenId: 1n,
  tokenName: "main",
  userId: 2n,
  group: "default",
  models: undefined,
  unlimitedQuota: false,
  expiresAt: undefined,
  tokenLimits: undefined,
  userLimits: undefined
}

/** Candidate `id`: channel `id` (an openai channel), key 0, upstream model `m`. */
export const candidate = (id: number) =>
  ({
    channel: { id, name: `channel-${id}`, type: "openai", settings: {} },
    key: { position: 0, key: "sk-test-fake" },
    upstreamModel: "m"
  }) as unknown as Candidate

/** A retryable upstream failure (HTTP 500). */
export const serverError = new UpstreamFailed({ kind: "server", status: 500, message: "upstream broke" })

/** What the doubles saw: holds taken and given back, bookings, rows, health reports, permits released. */
export interface Seen {
  readonly held: Array<bigint>
  readonly released: Array<bigint>
  readonly booked: Array<[bigint, bigint]>
  readonly rows: Array<UsageRow>
  readonly reports: Array<[number, AttemptOutcome["_tag"]]>
  readonly permits: Array<number>
  readonly attempts: Array<number>
  /** The task rows inserted (`TaskStore.insert`). */
  readonly tasks: Array<NewTask>
}

/** The pipeline's services as Layer doubles; `refuseHold` makes the ledger refuse every hold. */
export const doubles = (seen: Seen, options: { readonly refuseHold?: boolean; readonly deadlineMs?: number } = {}) =>
  Layer.mergeAll(
    Layer.succeed(ChannelRouter)(
      {
        report: (chosen: Candidate, outcome: AttemptOutcome) =>
          Effect.sync(() => void seen.reports.push([chosen.channel.id, outcome._tag]))
      } as unknown as typeof ChannelRouter.Service
    ),
    Layer.succeed(RateLimiter)({
      acquire: () => Effect.succeed({ release: (tokens: number) => Effect.sync(() => void seen.permits.push(tokens)) })
    }),
    Layer.succeed(Ledger)(
      {
        hold: (_principal: Principal, amount: bigint) =>
          options.refuseHold === true
            ? Effect.fail(new InsufficientQuota({ required: amount, remaining: 0n, scope: "user" }))
            : Effect.sync((): Hold => {
              seen.held.push(amount)
              return { tokenId: principal.tokenId, userId: principal.userId, amount, settled: false }
            }),
        book: (hold: Hold | undefined, cost: bigint, row: (charged: bigint) => UsageRow) =>
          Effect.sync(() => {
            seen.booked.push([hold?.amount ?? 0n, cost])
            seen.rows.push(row(cost))
            return cost
          }),
        release: (hold: Hold) => Effect.sync(() => void seen.released.push(hold.amount)),
        record: (row: UsageRow) => void seen.rows.push(row),
        durable: Effect.succeed(true),
        withdraw: () => false
      } as unknown as typeof Ledger.Service
    ),
    Layer.succeed(GatewaySettings)(
      {
        retryTimes: 2,
        requestDeadlineMs: options.deadlineMs ?? 60_000,
        taskPollMillis: 5_000,
        taskDeadlineMillis: 3_600_000
      } as Settings
    ),
    Layer.succeed(TaskStore)(
      {
        insert: (task: NewTask) =>
          Effect.sync(() => {
            seen.tasks.push(task)
            return BigInt(seen.tasks.length)
          })
      } as unknown as typeof TaskStore.Service
    )
  )

/** Nothing seen yet. */
export const newSeen = (): Seen => ({
  held: [],
  released: [],
  booked: [],
  rows: [],
  reports: [],
  permits: [],
  attempts: [],
  tasks: []
})

/**
 * A partial `UpstreamClient` whose `post` answers each URL with its scripted status and body (one read, then the
 * end), recording the URLs called in `calls`; an unscripted URL answers 404.
 */
export const upstreamDouble = (
  answers: Readonly<Record<string, { readonly status: number; readonly body: string }>>,
  calls: Array<string>
) =>
  Layer.succeed(UpstreamClient)(
    {
      post: (url: string) =>
        Effect.sync((): UpstreamResponse => {
          calls.push(url)
          const answer = answers[url] ?? { status: 404, body: "{}" }
          let pending: Uint8Array | undefined = new TextEncoder().encode(answer.body)
          return {
            status: answer.status,
            headers: { "content-type": "application/json" },
            read: Effect.sync(() => {
              const chunk = pending
              pending = undefined
              return chunk
            }),
            text: Effect.succeed(answer.body),
            abort: () => undefined
          }
        })
    } as unknown as typeof UpstreamClient.Service
  )
