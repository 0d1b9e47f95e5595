/**
 * Runs the lines of every batch in progress, on every instance: each line is sent through the gateway's own
 * handler (`BatchDispatch`) as an inner `POST` of the batch's route, authenticated by the batch token's stored
 * digest (`http/InnerCaller.ts`) and carrying the gateway-made request id `<batch id>.<line index>`, so routing,
 * failover, translation, rate limits, budgets, holds, billing and the access log are the HTTP path's own, and the
 * line's usage row is logged under that id.
 *
 * Lines are claimed through the database (`BatchSql.claimLines`: `FOR UPDATE SKIP LOCKED` and a lease the
 * instance renews every poll), one at a time by each of a batch's workers: at most `batch_concurrency` workers per
 * batch and `batch_key_concurrency` per token on one instance. A line whose lease ran out (its instance stopped) is
 * claimed again, and the takeover rule (docs/BILLING.md, "Batches") decides: if its earlier attempt was charged
 * (`BatchSql.wasCharged`), it is not sent again; otherwise it is sent. A line's result is recorded only while its
 * claim is still held.
 *
 * Cancelling ends the lines not started (`canceled`) and lets running ones finish; a batch past its window ends
 * its lines not started `expired`. A batch whose lines have all finished ends (`settleBatch`, one instance wins):
 * an Anthropic batch at once, an OpenAI batch through `finalizing`, while its output files are written
 * (`finalizers`). Every instance resumes the batches in progress when it starts: they are simply still active.
 *
 * @since 0.4.0
 */
