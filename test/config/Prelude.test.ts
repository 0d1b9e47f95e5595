/**
 * The process prelude hides `node:async_hooks` from `process.getBuiltinModule`
 * only (Effect's per-suspension AsyncResource capture), leaving other
 * built-ins and the `node:async_hooks` import itself alone.
 */
import "../../src/Prelude.ts"
import { AsyncResource } from "node:async_hooks"
import { ok, strictEqual } from "node:assert/strict"

interface ProcessWithBuiltins {
  readonly getBuiltinModule: (id: string) => unknown
}

Deno.test("prelude: getBuiltinModule gives no async_hooks, every other built-in as before", () => {
  const nodeProcess = (globalThis as unknown as { process: ProcessWithBuiltins }).process
  strictEqual(nodeProcess.getBuiltinModule("node:async_hooks"), undefined)
  strictEqual(nodeProcess.getBuiltinModule("async_hooks"), undefined)
  const path = nodeProcess.getBuiltinModule("node:path") as { readonly join: (...parts: Array<string>) => string }
  strictEqual(path.join("a", "b"), "a/b")
  ok(typeof AsyncResource === "function", "the module itself can still be imported")
})
