/**
 * undici's invariant checks through a cheaper `assert`. undici (the upstream
 * client, `UpstreamClient.ts`) calls `require("node:assert")` as a function
 * at 155 places, about 30 times an upstream call; the runtime's Node.js
 * compatibility layer implements that function with a rest parameter spread
 * again through an iterator, which measured 0.5–1 µs and about 400 bytes a
 * call: 12 KiB allocated per gateway request, a tenth of all it allocates
 * (V8's sampling heap profiler under `deno task bench`'s chat case).
 *
 * Importing this module, before undici is first loaded, hands the packages
 * under `undici/` an `assert` that tests its value inline and calls the
 * runtime's own only when the value is falsy — so a failed check throws the
 * same `AssertionError`, and every other member (`assert.ok`, `strictEqual`,
 * …) is the runtime's. The hook is Node.js's module loader (`Module._load`,
 * which the runtime implements for CommonJS packages); a request from any
 * other package is answered as before.
 *
 * @since 0.1.0
 */
import Module from "node:module"
import nodeAssert from "node:assert"

type Load = (request: string, parent: { readonly filename?: string } | null | undefined, isMain: boolean) => unknown

/**
 * `assert(value, message)`: nothing when `value` is truthy, else the runtime's `assert` (which throws its
 * `AssertionError`). Carries the runtime's members.
 *
 * @category upstream
 */
export const cheapAssert: typeof nodeAssert = Object.assign(
  function assert(value: unknown, message?: unknown): asserts value {
    if (!value) (nodeAssert as (value: unknown, message?: unknown) => void)(value, message)
  },
  nodeAssert
)

const loader = Module as unknown as { _load: Load }
const load = loader._load
const fromUndici = (parent: { readonly filename?: string } | null | undefined) =>
  /[\\/]undici[\\/]/.test(parent?.filename ?? "")

loader._load = function (this: unknown, request, parent, isMain) {
  return (request === "node:assert" || request === "assert") && fromUndici(parent)
    ? cheapAssert
    : load.call(this, request, parent, isMain)
}
