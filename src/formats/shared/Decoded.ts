/**
 * The result of a translation that may fail on the caller's input: Effect's
 * `Result`, whose success is the value and whose failure is the
 * `InvalidRequest` that names the field in `param`.
 *
 * @since 0.1.0
 */
import type { Result } from "effect"
import type { InvalidRequest } from "../../errors/GatewayError.ts"

/**
 * The result of a translation that may fail on the caller's input:
 * `Result.succeed(value)` or `Result.fail(InvalidRequest)`.
 *
 * @category models
 */
export type Decoded<A> = Result.Result<A, InvalidRequest>
