/**
 * Query parameters of the `/api/*` lists beyond `page` and `page_size`: a
 * value drawn from a fixed set (`status`, `sort`, `order`) or epoch seconds
 * (`start_timestamp`, `end_timestamp`), refused in the api envelope with
 * `param` naming the field when it is anything else, so no caller's text
 * reaches SQL as a column or a direction.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { InvalidRequest } from "../../errors/GatewayError.ts"

/**
 * `value` when it is one of `allowed`, `undefined` when absent or empty;
 * otherwise an `InvalidRequest` naming `param` and listing the allowed values.
 *
 * @category query
 */
export const queryChoice = <const A extends string>(
  value: string | null,
  param: string,
  allowed: ReadonlyArray<A>
): Effect.Effect<A | undefined, InvalidRequest> => {
  if (value === null || value === "") return Effect.succeed(undefined)
  const found = allowed.find((choice) => choice === value)
  return found === undefined
    ? Effect.fail(new InvalidRequest({ message: `${param} must be one of ${allowed.join(", ")}.`, param }))
    : Effect.succeed(found)
}

/** The sort directions a list takes (`order=`). @category constants */
export const ORDERS = ["asc", "desc"] as const

/**
 * Epoch seconds (a whole number of at most 12 digits) from a query value,
 * `undefined` when absent or empty; otherwise an `InvalidRequest` naming `param`.
 *
 * @category query
 */
export const querySeconds = (
  value: string | null,
  param: string
): Effect.Effect<number | undefined, InvalidRequest> => {
  if (value === null || value === "") return Effect.succeed(undefined)
  return /^\d{1,12}$/.test(value)
    ? Effect.succeed(Number(value))
    : Effect.fail(new InvalidRequest({ message: `${param} must be epoch seconds.`, param }))
}