import { Clock, Context, Effect, Exit, Latch, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { markInnerCaller } from "../http/InnerCaller.ts"
import { markMadeRequestId } from "../http/MadeRequestId.ts"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { type Batch, type BatchApi, type BatchStatus, lineRequestId } from "./Batch.ts"
import { BatchDispatch } from "./BatchDispatch.ts"
import { writeBatchOutput } from "./BatchOutput.ts"
import { FileStore } from "../files/FileStore.ts"
import { makeVendorRunner } from "./VendorRunner.ts"
import { vendorPhases } from "./VendorSql.ts"
import {
  claimLines,
  closePending,
  endWithFiles,
  finishLine,
  releaseLine,
  renewLeases,
  selectActive,
  selectBatch,
  settleBatch,
  wasCharged
} from "./BatchSql.ts"

/** How long a shutdown waits for the lines running to finish, in milliseconds. */
const DRAIN_MILLIS = 10_000

/** A batch `finalizing` this long (its finalizer stopped) is finalized again by any instance, in milliseconds. */
const FINALIZE_STALE_MILLIS = 5 * 60_000

/** The most batches one poll looks at. */
const ACTIVE_BATCHES_PER_POLL = 100

/** The longest line answer kept, in UTF-16 code units; a longer one is recorded as an error. */
const MAX_RESULT_CHARS = 16 * 1024 * 1024

/** How a batch's end is written once its lines have finished. */
type Finalizer = (batch: Batch, status: BatchStatus) => Effect.Effect<void, StorageUnavailable>

/**
 * What a line's answer recorded as: its state, HTTP status and body text (JSON).
 *
 * @category models
 */
interface LineOutcome {
  readonly state: "succeeded" | "errored" | "canceled" | "expired"
  readonly statusCode: number | null
  readonly result: string | null
  /**
   * Set when the gateway's rate limits refused the line (429 that a retry can fix, not a budget): seconds to wait
   * before it is tried again. The line goes back to pending rather than ending.
   */
  readonly retryAfterSeconds?: number | undefined
}

/** The longest wait after a rate-limited line, in seconds. */
const MAX_RETRY_AFTER_SECONDS = 30

/** A gateway-made error body in OpenAI's envelope (the Anthropic view rewraps it). */
const errorBody = (status: number, type: string, code: string, message: string): LineOutcome => ({
  state: "errored",
  statusCode: status,
  result: JSON.stringify({ error: { message, type, param: null, code } })
})

/** `text` as TEXT stores it: no NUL, no lone surrogate (JSON from the gateway has neither; this is a guard). */
const storable = (text: string): string => text.replaceAll("\u0000", "").toWellFormed()

/** @category services */
export class BatchRunner extends Context.Service<BatchRunner, {
  /** Makes the runner look for work now rather than at its next poll (a batch was created or cancelled). */
  readonly wake: Effect.Effect<void>
  /** This instance's claim name. */
  readonly instance: string
}>()("sluice/batches/BatchRunner") {
  /**
   * Runs in the layer's scope; needs the SQL client, `GatewaySettings`, `BatchDispatch` and `FileStore` (an OpenAI
   * batch ends with its output files; an Anthropic batch ends at once, its results read from the store), and for the
   * vendor delegation `Auth`, `ChannelRouter`, `Catalog` and `Ledger`.
   */
  static readonly layer = Layer.effect(
    BatchRunner,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* GatewaySettings
      const { dispatch } = yield* BatchDispatch
      const files = yield* FileStore
      const finalizers: Partial<Record<BatchApi, Finalizer>> = {
        openai: (batch, status) =>
          Effect.gen(function* () {
            const { counts } = yield* selectBatch(sql, batch.api, batch.publicId, batch.userId).pipe(Effect.orDie)
            const written = yield* writeBatchOutput(sql, files, batch, {
              succeeded: counts.succeeded,
              others: counts.errored + counts.canceled + counts.expired
            })
            yield* endWithFiles(sql, batch.id, status, written.outputFileId, written.errorFileId)
          })
      }
      const scope = yield* Effect.scope
      // The workers' own scope, closed by the drain below once their lines finished (or its deadline passed).
      const workers = yield* Scope.make()
      let draining = false
      const instance = `batches-${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
      const latch = yield* Latch.make(false)
      const vendor = yield* makeVendorRunner(instance)
      // The batches whose vendor step runs on this instance now.
      const vendorBusy = new Set<bigint>()
      const leaseMillis = settings.batchLeaseMillis
      const perBatch = new Map<bigint, number>()
      const perToken = new Map<bigint, number>()
      const bump = (map: Map<bigint, number>, key: bigint, by: number) => {
        const next = (map.get(key) ?? 0) + by
        if (next <= 0) map.delete(key)
        else map.set(key, next)
      }

      /** Sends one line through the gateway and reads its whole answer. */
      const send = (batch: Batch, lineIndex: number, body: unknown): Effect.Effect<LineOutcome> =>
        Effect.tryPromise({
          try: async (signal) => {
            const headers = new Headers({
              "content-type": "application/json",
              "x-request-id": lineRequestId(batch.publicId, lineIndex)
            })
            if (batch.api === "anthropic") headers.set("anthropic-version", "2023-06-01")
            const request = new Request(`http://batch.internal${batch.endpoint}`, {
              method: "POST",
              headers,
              body: JSON.stringify(body),
              signal
            })
            markMadeRequestId(request)
            markInnerCaller(request, { keyHash: batch.keyHash, clientAddress: batch.clientAddress ?? undefined })
            const response = await dispatch(request)
            const text = await response.text()
            if (text.length > MAX_RESULT_CHARS) {
              return errorBody(500, "api_error", "batch_result_too_large", "The line's answer is too large to keep.")
            }
            const retryable = response.status === 429 && response.headers.get("x-should-retry") !== "false"
            return {
              state: response.status < 300 ? "succeeded" as const : "errored" as const,
              statusCode: response.status,
              result: storable(text),
              retryAfterSeconds: retryable
                ? Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Number(response.headers.get("retry-after")) || 1))
                : undefined
            }
          },
          catch: () => undefined
        }).pipe(
          Effect.catch(() =>
            Effect.succeed(errorBody(500, "api_error", "internal_error", "The gateway could not run this line."))
          )
        )

      /** What a claimed line comes to: its answer, or its end when the batch stopped or it ran before. */
      const outcomeOf = Effect.fnUntraced(
        function* (batch: Batch, lineIndex: number, line: string, takenOver: boolean) {
          const now = yield* Clock.currentTimeMillis
          if (takenOver && (yield* wasCharged(sql, lineRequestId(batch.publicId, lineIndex)))) {
            // Its earlier attempt was answered and billed, but its instance stopped before recording it: not sent
            // again (docs/BILLING.md, "Batches").
            return errorBody(
              500,
              "api_error",
              "batch_line_interrupted",
              "This line was answered and billed, but the instance running it stopped before its answer was kept."
            )
          }
          if (batch.status === "cancelling") return { state: "canceled", statusCode: null, result: null } as const
          if (batch.expiresAt.getTime() <= now) return { state: "expired", statusCode: null, result: null } as const
          const parsed = JSON.parse(line) as { readonly body: unknown }
          return yield* send(batch, lineIndex, parsed.body)
        }
      )

      /** One worker of `batch`: claims and runs its lines one at a time until none is left to claim. */
      const worker = (batch: Batch): Effect.Effect<void> => {
        let ran = 0
        return Effect.gen(function* () {
          while (!draining) {
            const [claimed] = yield* claimLines(sql, batch.id, instance, 1, leaseMillis)
            if (claimed === undefined) return
            ran++
            const outcome = yield* outcomeOf(batch, claimed.lineIndex, claimed.line, claimed.takenOver)
            if (outcome.retryAfterSeconds !== undefined) {
              // Refused by the key's or user's rate limits (nothing charged): back in line, this worker waits.
              yield* releaseLine(sql, batch.id, claimed.lineIndex, instance)
              yield* Effect.sleep(outcome.retryAfterSeconds * 1000)
              continue
            }
            yield* finishLine(
              sql,
              batch.id,
              claimed.lineIndex,
              instance,
              outcome.state,
              outcome.statusCode,
              outcome.result
            )
          }
        }).pipe(
          Effect.catchCause((cause) => Effect.logWarning("A batch worker stopped", cause)),
          // A worker that ran lines wakes the poll (the batch may have ended); one that found none does not, so
          // lines another instance holds are not polled for in a loop.
          Effect.ensuring(Effect.suspend(() => {
            bump(perBatch, batch.id, -1)
            bump(perToken, batch.tokenId, -1)
            return ran > 0 ? Effect.asVoid(latch.open) : Effect.void
          }))
        )
      }

      /** Ends `batch` once its lines have all finished (one instance wins the move); whether it ended here. */
      const settle = Effect.fnUntraced(function* (batch: Batch) {
        const now = yield* Clock.currentTimeMillis
        const end: BatchStatus = batch.status === "cancelling" || batch.cancelInitiatedAt !== null
          ? "cancelled"
          : batch.expiresAt.getTime() <= now
          ? "expired"
          : "completed"
        const finalizer = finalizers[batch.api]
        if (finalizer === undefined) return yield* settleBatch(sql, batch.id, ["in_progress", "cancelling"], end)
        if (batch.status === "finalizing" || (yield* settleBatch(sql, batch.id, [batch.status], "finalizing"))) {
          yield* finalizer(batch, end)
          return true
        }
        return false
      })

      const poll = Effect.gen(function* () {
        // The heartbeat of the lines this instance runs (none: no statement).
        if (perBatch.size > 0) yield* renewLeases(sql, instance, leaseMillis)
        const now = yield* Clock.currentTimeMillis
        const active = yield* selectActive(sql, ACTIVE_BATCHES_PER_POLL, Math.max(FINALIZE_STALE_MILLIS, leaseMillis))
        const phases = yield* vendorPhases(sql, active.map((batch) => batch.id))
        for (const batch of active) {
          if (batch.status === "finalizing") {
            yield* settle(batch)
            continue
          }
          const phase = phases.get(batch.id)
          if (phase !== "gateway" && phase !== "done") {
            // Not decided, or at a vendor: its lines wait for the vendor's results (no worker, no close here).
            if (!vendorBusy.has(batch.id) && !draining) {
              vendorBusy.add(batch.id)
              yield* Effect.forkIn(
                vendor.advance(batch, phase).pipe(
                  Effect.ensuring(Effect.suspend(() => {
                    vendorBusy.delete(batch.id)
                    return Effect.asVoid(latch.open)
                  }))
                ),
                workers
              )
            }
            continue
          }
          if (phase === "done") {
            yield* settle(batch)
            continue
          }
          if (batch.status === "cancelling") yield* closePending(sql, batch.id, "canceled")
          else if (batch.expiresAt.getTime() <= now) yield* closePending(sql, batch.id, "expired")
          // With no worker of its own left, the batch may be done (a no-op while any line is open anywhere).
          if ((perBatch.get(batch.id) ?? 0) === 0 && (yield* settle(batch))) continue
          const free = Math.min(
            settings.batchConcurrency - (perBatch.get(batch.id) ?? 0),
            settings.batchKeyConcurrency - (perToken.get(batch.tokenId) ?? 0)
          )
          for (let started = 0; started < free && !draining; started++) {
            bump(perBatch, batch.id, 1)
            bump(perToken, batch.tokenId, 1)
            yield* Effect.forkIn(worker(batch), workers)
          }
        }
      })

      yield* Effect.gen(function* () {
        while (true) {
          yield* poll.pipe(Effect.catchCause((cause) => Effect.logWarning("A batch poll failed", cause)))
          yield* latch.await.pipe(Effect.timeoutOption(settings.batchPollMillis))
          yield* latch.close
        }
      }).pipe(Effect.forkIn(scope))

      // On shutdown (runs before the poll loop is stopped, so leases keep being renewed): no new line (nor vendor
      // step) starts, the lines running (and vendor steps) finish and are recorded for up to `DRAIN_MILLIS`; then what still runs is interrupted, its
      // lines left to the takeover rule. Lines not started stay pending, for any instance at once.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          draining = true
          const deadline = (yield* Clock.currentTimeMillis) + DRAIN_MILLIS
          while ((perBatch.size > 0 || vendorBusy.size > 0) && (yield* Clock.currentTimeMillis) < deadline) {
            yield* Effect.sleep(20)
          }
          yield* Scope.close(workers, Exit.void)
        })
      )

      return BatchRunner.of({ wake: Effect.asVoid(latch.open), instance })
    })
  )
}
