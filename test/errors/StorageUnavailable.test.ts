/**
 * A store out of reach as the caller sees it: `StorageUnavailable` is 503 `storage_unavailable` with `Retry-After`
 * in every envelope (gateway, flat, api), retryable, reported once (one warning line with its operation, one count
 * by operation) where it becomes the answer; `storageFailure` turns a statement's `SqlError` into it and keeps
 * every other failure as it was.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Cause, Effect, Exit, Layer, Logger, References } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlError } from "effect/sql"
import { envelopeBody, type EnvelopeKind, toProblem } from "../../src/errors/Envelope.ts"
import { NotFound, StorageUnavailable } from "../../src/errors/GatewayError.ts"
import {
  errorHeaders,
  isRetryable,
  respondWith,
  STORAGE_RETRY_AFTER_SECONDS,
  StorageErrorCounter
} from "../../src/http/Respond.ts"
import { respondApi } from "../../src/routes/api/Api.ts"
import { storageFailure } from "../../src/storage/StorageFailure.ts"

const MESSAGE = "The gateway cannot reach its database; try again shortly."
const failure = new StorageUnavailable({ operation: "auth.lookup" })

/** Runs `respond` over a failed handler, collecting the counts and the log lines; the web response and both. */
const answered = async (
  respond: (
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse, StorageUnavailable>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
) => {
  const counted: Array<string> = []
  const logs: Array<{ level: string; message: string; annotations: Record<string, unknown> }> = []
  const collector = Logger.make((options) => {
    const parts = Array.isArray(options.message) ? options.message : [options.message]
    logs.push({
      level: options.logLevel,
      message: parts.map(String).join(" "),
      annotations: { ...options.fiber.getRef(References.CurrentLogAnnotations) }
    })
  })
  const response = await respond(Effect.fail(failure)).pipe(
    Effect.provide(
      Layer.merge(Logger.layer([collector]), Layer.succeed(StorageErrorCounter, (operation) => counted.push(operation)))
    ),
    Effect.runPromise
  )
  return { web: HttpServerResponse.toWeb(response), counted, logs }
}

Deno.test("StorageUnavailable: the error table answers 503 storage_unavailable, retryable, with Retry-After", () => {
  const problem = toProblem(failure)
  deepStrictEqual(problem, {
    status: 503,
    type: "platform_api_error",
    code: "storage_unavailable",
    message: MESSAGE,
    param: ""
  })
  strictEqual(isRetryable(failure), true)
  deepStrictEqual(errorHeaders(failure), { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) })
  strictEqual(STORAGE_RETRY_AFTER_SECONDS, 5)
  const bodies: Record<EnvelopeKind, unknown> = {
    gateway: { error: { message: MESSAGE, type: "platform_api_error", param: "", code: "storage_unavailable" } },
    flat: { code: "storage_unavailable", message: MESSAGE },
    api: { success: false, message: MESSAGE }
  }
  for (const kind of ["gateway", "flat", "api"] as const) deepStrictEqual(envelopeBody(kind, problem), bodies[kind])
})

Deno.test("StorageUnavailable: each envelope's answer is 503 with Retry-After, counted and logged once", async () => {
  const renderers = {
    gateway: respondWith((problem) => envelopeBody("gateway", problem)),
    flat: respondWith((problem) => envelopeBody("flat", problem)),
    api: respondApi
  }
  for (const [kind, respond] of Object.entries(renderers)) {
    const { web, counted, logs } = await answered(respond)
    strictEqual(web.status, 503, kind)
    strictEqual(web.headers.get("retry-after"), "5", kind)
    strictEqual(web.headers.get("x-should-retry"), null, kind)
    deepStrictEqual(await web.json(), envelopeBody(kind as EnvelopeKind, toProblem(failure)), kind)
    deepStrictEqual(counted, ["auth.lookup"], kind)
    const warnings = logs.filter((line) => line.message === "Storage unavailable")
    strictEqual(warnings.length, 1, `${kind}: ${JSON.stringify(logs)}`)
    strictEqual(warnings[0].level, "Warn", kind)
    strictEqual(warnings[0].annotations.operation, "auth.lookup", kind)
    strictEqual(logs.length, 1, `${kind}: no other line (no defect): ${JSON.stringify(logs)}`)
  }
})

Deno.test("storageFailure: a statement's SqlError becomes StorageUnavailable naming the operation, nothing else", async () => {
  const sqlError = new SqlError.SqlError({
    reason: new SqlError.ConnectionError({ cause: new Error("connect ECONNREFUSED 10.0.0.7:5432"), message: "refused" })
  })
  const mapped = await Effect.runPromise(Effect.flip(Effect.fail(sqlError).pipe(storageFailure("tasks.find"))))
  strictEqual(mapped._tag, "StorageUnavailable")
  deepStrictEqual({ ...mapped }, { _tag: "StorageUnavailable", operation: "tasks.find" })
  strictEqual(JSON.stringify(mapped).includes("ECONNREFUSED"), false, "nothing of the driver's words")

  const notFound = new NotFound({ what: "task", id: "task_1" })
  const kept = await Effect.runPromise(
    Effect.flip((Effect.fail(notFound) as Effect.Effect<never, NotFound | SqlError.SqlError>).pipe(
      storageFailure("tasks.find")
    ))
  )
  strictEqual(kept, notFound, "a domain error is kept as it was")
  strictEqual(await Effect.runPromise(Effect.succeed(7).pipe(storageFailure("tasks.find"))), 7)

  // A transaction whose connection was lost dies of its SqlError (its ROLLBACK fails too): the same failure.
  const died = await Effect.runPromise(Effect.flip(Effect.die(sqlError).pipe(storageFailure("users.update"))))
  deepStrictEqual({ ...died }, { _tag: "StorageUnavailable", operation: "users.update" })
  // Any other defect stays one.
  const bug = new Error("a bug")
  const exit = await Effect.runPromise(Effect.exit(Effect.die(bug).pipe(storageFailure("users.update"))))
  strictEqual(Exit.isFailure(exit) && Cause.hasDies(exit.cause), true)
})
