/**
 * Measuring memory in tests: V8's full collection and the heap in use after it.
 *
 * `deno test` cannot pass `--v8-flags=--expose-gc`, but V8 takes the flag at
 * run time: `node:v8` `setFlagsFromString("--expose-gc")`, then
 * `vm.runInNewContext("gc")` hands out the collector (checked on Deno 2.9).
 */
import v8 from "node:v8"
import vm from "node:vm"

/** V8's full garbage collection, exposed at run time. */
export const collectGarbage: () => void = (() => {
  v8.setFlagsFromString("--expose-gc")
  return vm.runInNewContext("gc") as () => void
})()

const idle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The heap in use (`Deno.memoryUsage().heapUsed`, process-wide, bytes) after full collections: the smallest of
 * three samples, each after a 100 ms idle wait and a full collection.
 */
export const settledHeap = async (): Promise<number> => {
  let smallest = Infinity
  for (let round = 0; round < 3; round++) {
    await idle(100)
    collectGarbage()
    smallest = Math.min(smallest, Deno.memoryUsage().heapUsed)
  }
  return smallest
}

/**
 * Counts which of the objects passed to `track` get collected: `track` takes an object the caller then drops,
 * `count()` runs full collections (with idle turns for the finalization callbacks, up to ten rounds) and answers how
 * many of the tracked objects are gone.
 */
export const collectable = (): {
  readonly track: (value: object) => void
  readonly count: () => Promise<{ readonly tracked: number; readonly collected: number }>
} => {
  let collected = 0
  let tracked = 0
  const registry = new FinalizationRegistry<number>(() => collected++)
  return {
    track: (value) => registry.register(value, tracked++),
    count: async () => {
      for (let round = 0; round < 10 && collected < tracked; round++) {
        collectGarbage()
        await idle(10)
      }
      return { tracked, collected }
    }
  }
}
