/**
 * The `start` task (what the container's `CMD` runs) keeps its two memory
 * settings, both measured in bench/RESULTS.md ("Where the idle memory goes"):
 * glibc's malloc limited to two arenas (`MALLOC_ARENA_MAX=2`: the embedded
 * store's creation otherwise leaves about 50 MiB of freed memory in per-thread
 * arenas) and V8's young generation capped at 4 MiB a semi-space (it otherwise
 * grows to about 30 MiB during start-up and stays, empty).
 */
import { ok } from "node:assert/strict"

Deno.test("the start task limits malloc's arenas and V8's young generation", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url))) as {
    readonly tasks: Readonly<Record<string, string>>
  }
  const start = config.tasks.start
  ok(start.startsWith("MALLOC_ARENA_MAX=2 deno run "), start)
  ok(start.includes(" --v8-flags=--max-semi-space-size=4 "), start)
  ok(start.endsWith(" src/main.ts"), start)
})
