/**
 * The service boundary of a store: a failed statement (`SqlError`: the
 * connection refused or lost, the pool timed out, the server failed it)
 * becomes `StorageUnavailable`, which the error table answers with 503
 * `storage_unavailable` and `Retry-After`, instead of a defect (a 500).
 * What else the wrapped effect fails with stays typed; a failure that is
 * truly a bug (a decode of the gateway's own rows) is made a defect by its
 * caller, with a word why.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlError } from "effect/sql"
import { StorageUnavailable } from "../errors/GatewayError.ts"

/**
 * Wraps a store's statement (or transaction) so that its `SqlError` fails
 * with `StorageUnavailable({ operation })`; `operation` is a fixed name of
 * what could not be done (`auth.lookup`), never SQL text or parameters. The
 * effect's other failures (a domain error of a transaction) are kept as they
 * are.
 *
 * @category storage
 */
export const storageFailure = (operation: string) =>
<A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError> | StorageUnavailable, R> =>
  Effect.catch(
    effect,
    (error): Effect.Effect<never, Exclude<E, SqlError.SqlError> | StorageUnavailable> =>
      Effect.fail(
        SqlError.isSqlError(error) ? new StorageUnavailable({ operation }) : error as Exclude<E, SqlError.SqlError>
      )
  )
