/**
 * One pass over the webhook outbox: the due deliveries claimed
 * (`WebhookStore.claim`), each POSTed, signed (`DeliveryRules.ts`), through
 * the SSRF guard (`safeFetch`: no private address unless `allowHosts` trusts
 * the host, no redirect followed, at most 64 KiB of answer read), eight at
 * once; a success marks the row delivered, a failure schedules the next
 * attempt or gives the row up. The time signed is Effect's `Clock`.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { safeFetch } from "../../upstreams/transport/SafeFetch.ts"
import { afterFailure, type ClaimedDelivery, signedHeaders } from "./DeliveryRules.ts"
import type { WebhookStore } from "./WebhookStore.ts"

/** Where deliveries may go and how long one attempt may take (milliseconds). @category models */
export interface DeliverySettings {
  /** Host names trusted although they resolve to non-public addresses. */
  readonly allowHosts: ReadonlyArray<string>
  /** One attempt's time limit, in milliseconds. */
  readonly timeoutMs: number
}

/**
 * Attempts every due delivery once. Never fails: a storage failure is
 * logged (as a warning) and the rows it left claimed come due again within a
 * minute.
 *
 * @category delivery
 */
export const makeDeliverDue = (store: WebhookStore, settings: DeliverySettings): Effect.Effect<void> => {
  const attempt = Effect.fnUntraced(function* (delivery: ClaimedDelivery) {
    const now = new Date(yield* Clock.currentTimeMillis)
    const result = yield* safeFetch(delivery.url, {
      maxBytes: 64 * 1024,
      timeoutMs: settings.timeoutMs,
      allowHosts: settings.allowHosts,
      maxRedirects: 0,
      head: false,
      post: { body: delivery.payload, headers: signedHeaders(delivery, now) }
    }).pipe(Effect.result)
    if (result._tag === "Success") return yield* store.delivered(delivery.id)
    yield* store.failed(delivery.id, {
      lastStatus: result.failure.status ?? null,
      lastError: result.failure.message,
      ...afterFailure(delivery)
    })
  })
  return store.claim.pipe(
    Effect.flatMap((rows) => Effect.forEach(rows, attempt, { concurrency: 8, discard: true })),
    Effect.catch((error) => Effect.logWarning("Could not deliver webhooks", error.message))
  )
}
