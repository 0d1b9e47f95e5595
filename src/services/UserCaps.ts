/**
 * Per-user caps on work that outlives its request: video and image tasks
 * unfinished upstream (`maxTasksInFlight`) and asset URL checks pending
 * (`maxPendingAssets`). A submit reserves its place in this instance before
 * it counts the user's rows, and holds it until the submit is done, so a
 * burst of parallel submits cannot all pass a count taken before any of them
 * wrote its row. Past the cap: `RateLimited` (429 with `Retry-After`), in the
 * route's own envelope.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { RateLimited, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** The caps. @category models */
export interface CapOptions {
  readonly maxTasksInFlight: number
  readonly maxPendingAssets: number
}

/** @category services */
export class UserCaps extends Context.Service<UserCaps, {
  /**
   * Runs `submit` when `userId` has fewer than `maxTasksInFlight` tasks queued or in progress;
   * `StorageUnavailable` when they cannot be counted (nothing is run then).
   */
  readonly task: <A, E, R>(
    userId: bigint,
    submit: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | RateLimited | StorageUnavailable, R>
  /** Runs `create` when `userId` has fewer than `maxPendingAssets` assets being checked (else as `task`). */
  readonly asset: <A, E, R>(
    userId: bigint,
    create: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | RateLimited | StorageUnavailable, R>
}>()("sluice/services/UserCaps") {
  /** SQL-backed counts plus this instance's submits in progress. */
  static readonly layer = (options: CapOptions) =>
    Layer.effect(
      UserCaps,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient

        const capped = (
          cap: number,
          count: (userId: bigint) => Effect.Effect<number, StorageUnavailable>,
          refusal: () => RateLimited
        ) => {
          const submitting = new Map<bigint, number>()
          return <A, E, R>(
            userId: bigint,
            work: Effect.Effect<A, E, R>
          ): Effect.Effect<A, E | RateLimited | StorageUnavailable, R> =>
            Effect.acquireUseRelease(
              Effect.sync(() => {
                submitting.set(userId, (submitting.get(userId) ?? 0) + 1)
              }),
              () =>
                Effect.flatMap(count(userId), (stored): Effect.Effect<A, E | RateLimited | StorageUnavailable, R> => {
                  // Rows already written plus the submits of this instance still running (this one included).
                  const total = stored + (submitting.get(userId) ?? 1)
                  return total > cap ? Effect.fail(refusal()) : work
                }),
              () =>
                Effect.sync(() => {
                  const left = (submitting.get(userId) ?? 1) - 1
                  if (left <= 0) submitting.delete(userId)
                  else submitting.set(userId, left)
                })
            )
        }

        const unfinishedTasks = (userId: bigint) =>
          sql<{ n: bigint }>`SELECT count(*) AS n FROM tasks
            WHERE user_id = ${userId} AND status IN ('queued', 'in_progress')`.pipe(
            Effect.map(([row]) => Number(row?.n ?? 0)),
            storageFailure("caps.tasks")
          )

        const pendingAssets = (userId: bigint) =>
          sql<{ n: bigint }>`SELECT count(*) AS n FROM assets WHERE user_id = ${userId} AND status = 'Processing'`
            .pipe(Effect.map(([row]) => Number(row?.n ?? 0)), storageFailure("caps.assets"))

        return UserCaps.of({
          task: capped(options.maxTasksInFlight, unfinishedTasks, () =>
            new RateLimited({
              message:
                `You have ${options.maxTasksInFlight} tasks unfinished, the most allowed at once; wait for one to finish.`,
              retryAfterSeconds: 10
            })),
          asset: capped(options.maxPendingAssets, pendingAssets, () =>
            new RateLimited({
              message:
                `You have ${options.maxPendingAssets} assets being checked, the most allowed at once; try again shortly.`,
              retryAfterSeconds: 2
            }))
        })
      })
    )
}
