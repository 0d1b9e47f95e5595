/**
 * undici's `assert` (`src/upstreams/transport/UndiciAssert.ts`): a request for
 * `node:assert` from a module under `undici/` is answered with the inline
 * check, any other with the runtime's own; the inline check passes a truthy
 * value and throws the runtime's `AssertionError` for a falsy one.
 */
import { AssertionError, deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict"
import nodeAssert from "node:assert"
import Module from "node:module"
import { cheapAssert } from "../../../src/upstreams/transport/UndiciAssert.ts"

type Load = (request: string, parent: { readonly filename?: string }, isMain: boolean) => unknown
const load = (Module as unknown as { _load: Load })._load

Deno.test("undici's modules get the inline assert; every other module the runtime's", () => {
  const undiciModule = { filename: "/deps/node_modules/undici/lib/dispatcher/client-h1.js" }
  strictEqual(load("node:assert", undiciModule, false), cheapAssert)
  strictEqual(load("assert", undiciModule, false), cheapAssert)
  strictEqual(load("node:assert", { filename: "/deps/node_modules/other/index.js" }, false), nodeAssert)
  ok(load("node:util", undiciModule, false) !== cheapAssert)
})

Deno.test("the inline assert passes a truthy value and throws the runtime's AssertionError for a falsy one", () => {
  strictEqual(cheapAssert(1), undefined)
  throws(() => cheapAssert(0, "a broken invariant"), (error: unknown) => {
    ok(error instanceof AssertionError)
    strictEqual(error.message, "a broken invariant")
    return true
  })
  throws(() => cheapAssert(null), AssertionError)
  // Every other member is the runtime's.
  strictEqual(cheapAssert.strictEqual, nodeAssert.strictEqual)
  deepStrictEqual(Object.keys(cheapAssert).sort(), Object.keys(nodeAssert).sort())
})
