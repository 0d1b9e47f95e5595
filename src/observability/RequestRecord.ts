/**
 * What the gateway learns about one request while serving it, for its access
 * log line and its metrics: the request id, the route, the inbound format and
 * model, the channel that answered, the failover path, the usage billed and
 * the quota charged, the status and the latencies. Made by the telemetry
 * middleware, filled by the relay where its parts settle and fail over, and
 * finished once: when the answer's head is sent, or, for a stream, when the
 * stream's settlement ran after the last byte (or the cut).
 *
 * Nothing of the caller's body and no key is ever put here. The model a
 * caller named is kept only for the log (masked and bounded there); labels
 * use `modelLabel`, which is a priced model's name or `other`.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"

/** Where a finished record goes (the telemetry of the gateway). @category models */
export interface RecordOwner {
  /** An upstream attempt ended: `ok`, or the failure's kind; `failover` when it was retryable. */
  readonly attempt: (channel: string, outcome: string, failover: boolean) => void
  readonly finished: (record: RequestRecord) => void
}

/** One request's record. @category models */
export class RequestRecord {
  readonly owner: RecordOwner
  /** The `x-request-id` of the request (the caller's when well-formed, else made). */
  readonly requestId: string
  /** Whether `requestId` was made here (it is then also the usage log's `request_id`). */
  readonly madeId: boolean
  readonly method: string
  /** The request's path and query (for the route label only; never logged). */
  readonly url: string
  /** Epoch milliseconds the request arrived. */
  readonly startedAt: number
  /** `performance.now()` when the request arrived. */
  readonly started: number
  format = "-"
  /** The model the caller named (hostile text: masked and bounded before it is logged). */
  model: string | undefined = undefined
  /** The model's metric label: its name once the catalog prices it, `other` until then. */
  modelLabel = "other"
  group: string | undefined = undefined
  /** The channel of the accepted attempt, or of the last failed one. */
  channel: string | undefined = undefined
  status = 0
  firstByteMs = 0
  totalMs = 0
  promptTokens = 0
  completionTokens = 0
  cachedTokens = 0
  reasoningTokens = 0
  /** Quota charged by the ledger (micro-USD). */
  cost = 0n
  /** `channel:outcome` of every attempt in order (only made when an attempt failed). */
  path: Array<string> | undefined = undefined
  #pending = 1
  #deferred = false

  /** `startedAt`: epoch milliseconds the request arrived, by the request's Effect `Clock`. */
  constructor(owner: RecordOwner, requestId: string, madeId: boolean, method: string, url: string, startedAt: number) {
    this.owner = owner
    this.requestId = requestId
    this.madeId = madeId
    this.method = method
    this.url = url
    this.startedAt = startedAt
    this.started = performance.now()
  }

  /** The relay took the request: its inbound format and the model named. */
  relayed(format: string, model: string): void {
    this.format = format
    this.model = model
  }

  /** The model is priced in the catalog (so its name is a bounded label) and billed to `group`. */
  priced(group: string): void {
    if (this.model !== undefined) this.modelLabel = this.model
    this.group = group
  }

  /** An attempt on `channel` failed with `kind` before the answer began (`retryable`: the request moves on). */
  attemptFailed(channel: string, kind: string, retryable: boolean): void {
    this.channel = channel
    this.owner.attempt(channel, kind, retryable)
    ;(this.path ??= []).push(`${channel}:${kind}`)
  }

  /** The request's bill: the accepted channel (if any), the usage billed and the quota the ledger charged. */
  billed(
    channel: string | undefined,
    prompt: number,
    completion: number,
    cached: number,
    reasoning: number,
    charged: bigint
  ): void {
    if (channel !== undefined) {
      this.channel = channel
      this.path?.push(`${channel}:ok`)
      this.owner.attempt(channel, "ok", false)
    }
    this.promptTokens = prompt
    this.completionTokens = completion
    this.cachedTokens = cached
    this.reasoningTokens = reasoning
    this.cost = charged
    if (this.#deferred) this.#partDone()
  }

  /** The answer is a stream: the record finishes when its settlement has billed it, not when its head is sent. */
  defer(): void {
    this.#deferred = true
    this.#pending++
  }

  /** The answer's head was handed to the server with `status`. */
  responded(status: number): void {
    this.status = status
    this.firstByteMs = performance.now() - this.started
    this.#partDone()
  }

  #partDone(): void {
    if (--this.#pending !== 0) return
    this.totalMs = performance.now() - this.started
    this.owner.finished(this)
  }
}

/** The record of each request in flight, by the runtime's own request object (see `CurrentRequest`). */
const records = new WeakMap<object, RequestRecord>()

/**
 * Makes `record` the record of `request` (the telemetry middleware, once per
 * request): what `CurrentRequest` then reads.
 *
 * @category services
 */
export const attachRecord = (request: HttpServerRequest.HttpServerRequest, record: RequestRecord): void => {
  records.set(request.source as object, record)
}

/**
 * The record attached to `request` by the telemetry middleware, or `undefined`
 * (no middleware: unit tests, an in-process call). A plain read for a route
 * that has its request in hand; `CurrentRequest` finds the request first.
 *
 * @category services
 */
export const recordOf = (request: HttpServerRequest.HttpServerRequest): RequestRecord | undefined =>
  records.get(request.source as object)

/**
 * The record of the request being served, or `undefined` outside the
 * telemetry middleware (unit tests of the relay, or telemetry off). Kept in a
 * weak map by the runtime's request object rather than provided as a service:
 * providing one copies the fiber's whole service context on every request.
 *
 * @category services
 */
export const CurrentRequest: Effect.Effect<RequestRecord | undefined> = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) => Option.isSome(request) ? recordOf(request.value) : undefined
)

/**
 * The usage log's request id for a request: the `x-request-id` the gateway made for it (so a caller can find its
 * cost by the id it was answered with), else a fresh one — a caller's own id is never trusted to be unique.
 *
 * @category telemetry
 */
export const usageRequestId = (record: RequestRecord | undefined): string =>
  record?.madeId === true ? record.requestId : crypto.randomUUID().replaceAll("-", "")
