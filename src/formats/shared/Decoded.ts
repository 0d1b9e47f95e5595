/**
 * The result of a translation that may fail on the caller's input: the
 * value, or the `InvalidRequest` that names the field.
 *
 * @since 0.1.0
 */
import type { InvalidRequest } from "../../errors/GatewayError.ts"

/**
 * The result of a translation that may fail on the caller's input.
 *
 * @category models
 */
export type Decoded<A> = { readonly ok: true; readonly value: A } | {
  readonly ok: false
  readonly error: InvalidRequest
}
