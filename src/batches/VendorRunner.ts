/**
 * Delegation of a batch to a vendor's batch API, driven by the batch runner's poll (`BatchRunner.ts`; docs/ROUTES.md,
 * "Vendor delegation"; docs/BILLING.md, "Batches"). Its steps, each taken by the one instance holding the batch's
 * vendor claim (`VendorSql.ts`):
 *
 * 1. **Decide** (a batch not decided yet): the batch's lines, the key's candidates for every model they name, and
 *    `vendorTarget` say whether it goes to a vendor. Not delegated, or the vendor refusing the submit: the phase is
 *    `gateway` and the runner's workers run the lines as before (a refusal is logged as `vendor_error`, without the
 *    key). Delegated: the lines go up with the channel's key and model mapping (`submitVendorBatch`, each line's
 *    `custom_id` the gateway's own `l<line index>`), and the vendor's ids are stored (`running`).
 * 2. **Poll** every `batch_vendor_poll_ms`: a cancel, or the batch's window passing, is forwarded to the vendor
 *    (`cancelling`); each poll retrieves the vendor batch. A vendor batch that `failed` (its validation) goes back to
 *    the gateway, whose workers run its lines.
 * 3. **Finish**: once the vendor batch ended, its results are laid onto the lines (`VendorLines.ts`) page by page;
 *    each line that succeeded is held and booked at its cost at the batch prices through the `Ledger`
 *    (`hold(cost)` then `book`, its usage row `<batch id>.<line index>` in the same step), a line that failed or
 *    reported no usage logs a row of cost 0, a line the vendor never ran (cancelled, expired) logs none. The page's
 *    charges are made durable (one journal append) before its results are recorded on the lines, in a transaction
 *    that checks the claim is still held. A line whose usage row exists already (an instance stopped between the
 *    two) is recorded without being billed again (`loggedRequests`). A key out of quota or budget gets the route's
 *    own error as that line's result, at no cost: the answer is not given away. Then the phase is `done` and the
 *    runner ends the batch as it ends a gateway-run one (`completed`, `cancelled`, or `expired`).
 *
 * @since 0.4.0
 */
