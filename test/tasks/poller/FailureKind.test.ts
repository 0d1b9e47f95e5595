/**
 * What the poller's log lines say of a failure: its tag, a SQL failure's
 * reason and SQLSTATE, `defect` for what has no tag; never the failure's text.
 */
import { strictEqual } from "node:assert/strict"
import { Cause } from "effect"
import { SqlError } from "effect/sql"
import { NotFound } from "../../../src/errors/GatewayError.ts"
import { failureKindOf } from "../../../src/tasks/poller/FailureKind.ts"

Deno.test("failureKindOf: a tagged failure by its tag, cut at 64 characters", () => {
  strictEqual(failureKindOf(Cause.fail(new NotFound({ what: "task", id: "video_secret" }))), "NotFound")
  strictEqual(failureKindOf(Cause.fail({ _tag: "X".repeat(100) })), "X".repeat(64))
})

Deno.test("failureKindOf: a defect with no tag is `defect`, its message left out", () => {
  strictEqual(failureKindOf(Cause.die(new Error("row 42 holds alice@example.com"))), "defect")
  strictEqual(failureKindOf(Cause.die("plain text")), "defect")
})

Deno.test("failureKindOf: a SQL failure by its reason and SQLSTATE, never its message", () => {
  const cause = Object.assign(new Error("could not serialize access"), { code: "40001" })
  const serialization = new SqlError.SqlError({
    reason: new SqlError.SerializationError({ cause, message: "Key (email)=(alice@example.com)" })
  })
  strictEqual(failureKindOf(Cause.fail(serialization)), "SqlError/SerializationError/40001")
  const connection = new SqlError.SqlError({
    reason: new SqlError.ConnectionError({ cause: new Error("gone"), message: "gone" })
  })
  strictEqual(failureKindOf(Cause.fail(connection)), "SqlError/ConnectionError")
})
