/**
 * A delegated batch's vendor results laid onto its lines: each of the batch's lines (by index, with its
 * `custom_id`) gets the result the vendor reported for its `custom_id`, as `BatchSql.finishLine` records it for a
 * line the gateway ran, with its usage and its cost at the batch prices (`VendorLineUsage.ts`); a line the vendor
 * left out ends `canceled` (the batch was cancelled) or `expired` (it ran out of its window) and costs nothing, as
 * does every line that did not succeed.
 *
 * @since 0.4.0
 */
import type { Price } from "../../domain/Pricing.ts"
import type { VendorApi, VendorLineResult } from "./VendorBatchApi.ts"
import { lineCost, type LineUsage, lineUsage } from "./VendorLineUsage.ts"

/** One line of the batch as stored: its index, `custom_id` and model (as the caller named it). @category models */
export interface BatchLineRef {
  readonly lineIndex: number
  readonly customId: string
  readonly model: string
}

/**
 * A line's end: what is recorded (state, HTTP status, result JSON text), the usage it reported and what it costs
 * (quota units; 0 for a line that did not succeed or reported no usage).
 *
 * @category models
 */
export interface VendorLineEnd {
  readonly lineIndex: number
  readonly model: string
  readonly state: VendorLineResult["state"]
  readonly statusCode: number | null
  readonly result: string | null
  readonly usage: LineUsage | undefined
  readonly cost: bigint
}

const parsed = (text: string | null): unknown => {
  if (text === null) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The ends of `lines` from the vendor's `results` of a batch of `api` that ended `end`; `priceOf(model)` is the
 * model's price (`undefined`: unpriced, costs 0) and `ratio` the group ratio (fixed-point). A `custom_id` the vendor
 * reported twice keeps its first result; one no line has is ignored.
 *
 * @category billing
 */
export const vendorLineEnds = (
  api: VendorApi,
  end: "completed" | "cancelled" | "expired" | "failed",
  lines: ReadonlyArray<BatchLineRef>,
  results: ReadonlyArray<VendorLineResult>,
  ratio: bigint,
  priceOf: (model: string) => Price | undefined
): ReadonlyArray<VendorLineEnd> => {
  const byCustomId = new Map<string, VendorLineResult>()
  for (const result of results) if (!byCustomId.has(result.customId)) byCustomId.set(result.customId, result)
  return lines.map((line) => {
    const result = byCustomId.get(line.customId)
    if (result === undefined) {
      return {
        lineIndex: line.lineIndex,
        model: line.model,
        state: end === "expired" ? "expired" : "canceled",
        statusCode: null,
        result: null,
        usage: undefined,
        cost: 0n
      }
    }
    const usage = result.state === "succeeded" ? lineUsage(api, parsed(result.result)) : undefined
    const price = priceOf(line.model)
    return {
      lineIndex: line.lineIndex,
      model: line.model,
      state: result.state,
      statusCode: result.statusCode,
      result: result.result,
      usage,
      cost: usage === undefined || price === undefined ? 0n : lineCost(ratio, price, usage)
    }
  })
}
