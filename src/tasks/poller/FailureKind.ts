/**
 * What the task poller's log lines may say of a failure.
 *
 * @since 0.1.0
 */
import { Cause } from "effect"
import { SqlError } from "effect/sql"

/**
 * What a log line may say of a failure: its tag (and a SQL failure's reason
 * and SQLSTATE), never its text, which can quote a row (a database error's
 * detail) or a vendor's words. `defect` for a failure with no tag; a tag is
 * cut at 64 characters.
 *
 * @category logging
 */
export const failureKindOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  if (typeof error !== "object" || error === null || !("_tag" in error)) return "defect"
  if (SqlError.isSqlError(error)) {
    const code = (error.reason.cause as { readonly code?: unknown } | undefined)?.code
    return `SqlError/${error.reason._tag}${typeof code === "string" ? `/${code}` : ""}`
  }
  return String(error._tag).slice(0, 64)
}
