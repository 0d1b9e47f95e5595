/**
 * The bulk change of a caller's own rows (`POST /api/token/bulk`, `POST /api/webhook/bulk`; docs/ACCOUNTS.md): the
 * body `{ids: [1–100 ids], action: enable | disable | delete}` and its answer, one result per distinct id in the
 * order given, each done on its own (one that fails, e.g. another user's id, does not stop the rest).
 *
 * @since 0.5.0
 */
import { Effect, Schema } from "effect"
import type { GatewayError } from "../../errors/GatewayError.ts"
import { toProblem } from "../../errors/Envelope.ts"
import { Id } from "./Fields.ts"

/** The body of a bulk change. @category decoding */
export const BulkBody = Schema.Struct({
  ids: Schema.Array(Id).check(Schema.isMinLength(1), Schema.isMaxLength(100)),
  action: Schema.Literals(["enable", "disable", "delete"])
})

/** One id's result: done (with the row's `status` after an enable or disable) or the reason it was not. @category models */
export type BulkResult =
  | { readonly id: number; readonly success: true; readonly status?: string }
  | { readonly id: number; readonly success: false; readonly message: string }

/**
 * Runs `body`'s action on each of its distinct ids with `rows`' own operations (each owner-checked by them); every
 * failure becomes that id's result in the api envelope's words (`toProblem`), never the whole answer's.
 *
 * @category actions
 */
export const runBulk = <E extends GatewayError>(
  body: typeof BulkBody.Type,
  rows: {
    readonly remove: (id: number) => Effect.Effect<unknown, E>
    readonly setEnabled: (id: number, enabled: boolean) => Effect.Effect<{ readonly status: string }, E>
  }
): Effect.Effect<ReadonlyArray<BulkResult>> =>
  Effect.forEach([...new Set(body.ids)], (id) =>
    Effect.match(
      body.action === "delete"
        ? Effect.as(rows.remove(id), undefined)
        : Effect.map(rows.setEnabled(id, body.action === "enable"), (row) => row.status),
      {
        onFailure: (error): BulkResult => ({ id, success: false, message: toProblem(error).message }),
        onSuccess: (status): BulkResult => status === undefined ? { id, success: true } : { id, success: true, status }
      }
    ))
