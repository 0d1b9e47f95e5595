/**
 * The usage log's committer: a fiber that runs one commit every
 * `intervalMillis`, or at once when a caller waits for its rows to be
 * durable (a group commit: every caller that asks while one commit runs is
 * answered by the next, together).
 *
 * @since 0.1.0
 */
import { Deferred, Duration, Effect, type Scope } from "effect"

/**
 * The committer's handle.
 *
 * @category models
 */
export interface GroupCommit {
  /**
   * Resolves with the outcome (true: written) of the commit that starts next,
   * which it starts now instead of at the next tick. So it resolves once every
   * row recorded before the call is committed, or that commit failed.
   */
  readonly durable: Effect.Effect<boolean>
}

/**
 * Forks the committer into the scope: `commit` (which never fails, and tells
 * whether it wrote) runs every `intervalMillis`, or when `durable` wakes it.
 * Whoever still waits when the scope closes is answered false (the layer's
 * last flush then writes what is left).
 *
 * @category constructors
 */
export const startGroupCommit = (
  commit: Effect.Effect<boolean>,
  intervalMillis: number
): Effect.Effect<GroupCommit, never, Scope.Scope> =>
  Effect.gen(function* () {
    // `next` resolves when the commit that starts next ends (whether it wrote); a caller of `durable` takes it
    // and wakes the committer, which otherwise ticks every `intervalMillis`.
    let next = Deferred.makeUnsafe<boolean>()
    let wake = Deferred.makeUnsafe<void>()
    let waiting = false
    const cycle = Effect.gen(function* () {
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(intervalMillis)), Deferred.await(wake))
      wake = Deferred.makeUnsafe<void>()
      const ending = next
      waiting = false
      next = Deferred.makeUnsafe<boolean>()
      const written = yield* commit
      Deferred.doneUnsafe(ending, Effect.succeed(written))
    })
    yield* cycle.pipe(Effect.forever, Effect.forkScoped)
    yield* Effect.addFinalizer(() => Effect.sync(() => Deferred.doneUnsafe(next, Effect.succeed(false))))
    const durable = Effect.suspend(() => {
      const ending = next
      if (!waiting) {
        waiting = true
        Deferred.doneUnsafe(wake, Effect.void)
      }
      return Deferred.await(ending)
    })
    return { durable }
  })
