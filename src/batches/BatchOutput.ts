/**
 * The end of an OpenAI batch: its output file (the lines that succeeded) and its error file (the lines answered
 * with an error, and those never run: cancelled or expired), each JSONL in input order, written through
 * `FileStore.createFromLines` (purpose `batch_output`) for the batch's user, read from the store page by page so no
 * batch is held whole. A file with no line is not made (its id stays `null`, as OpenAI leaves it).
 *
 * @since 0.4.0
 */
import { Effect, Option, Stream } from "effect"
import type { SqlClient } from "effect/sql"
import type { StorageUnavailable } from "../errors/GatewayError.ts"
import type { FileStore } from "../files/FileStore.ts"
import { encodeBatchOutputLine } from "../formats/batches/OpenAiBatch.ts"
import { type Batch, type FinishedLine, lineRequestId } from "./Batch.ts"
import { selectFinishedLines } from "./BatchSql.ts"

/** Lines read from the store per query. */
const PAGE = 500

/** Every finished line of `batch` that `keep` selects, encoded, in input order. */
const linesOf = (sql: SqlClient.SqlClient, batch: Batch, keep: (line: FinishedLine) => boolean) =>
  Stream.paginate(0, (from: number) =>
    Effect.map(selectFinishedLines(sql, batch.id, from, PAGE), (page) =>
      [
        page.filter(keep).map((line) =>
          encodeBatchOutputLine({
            customId: (JSON.parse(line.line) as { readonly custom_id: string }).custom_id,
            state: line.state === "pending" || line.state === "running" ? "errored" : line.state,
            statusCode: line.statusCode,
            result: line.result,
            requestId: lineRequestId(batch.publicId, line.lineIndex)
          })
        ),
        page.length < PAGE ? Option.none<number>() : Option.some(from + PAGE)
      ] as const))

/**
 * Writes `batch`'s output and error files when they have lines (`succeeded` and `others` say how many); their
 * ids.
 *
 * @category output
 */
export const writeBatchOutput = (
  sql: SqlClient.SqlClient,
  files: FileStore["Service"],
  batch: Batch,
  counts: { readonly succeeded: number; readonly others: number }
): Effect.Effect<{ readonly outputFileId: string | null; readonly errorFileId: string | null }, StorageUnavailable> =>
  Effect.gen(function* () {
    const output = counts.succeeded === 0 ? null : yield* files.createFromLines(
      batch.userId,
      linesOf(sql, batch, (line) => line.state === "succeeded"),
      { filename: `${batch.publicId}_output.jsonl`, purpose: "batch_output" }
    )
    const errors = counts.others === 0 ? null : yield* files.createFromLines(
      batch.userId,
      linesOf(sql, batch, (line) => line.state !== "succeeded"),
      { filename: `${batch.publicId}_error.jsonl`, purpose: "batch_output" }
    )
    return { outputFileId: output?.id ?? null, errorFileId: errors?.id ?? null }
  })
