/**
 * The deadline of reading a request body: a caller that trickles its body (or
 * sends part of it and goes quiet) must not hold a handler, and what it holds,
 * for ever. The deadline (`BodyTimeout`, from `SLUICE_BODY_TIMEOUT_SECONDS`)
 * counts from the moment the body's read starts.
 *
 * The reads in flight are checked by one interval timer (unreferenced, so it
 * keeps no process alive), started by a read when none runs and stopped by the
 * first tick that finds no read left: under load a read costs a set insertion
 * and removal rather than a timer created and cleared (a `setTimeout` race per
 * read cost about 5 µs over a bare read, Effect's `timeoutOrElse` about 15 µs,
 * starting and stopping the interval for every read about 7 µs, measured side
 * by side). The deadline is counted in ticks of that timer against the real
 * socket, so its resolution is one tick, and it is never early.
 *
 * What this cannot do: Deno's server keeps the connection of a body that never
 * ends open until the caller closes it (the answer goes out, with
 * `connection: close`, but the socket stays), and it has no deadline for the
 * request head. Both belong to the reverse proxy in front (docs/OPERATING.md,
 * "Slow clients").
 *
 * @since 0.1.0
 */
import { Context } from "effect"

/**
 * The body deadline in milliseconds; 0: none. The app provides the configured
 * value (`SLUICE_BODY_TIMEOUT_SECONDS`, default 60 s).
 *
 * @category http
 */
export const BodyTimeout = Context.Reference<number>("sluice/http/BodyTimeout", { defaultValue: () => 60_000 })

/** What a read resolves with when its deadline passed first. @category http */
export const TIMED_OUT = "timed-out"

/** How often the reads in flight are checked (milliseconds): the deadline's resolution. */
const TICK_MS = 250

/** A read in flight: the ticks it has left, and what its deadline does. */
interface Watched {
  ticksLeft: number
  readonly expire: () => void
}

const reads = new Set<Watched>()
let timer: ReturnType<typeof setInterval> | undefined

const tick = () => {
  if (reads.size === 0) {
    clearInterval(timer)
    timer = undefined
    return
  }
  for (const read of reads) {
    read.ticksLeft -= 1
    if (read.ticksLeft <= 0) {
      reads.delete(read)
      read.expire()
    }
  }
}

const watch = (read: Watched) => {
  reads.add(read)
  if (timer === undefined) {
    const started = setInterval(tick, TICK_MS)
    Deno.unrefTimer(started)
    timer = started
  }
}

/**
 * `read` against a deadline of `millis` (none when `millis` ≤ 0): what `read`
 * settles with, or `TIMED_OUT` once the deadline passed first, after
 * `onTimeout` ran (it may cancel the read, e.g. a stream reader; the read's own
 * later outcome is then dropped).
 *
 * @category http
 */
export const readBefore = <A>(
  millis: number,
  read: Promise<A>,
  onTimeout?: () => void
): Promise<A | typeof TIMED_OUT> => {
  if (!(millis > 0)) return read
  return new Promise<A | typeof TIMED_OUT>((resolve, reject) => {
    // One tick more than the deadline holds whole: a read that starts just before a tick is never cut early.
    const watched: Watched = {
      ticksLeft: Math.ceil(millis / TICK_MS) + 1,
      expire: () => {
        resolve(TIMED_OUT)
        onTimeout?.()
      }
    }
    watch(watched)
    read.then(
      (value) => {
        reads.delete(watched)
        resolve(value)
      },
      (error) => {
        reads.delete(watched)
        reject(error)
      }
    )
  })
}
