/**
 * What the task store keeps and hands out: a task as stored (`Task`), a task
 * to insert (`NewTask`), the prices it was charged at (`TaskBilling`), what a
 * poll found (`Advance`), how a task ends (`TaskEnd`) and what ending it did
 * (`Finished`). `TaskStore.ts` re-exports them; the service, its SQL and its
 * final bill use them.
 *
 * Amounts are quota units (micro-USD) as bigints; times epoch milliseconds
 * unless named seconds.
 *
 * @since 0.1.0
 */
import type { TaskStatus } from "../../canonical/Video.ts"

/** What a task makes: a video, async images, or a Midjourney task (`/mj/*`). @category models */
export type TaskKind = "video" | "image" | "midjourney"

/**
 * The prices a task was charged at, kept to re-price it on completion:
 * decimal strings of the fixed-point values (`domain/Pricing.ts`), the
 * seconds or images billed at submit.
 *
 * @category models
 */
export interface TaskBilling {
  readonly ratio: string
  readonly perSecond?: string | undefined
  readonly perImage?: string | undefined
  readonly free: boolean
  /** Seconds billed at submit (video). */
  readonly seconds?: number | undefined
  /** Images billed at submit (image). */
  readonly n?: number | undefined
}

/** What a poll of a running task found: its status and progress (percent, 0–99). @category models */
export interface Advance {
  readonly status: "queued" | "in_progress"
  readonly progress: number
}

/**
 * Where a finished task's bytes are (private: a vendor URL is never shown to
 * a caller) and what the upstream reported of them.
 *
 * @category models
 */
export interface TaskResult {
  readonly url?: string | undefined
  readonly withKey: boolean
  /** Epoch seconds after which the vendor no longer serves the bytes. */
  readonly expiresAt?: number | undefined
  readonly seconds?: number | undefined
  readonly width?: number | undefined
  readonly height?: number | undefined
  readonly fps?: number | undefined
  /** The usage the vendor billed, in its own unit, when it says (passed through to the video object). */
  readonly usage?: number | undefined
}

/** One task as stored. @category models */
export interface Task {
  readonly id: bigint
  readonly publicId: string
  readonly kind: TaskKind
  readonly userId: bigint
  readonly tokenId: bigint
  readonly channelId: number
  readonly keyPosition: number
  /** The upstream's task id: private, never in a response, header or log line. */
  readonly upstreamId: string | null
  readonly model: string
  readonly upstreamModel: string
  /** The request as decoded at submit (for remix and for the public object's `seconds`, `size`). */
  readonly request: Readonly<Record<string, unknown>>
  readonly status: TaskStatus
  readonly progress: number
  readonly result: TaskResult | null
  /** What a caller is shown of a finished image task (`data[]`). */
  readonly publicResult: unknown
  readonly errorCode: string | null
  readonly errorMessage: string | null
  /** The submit's usage-log request id. */
  readonly requestId: string
  readonly billing: TaskBilling
  readonly quotaCharged: bigint
  readonly settled: boolean
  /** Quota units given back by the final adjustment (negative: charged extra). */
  readonly refunded: bigint
  readonly pollFailures: number
  readonly createdAt: number
  readonly completedAt: number | null
  /** Epoch ms after which the task fails and is refunded. */
  readonly deadlineAt: number
}

/** A task to insert (queued, progress 0): the stored task's own fields, and when it is first polled. @category models */
export interface NewTask extends
  Pick<
    Task,
    | "publicId"
    | "kind"
    | "userId"
    | "tokenId"
    | "channelId"
    | "keyPosition"
    | "upstreamId"
    | "model"
    | "upstreamModel"
    | "request"
    | "status"
    | "requestId"
    | "billing"
    | "quotaCharged"
    | "deadlineAt"
  > {
  /** Epoch ms of the first poll. */
  readonly nextPollAt: number
}

/**
 * The task `insert` just stored as row `id` at `createdAt` (epoch ms): what a
 * relay hands on without reading the row back (no progress, result or error
 * yet, nothing refunded).
 *
 * @category constructors
 */
export const insertedTask = (task: NewTask, id: bigint, createdAt: number): Task => ({
  ...task,
  id,
  progress: 0,
  result: null,
  publicResult: null,
  errorCode: null,
  errorMessage: null,
  settled: false,
  refunded: 0n,
  pollFailures: 0,
  createdAt,
  completedAt: null
})

/** How a task ends. @category models */
export interface TaskEnd {
  readonly status: "completed" | "failed"
  readonly result?: TaskResult | undefined
  readonly publicResult?: unknown
  readonly error?: { readonly code: string; readonly message: string } | undefined
  /**
   * The task's final cost in quota units: the difference with what was
   * charged is refunded (or charged, capped at what the balances hold beyond
   * every live quota lease: `QuotaLedger.adjustWithin`).
   */
  readonly cost: bigint
}

/** What `finish` did: whether this call ended the task, and the adjustment it made. @category models */
export interface Finished {
  readonly ended: boolean
  /** Quota units given back (negative: charged extra). */
  readonly refunded: bigint
}