import { Clock, Duration, Effect, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { Ledger } from "../billing/Ledger.ts"
import type { Hold } from "../billing/QuotaLedger.ts"
import type { UsageRow } from "../billing/UsageLog.ts"
import { envelopeBody, toProblem } from "../errors/Envelope.ts"
import type { BudgetExceeded, InsufficientQuota, InvalidApiKey } from "../errors/GatewayError.ts"
import { Auth, type Principal } from "../services/Auth.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { isTextPriced } from "../domain/Pricing.ts"
import { Catalog } from "../storage/Catalog.ts"
import { type Batch, lineRequestId } from "./Batch.ts"
import {
  cancelVendorBatch,
  retrieveVendorBatch,
  submitVendorBatch,
  vendorBatchResults,
  type VendorBatchState,
  type VendorLineInput,
  type VendorLineResult
} from "./vendor/VendorBatchApi.ts"
import type { VendorBatchError } from "./vendor/VendorBatchError.ts"
import { type VendorLineEnd, vendorLineEnds } from "./vendor/VendorLines.ts"
import { vendorTarget } from "./vendor/VendorTarget.ts"
import {
  claimDecision,
  claimPoll,
  type LineRecord,
  loggedRequests,
  recordLines,
  renewClaim,
  selectLines,
  setPhase,
  setSubmitted,
  type VendorPhase,
  type VendorState
} from "./VendorSql.ts"

/** Lines read from the store, and finished, per step. */
const PAGE = 500

/** The `custom_id` a line goes to the vendor with: its index, so a caller's id never has to suit a vendor. */
const vendorCustomId = (lineIndex: number): string => `l${lineIndex}`

/** A line as stored: `{custom_id, body}` (and, for OpenAI, `method` and `url`). */
const bodyOf = (line: string): Record<string, unknown> | undefined => {
  try {
    const parsed = JSON.parse(line) as { readonly body?: unknown }
    return typeof parsed.body === "object" && parsed.body !== null && !Array.isArray(parsed.body)
      ? parsed.body as Record<string, unknown>
      : undefined
  } catch {
    return undefined
  }
}

/** A gateway-made error result in OpenAI's envelope (the Anthropic view rewraps it). */
const refusal = (error: InsufficientQuota | BudgetExceeded | InvalidApiKey) => {
  const problem = toProblem(error)
  return { statusCode: problem.status, result: JSON.stringify(envelopeBody("gateway", problem)) }
}

/** A vendor call's failure as the log tells it: status and detail (the detail never holds the key). */
const vendorError = (error: VendorBatchError): string => `${error.status} ${error.detail}`.slice(0, 500)

/** The vendor delegation of one instance. @category models */
export interface VendorRunner {
  /**
   * Takes `batch`'s next vendor step (`phase` as last read; `undefined`: not decided): decide and submit, or poll,
   * or finish. Does nothing when another instance holds the batch or nothing is due. Failures are logged; the step
   * is taken again at a later poll.
   */
  readonly advance: (batch: Batch, phase: VendorPhase | undefined) => Effect.Effect<void>
}

/**
 * The vendor delegation of the instance named `instance`, over the SQL client, `GatewaySettings`, `Auth`,
 * `ChannelRouter`, `Catalog` and `Ledger`.
 *
 * @category constructors
 */
export const makeVendorRunner = (instance: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* GatewaySettings
    const auth = yield* Auth
    const router = yield* ChannelRouter
    const catalog = yield* Catalog
    const ledger = yield* Ledger
    const leaseMillis = settings.batchLeaseMillis
    // Lines this instance billed whose results are not recorded yet (a page whose record failed is finished again).
    const billedHere = new Set<string>()

    const principalOf = (batch: Batch) =>
      auth.authenticateDigest(batch.keyHash, batch.clientAddress ?? undefined).pipe(
        Effect.catchTag("InvalidApiKey", (error) => Effect.succeed(error))
      )

    const toGateway = (batch: Batch, reason: string, error?: VendorBatchError) =>
      Effect.gen(function* () {
        yield* setPhase(sql, batch.id, instance, "gateway")
        const log = error === undefined
          ? Effect.logDebug("Batch runs on the gateway")
          : Effect.logWarning("A vendor refused a batch; it runs on the gateway")
        yield* log.pipe(
          Effect.annotateLogs({
            batch: batch.publicId,
            reason,
            ...(error === undefined ? {} : { vendor_error: vendorError(error) })
          })
        )
      })

    /** Runs `effect` while renewing this instance's claim of `batch` every third of its lease (a long upload). */
    const heartbeat = <A, E>(batch: Batch, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.scoped(Effect.gen(function* () {
        yield* renewClaim(sql, batch.id, instance, leaseMillis).pipe(
          Effect.repeat(Schedule.spaced(Duration.millis(Math.max(10, Math.floor(leaseMillis / 3))))),
          Effect.delay(Duration.millis(Math.max(10, Math.floor(leaseMillis / 3)))),
          Effect.forkScoped
        )
        return yield* effect
      }))

    /** Every line of `batch`, in input order. */
    const allLines = (batch: Batch) =>
      Effect.gen(function* () {
        const lines: Array<{ readonly lineIndex: number; readonly line: string }> = []
        for (let from = 0;; from += PAGE) {
          const page = yield* selectLines(sql, batch.id, from, PAGE)
          lines.push(...page)
          if (page.length < PAGE) return lines
        }
      })

    const decide = Effect.fnUntraced(function* (batch: Batch) {
      const claim = yield* claimDecision(sql, batch.id, instance, leaseMillis)
      if (claim === undefined) return
      if (batch.status !== "in_progress") return yield* toGateway(batch, "not in progress")
      // No channel delegates anything (the common case): the lines need not be read.
      const delegating = [...catalog.snapshot().channels.values()].some((channel) =>
        channel.enabled && channel.settings.vendor_batches === true
      )
      if (!delegating) return yield* toGateway(batch, "no channel delegates batches")
      const principal = yield* principalOf(batch)
      if ("_tag" in principal) return yield* toGateway(batch, "key refused")
      const inputs: Array<VendorLineInput> = []
      const candidatesByModel = new Map<string, ReadonlyArray<Candidate>>()
      for (const { lineIndex, line } of yield* allLines(batch)) {
        const body = bodyOf(line)
        const model = body?.model
        if (body === undefined || typeof model !== "string") return yield* toGateway(batch, "a line names no model")
        if (!candidatesByModel.has(model)) {
          const price = catalog.snapshot().prices.get(model)
          if (price === undefined || !isTextPriced(price)) return yield* toGateway(batch, "a model is not priced")
          const candidates = yield* router.candidates(principal, model).pipe(
            Effect.catchTag("ModelNotFound", () => Effect.succeed([]))
          )
          if (candidates.length === 0) return yield* toGateway(batch, "a model has no channel")
          candidatesByModel.set(model, candidates)
        }
        inputs.push({ customId: vendorCustomId(lineIndex), body })
      }
      const target = vendorTarget(batch.api, batch.endpoint, candidatesByModel)
      if (target === undefined) return yield* toGateway(batch, "no channel delegates it")
      const { channel, key } = target.candidate
      const submitted = yield* Effect.result(heartbeat(
        batch,
        submitVendorBatch(
          target.api,
          channel,
          key.key,
          batch.endpoint,
          inputs,
          (model) => target.upstreamModels.get(model) ?? model
        )
      ))
      if (submitted._tag === "Failure") return yield* toGateway(batch, "vendor refused", submitted.failure)
      yield* setSubmitted(sql, batch.id, instance, {
        api: target.api,
        channelId: channel.id,
        keyPosition: key.position,
        vendorBatchId: submitted.success.id,
        vendorFileId: submitted.success.fileId
      })
      yield* Effect.logInfo("Batch delegated to a vendor").pipe(
        Effect.annotateLogs({ batch: batch.publicId, channel: channel.name, lines: inputs.length })
      )
    })

    /** The usage row of a line's end: its request id tags it with the batch. */
    const rowOf =
      (batch: Batch, channelId: number, upstreamModel: string, end: VendorLineEnd) => (charged: bigint): UsageRow => ({
        requestId: lineRequestId(batch.publicId, end.lineIndex),
        attempt: 1,
        userId: batch.userId,
        tokenId: batch.tokenId,
        channelId,
        model: end.model,
        upstreamModel,
        promptTokens: end.usage?.promptTokens ?? 0,
        completionTokens: end.usage?.completionTokens ?? 0,
        cachedTokens: end.usage?.cachedTokens ?? 0,
        reasoningTokens: 0,
        cost: charged,
        latencyMs: 0,
        stream: false,
        status: end.statusCode ?? 200,
        error: end.state === "succeeded" ? null : `The vendor's batch failed this line (status ${end.statusCode}).`
      })

    /** Bills and records one page of ends; fails (nothing recorded) when its charges could not be made durable. */
    const finishPage = Effect.fnUntraced(function* (
      batch: Batch,
      claim: VendorState & { readonly channelId: number },
      principal: Principal | InvalidApiKey,
      modelMapping: Readonly<Record<string, string>>,
      ends: ReadonlyArray<VendorLineEnd>
    ) {
      const ran = ends.filter((end) => end.state === "succeeded" || end.state === "errored")
      const logged = yield* loggedRequests(sql, ran.map((end) => lineRequestId(batch.publicId, end.lineIndex)))
      const booked: Array<{ readonly hold: Hold; readonly charged: bigint; readonly requestId: string }> = []
      const records: Array<LineRecord> = []
      for (const end of ends) {
        const requestId = lineRequestId(batch.publicId, end.lineIndex)
        const record = { lineIndex: end.lineIndex, state: end.state, statusCode: end.statusCode, result: end.result }
        if (end.state === "canceled" || end.state === "expired" || logged.has(requestId) || billedHere.has(requestId)) {
          records.push(record)
          continue
        }
        const row = rowOf(batch, claim.channelId, modelMapping[end.model] ?? end.model, end)
        if (end.cost === 0n) {
          ledger.record(row(0n))
          records.push(record)
          continue
        }
        // Held and booked in one uninterruptible step, so no hold is left behind by an interruption.
        const held:
          | { readonly hold: Hold; readonly charged: bigint }
          | { readonly refused: InsufficientQuota | BudgetExceeded | InvalidApiKey } = "_tag" in principal
            ? { refused: principal }
            : yield* ledger.hold(principal, end.cost).pipe(
              Effect.flatMap((hold) => Effect.map(ledger.book(hold, end.cost, row), (charged) => ({ hold, charged }))),
              Effect.catchTags({
                InsufficientQuota: (error) => Effect.succeed({ refused: error }),
                BudgetExceeded: (error) => Effect.succeed({ refused: error })
              }),
              Effect.uninterruptible
            )
        if ("refused" in held) {
          // Not covered: the answer is withheld, as the route refuses a request it cannot hold.
          const refused = refusal(held.refused)
          records.push({ ...record, state: "errored", ...refused })
          ledger.record({ ...row(0n), status: refused.statusCode, error: `Not billed: ${held.refused._tag}.` })
          continue
        }
        const { hold, charged } = held
        booked.push({ hold, charged, requestId })
        billedHere.add(requestId)
        records.push(record)
      }
      if (!(yield* ledger.durable)) {
        for (const entry of booked) {
          if (ledger.withdraw(entry.hold, entry.charged, entry.requestId, 1)) billedHere.delete(entry.requestId)
        }
        return yield* Effect.fail("The charges of a vendor batch's lines could not be made durable." as const)
      }
      // Recorded, or the claim lost (the instance holding it now finds these lines' rows): billed here no more.
      yield* recordLines(sql, batch.id, instance, leaseMillis, records)
      for (const entry of booked) billedHere.delete(entry.requestId)
    })

    /** Lays the vendor's `results` onto every line of `batch` and bills them, page by page. */
    const finish = Effect.fnUntraced(function* (
      batch: Batch,
      claim: VendorState & { readonly channelId: number },
      api: "openai" | "anthropic",
      end: VendorBatchState["end"] & string,
      expired: boolean,
      modelMapping: Readonly<Record<string, string>>,
      results: ReadonlyArray<VendorLineResult>
    ) {
      const principal = yield* principalOf(batch)
      const snapshot = catalog.snapshot()
      const ratio = ("_tag" in principal ? undefined : snapshot.groups.get(principal.group)?.ratio) ?? 1_000_000_000n
      for (let from = 0;; from += PAGE) {
        const page = yield* selectLines(sql, batch.id, from, PAGE)
        const refs = page.flatMap(({ lineIndex, line }) => {
          const model = bodyOf(line)?.model
          return [{ lineIndex, customId: vendorCustomId(lineIndex), model: typeof model === "string" ? model : "" }]
        })
        const ends = vendorLineEnds(api, expired ? "expired" : end, refs, results, ratio, (model) =>
          snapshot.prices.get(model)).map((line) =>
            expired && line.state === "canceled" ? { ...line, state: "expired" as const } : line
          )
        yield* finishPage(batch, claim, principal, modelMapping, ends)
        if (page.length < PAGE) {
          return
        }
      }
    })

    const poll = Effect.fnUntraced(function* (batch: Batch) {
      const claim = yield* claimPoll(sql, batch.id, instance, leaseMillis, settings.batchVendorPollMillis)
      if (claim === undefined) {
        return
      }
      const { api, channelId, keyPosition, vendorBatchId } = claim
      if (api === undefined || channelId === undefined || vendorBatchId === undefined) {
        return
      }
      const channel = catalog.snapshot().channels.get(channelId)
      const key = channel?.keys.find((candidate) =>
        candidate.position === keyPosition
      )
      if (channel === undefined || key === undefined) {
        return yield* Effect.logWarning("A delegated batch's channel or key is gone; it cannot be polled").pipe(
          Effect.annotateLogs({ batch: batch.publicId, channel: channelId })
        )
      }
      const now = yield* Clock.currentTimeMillis
      const cancelled = batch.status === "cancelling" || batch.cancelInitiatedAt !== null
      const expired = !cancelled && batch.expiresAt.getTime() <= now
      let phase = claim.phase ?? "running"
      const logVendor = (message: string) => (error: VendorBatchError) =>
        Effect.logWarning(message).pipe(
          Effect.annotateLogs({ batch: batch.publicId, vendor_error: vendorError(error) })
        )
      if (phase === "running" && (cancelled || expired)) {
        yield* cancelVendorBatch(api, channel, key.key, vendorBatchId).pipe(
          Effect.catch(logVendor("A vendor batch could not be cancelled"))
        )
        phase = "cancelling"
        yield* setPhase(sql, batch.id, instance, phase)
      }
      const state = yield* Effect.result(retrieveVendorBatch(api, channel, key.key, vendorBatchId))
      if (state._tag === "Failure") {
        yield* logVendor("A vendor batch could not be retrieved")(state.failure)
        return yield* Effect.asVoid(setPhase(sql, batch.id, instance, phase, true))
      }
      if (state.success.phase !== "ended" || state.success.end === undefined) {
        return yield* Effect.asVoid(setPhase(sql, batch.id, instance, phase, true))
      }
      if (state.success.end === "failed") {
        return yield* toGateway(batch, "the vendor failed the batch")
      }
      const results = yield* Effect.result(
        heartbeat(batch, vendorBatchResults(api, channel, key.key, vendorBatchId, state.success))
      )
      if (results._tag === "Failure") {
        yield* logVendor("A vendor batch's results could not be read")(results.failure)
        return yield* Effect.asVoid(setPhase(sql, batch.id, instance, phase, true))
      }
      yield* heartbeat(
        batch,
        finish(
          batch,
          { ...claim, channelId },
          api,
          state.success.end,
          expired,
          channel.modelMapping,
          results.success
        )
      )
      yield* setPhase(sql, batch.id, instance, "done", true)
    })

    return {
      advance: (batch, phase) =>
        (phase === undefined || phase === "deciding" ? decide(batch) : poll(batch)).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("A vendor batch step failed", cause).pipe(
              Effect.annotateLogs({ batch: batch.publicId })
            )
          )
        )
    } satisfies VendorRunner
  })
