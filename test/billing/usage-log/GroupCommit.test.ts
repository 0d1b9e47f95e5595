/**
 * The usage log's committer under `TestClock`: it commits every interval to
 * the millisecond, a caller waiting for durability starts the commit at once,
 * every caller that asks before that commit starts is answered by it
 * (together), a failed commit answers false, and a caller still waiting when
 * the scope closes is answered false.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import { startGroupCommit } from "../../../src/billing/usage-log/GroupCommit.ts"

/** Runs `body` with a committer whose commits are counted and answer `written()`. */
const withCommitter = (
  body: (
    durable: Effect.Effect<boolean>,
    commits: () => number,
    scope: Scope.Closeable
  ) => Effect.Effect<void>,
  written: () => boolean = () => true
) =>
  Effect.runPromise(
    Effect.gen(function* () {
      let count = 0
      const scope = yield* Scope.make()
      const { durable } = yield* startGroupCommit(
        Effect.sync(() => {
          count += 1
          return written()
        }),
        250
      ).pipe(Scope.provide(scope))
      yield* body(durable, () => count, scope)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(TestClock.layer()))
  )

Deno.test("group commit: one commit every interval, to the millisecond (TestClock)", () =>
  withCommitter((_, commits) =>
    Effect.gen(function* () {
      yield* TestClock.adjust(249)
      strictEqual(commits(), 0)
      yield* TestClock.adjust(1)
      strictEqual(commits(), 1)
      yield* TestClock.adjust(500)
      strictEqual(commits(), 3)
    })
  ))

Deno.test("group commit: a waiting caller starts the commit at once; callers during it share the next one", () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      // Each commit waits for its own gate, so the test decides when it ends.
      const gates = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
      let count = 0
      const commit = Effect.suspend(() => Deferred.await(gates[count++])).pipe(Effect.as(true))
      const { durable } = yield* startGroupCommit(commit, 250).pipe(Scope.provide(scope))
      const first = yield* Effect.forkChild(durable)
      yield* Effect.yieldNow
      strictEqual(count, 1, "no time passed: the wake-up, not the tick, started it")
      const second = yield* Effect.forkChild(durable)
      const third = yield* Effect.forkChild(durable)
      yield* Effect.yieldNow
      Deferred.doneUnsafe(gates[0], Effect.void)
      strictEqual(yield* Fiber.join(first), true)
      yield* Effect.yieldNow
      strictEqual(count, 2, "the callers during the first commit woke one more")
      Deferred.doneUnsafe(gates[1], Effect.void)
      deepStrictEqual([yield* Fiber.join(second), yield* Fiber.join(third)], [true, true])
      strictEqual(count, 2)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(TestClock.layer()))
  ))

Deno.test("group commit: a failed commit answers false", () =>
  withCommitter(
    (durable) =>
      Effect.gen(function* () {
        strictEqual(yield* durable, false)
      }),
    () => false
  ))

Deno.test("group commit: a caller still waiting when the scope closes is answered false", () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const never = yield* Deferred.make<boolean>()
      const { durable } = yield* startGroupCommit(Deferred.await(never), 250).pipe(Scope.provide(scope))
      // The first caller's commit never ends; the next caller waits for the commit after it.
      yield* Effect.forkChild(durable)
      yield* Effect.yieldNow
      const waiting = yield* Effect.forkChild(durable)
      yield* Effect.yieldNow
      yield* Effect.forkChild(Scope.close(scope, Exit.void))
      strictEqual(yield* Fiber.join(waiting), false)
    }).pipe(Effect.provide(TestClock.layer()))
  ))
