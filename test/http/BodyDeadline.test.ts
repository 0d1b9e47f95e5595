/**
 * The body deadline: a read that settles in time gives its own outcome; one
 * that does not is `TIMED_OUT` after its deadline, never before, with its
 * `onTimeout` run; the watchdog's timer stops when no read is left (the test
 * sanitizer would report a timer left running).
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import { readBefore, TIMED_OUT } from "../../src/http/BodyDeadline.ts"

Deno.test("body deadline: in time the read's own outcome; too late TIMED_OUT after onTimeout, never early", async () => {
  strictEqual(await readBefore(1_000, Promise.resolve("body")), "body")
  await rejects(readBefore(1_000, Promise.reject(new Error("reset"))), /reset/)
  strictEqual(await readBefore(0, Promise.resolve("no deadline")), "no deadline")

  let cancelled = 0
  const started = performance.now()
  // A real read holds a socket, which keeps the process alive (the watchdog's timer does not); this one holds a timer.
  const socket = setTimeout(() => {}, 10_000)
  const outcomes = await Promise.all([
    readBefore(300, new Promise<string>(() => {}), () => cancelled++),
    readBefore(300, new Promise<string>((resolve) => setTimeout(() => resolve("slow but in time"), 100)))
  ]).finally(() => clearTimeout(socket))
  const waited = performance.now() - started
  deepStrictEqual(outcomes, [TIMED_OUT, "slow but in time"])
  strictEqual(cancelled, 1)
  ok(waited >= 300, `cut after ${waited.toFixed(0)} ms, before its deadline`)
})
