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
import { Cause, Effect } from "effect"
import { SqlError } from "effect/sql"
import { StorageUnavailable } from "../errors/GatewayError.ts"

/** Whether `reason` is a statement's `SqlError`, failed or died of (a lost connection can fail a ROLLBACK too). */
const isSqlReason = <E>(reason: Cause.Reason<E>): boolean =>
  (Cause.isFailReason(reason) && SqlError.isSqlError(reason.error)) ||
  (Cause.isDieReason(reason) && SqlError.isSqlError(reason.defect))

/**
 * Wraps a store's statement (or transaction) so that its `SqlError` fails
 * with `StorageUnavailable({ operation })`; `operation` is a fixed name of
 * what could not be done (`auth.lookup`), never SQL text or parameters. A
 * transaction whose connection was lost can die of its `SqlError` (its
 * ROLLBACK fails too): that is the same failure. The effect's other failures
 * (a domain error of a transaction), its other defects and an interruption
 * are kept exactly as they are.
 *
 * @category storage
 */
export const storageFailure = (operation: string) =>
<A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError> | StorageUnavailable, R> =>
  Effect.catchCause(
    effect,
    (cause): Effect.Effect<never, Exclude<E, SqlError.SqlError> | StorageUnavailable> =>
      !Cause.hasInterrupts(cause) && cause.reasons.some(isSqlReason)
        ? Effect.fail(new StorageUnavailable({ operation }))
        // No SqlError in it: the cause's failures are the other members of `E`.
        : Effect.failCause(cause as Cause.Cause<Exclude<E, SqlError.SqlError>>)
  )
