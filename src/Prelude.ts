/**
 * Runs before anything else in the gateway process (first import of
 * `main.ts` and `demo.ts`).
 *
 * Effect 4.1 captures a `node:async_hooks` `AsyncResource` each time a fiber
 * suspends, when `process.getBuiltinModule` can give it one (for
 * AsyncLocalStorage users and async-leak detectors; `effect/internal/effect.js`,
 * `captureAsyncContext`). Under Deno's Node compatibility every such resource
 * is also kept in a WeakMap keyed by the async context frame, and under load
 * those entries pile up: heap snapshots of a gateway serving chat requests
 * grew by 3,770 `AsyncResource` objects over 58,000 requests, and the
 * ephemeron tables slow every major collection. Sluice uses no
 * AsyncLocalStorage, so this module answers `undefined` to that one lookup
 * (`getBuiltinModule("node:async_hooks")`); `import … from "node:async_hooks"`
 * is untouched, and no other dependency calls `getBuiltinModule`.
 *
 * @since 0.1.0
 */

interface ProcessWithBuiltins {
  getBuiltinModule?: (id: string) => unknown
}

const nodeProcess = (globalThis as { process?: ProcessWithBuiltins }).process
const getBuiltinModule = nodeProcess?.getBuiltinModule
if (nodeProcess !== undefined && getBuiltinModule !== undefined) {
  nodeProcess.getBuiltinModule = (id: string) =>
    id === "node:async_hooks" || id === "async_hooks" ? undefined : getBuiltinModule.call(nodeProcess, id)
}
