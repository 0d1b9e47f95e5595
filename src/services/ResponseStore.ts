/**
 * Keeps the conversations of the Responses answers the gateway served (unless
 * the caller sent `store: false`), for the key that made them, so
 * `previous_response_id` works on every upstream type.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Message } from "../canonical/Request.ts"
import { NotFound } from "../errors/GatewayError.ts"

/** @category services */
export class ResponseStore extends Context.Service<ResponseStore, {
  /** Saves the whole conversation (input and answer) under the answer's id. */
  readonly save: (id: string, tokenId: bigint, messages: ReadonlyArray<Message>) => Effect.Effect<void>
  /** The conversation behind `id`, for this token only; `NotFound` (param `previous_response_id`) otherwise. */
  readonly load: (id: string, tokenId: bigint) => Effect.Effect<ReadonlyArray<Message>, NotFound>
}>()("sluice/services/ResponseStore") {
  /** SQL-backed. */
  static readonly layer = Layer.effect(
    ResponseStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return ResponseStore.of({
        save: (id, tokenId, messages) =>
          sql`INSERT INTO stored_responses (id, token_id, messages)
              VALUES (${id}, ${tokenId}, ${JSON.stringify(messages)})
              ON CONFLICT (id) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
        load: (id, tokenId) =>
          sql<{ readonly messages: ReadonlyArray<Message> }>`
            SELECT messages FROM stored_responses WHERE id = ${id} AND token_id = ${tokenId}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) =>
              rows.length === 0
                ? Effect.fail(new NotFound({ what: "response", id, param: "previous_response_id" }))
                : Effect.succeed(rows[0].messages)
            )
          )
      })
    })
  )
}
