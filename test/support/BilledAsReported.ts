/**
 * The billing check of the channel-type tests: each successful usage row holds exactly the tokens the emulator
 * recorded for the matching upstream answer, priced at the channel's prices — the ledger compared with the vendor,
 * never with itself.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { RecordedRequest } from "../../emulator/Emulator.ts"
import type { ReportedUsage } from "../../emulator/ReportedUsage.ts"
import type { TestGateway } from "./Gateway.ts"

/** A usage row as the checks read it (`cost` in quota units, as text). */
export interface UsageRow {
  readonly id: string
  readonly model: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cached_tokens: number
  readonly cost: string
  readonly status: number
}

/** The usage rows logged after row `after` (an id, as text), oldest first. */
export const rowsAfter = (gateway: TestGateway, after: string): Promise<ReadonlyArray<UsageRow>> =>
  gateway.query<UsageRow>(
    `SELECT id::text AS id, model, prompt_tokens, completion_tokens, cached_tokens, cost::text AS cost, status
     FROM usage_logs WHERE id > ${after} ORDER BY usage_logs.id`
  )

/** The POSTs (answering calls) the emulator recorded since request number `from`. */
export const postsSince = (gateway: TestGateway, from: number): ReadonlyArray<RecordedRequest> =>
  gateway.emulator.requests.slice(from).filter((request) => request.method === "POST")

/**
 * How a vendor's usage reads and is priced: prices in quarter quota units a token (a USD-per-million price of 2 is
 * 8 quarters), and whether the vendor's input count leaves the cache reads and writes out (Messages, Converse) or
 * holds the cached tokens (OpenAI's wire, DeepSeek's, generate-content).
 */
export interface BilledAs {
  readonly vendor: string
  readonly quarters: {
    readonly input: number
    readonly cachedInput: number
    readonly cacheWrite: number
    readonly output: number
  }
  readonly cacheApart: boolean
}

/** The prompt tokens a row shows for `usage`: the whole prompt, cache included. */
const promptOf = (usage: ReportedUsage, as: BilledAs): number =>
  as.cacheApart ? usage.input + usage.cacheRead + usage.cacheWrite : usage.input

/** The cost in quota units of `usage`: uncached input, cache reads, cache writes and output at their prices. */
export const pricedAsReported = (usage: ReportedUsage, as: BilledAs): bigint => {
  const uncached = as.cacheApart ? usage.input : usage.input - usage.cacheRead - usage.cacheWrite
  const quarters = as.quarters.input * uncached + as.quarters.cachedInput * usage.cacheRead +
    as.quarters.cacheWrite * usage.cacheWrite + as.quarters.output * usage.output
  return BigInt(Math.ceil(quarters / 4))
}

/** Each successful row of `rows` billed exactly what the matching answer of `reported` said, in order. */
export const assertBilledAsReported = (
  rows: ReadonlyArray<UsageRow>,
  reported: ReadonlyArray<RecordedRequest>,
  as: BilledAs
): void => {
  const billed = rows.filter((row) => row.status < 400)
  strictEqual(billed.length, reported.length, "one billed row per answer")
  billed.forEach((row, index) => {
    const usage = reported[index].usage
    ok(usage !== undefined, `row ${row.id}: the emulator recorded usage`)
    deepStrictEqual(
      { prompt: row.prompt_tokens, completion: row.completion_tokens, cached: row.cached_tokens },
      { prompt: promptOf(usage, as), completion: usage.output, cached: usage.cacheRead },
      `row ${row.id}: the tokens ${as.vendor} reported`
    )
    strictEqual(BigInt(row.cost), pricedAsReported(usage, as), `row ${row.id}: priced as ${as.vendor} reported`)
  })
}

/**
 * A reader of the rows logged since its last read. A delivered answer's row is durable before its end reaches the
 * caller; a failed attempt's row is written off the request's path, so `failed` waits (up to 5 s) until that many
 * failed rows are in.
 */
export const rowReader = (gateway: TestGateway): (failed?: number) => Promise<ReadonlyArray<UsageRow>> => {
  let lastRow = "0"
  return async (failed = 0) => {
    let rows = await rowsAfter(gateway, lastRow)
    for (let tries = 0; rows.filter((row) => row.status >= 400).length < failed && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      rows = await rowsAfter(gateway, lastRow)
    }
    if (rows.length > 0) lastRow = rows.at(-1)!.id
    return rows
  }
}
