/**
 * What the health view counts (`src/accounts/HealthQueries.ts`): the failure kinds counted apart and the aggregates
 * of a set of usage rows.
 *
 * @since 0.5.0
 */
import { UpstreamFailureKind } from "../../errors/GatewayError.ts"

/** The failure kinds counted apart: the upstream failure kinds, `cancelled` (499) and `other`. @category models */
export const FAILURE_KINDS: ReadonlyArray<string> = [...UpstreamFailureKind.literals, "cancelled", "other"]

/**
 * Aggregates of a set of usage rows. Latencies in milliseconds (`null` when no attempt succeeded), tokens as
 * counted by the vendor, `quota` in quota units (1 = 0.000001 USD).
 *
 * @category models
 */
export interface HealthStats {
  readonly requests: number
  readonly errors: number
  /** Failed attempts by kind (`FAILURE_KINDS`); kinds with none are left out. */
  readonly errors_by_kind: Readonly<Record<string, number>>
  readonly p50_ms: number | null
  readonly p95_ms: number | null
  /**
   * Time to first token of the successful streamed attempts (`usage_logs.first_token_ms`), p50 and p95 in
   * milliseconds; `null` when none streamed.
   */
  readonly ttft_p50_ms: number | null
  readonly ttft_p95_ms: number | null
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
}
