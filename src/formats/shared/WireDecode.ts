/**
 * Decoding a caller's JSON with `Schema` into the formats' `Decoded` results
 * (Effect's `Result`):
 * the first bad field as an `InvalidRequest` (wording and `param` from
 * `domain/SchemaDecode.ts`), and re-basing an error found inside a nested
 * value onto the caller's body.
 *
 * @since 0.1.0
 */
import { Result, type Schema } from "effect"
import { fieldErrorAt, makeDecoder as makeFieldDecoder } from "../../domain/SchemaDecode.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../Format.ts"

/**
 * An `InvalidRequest` naming the field at `path`; the message says what is
 * wrong with it (`Invalid messages[0].role: Expected "user" | "assistant"`).
 *
 * @category constructors
 */
export const invalidAt = (path: ReadonlyArray<PropertyKey>, detail: string): InvalidRequest =>
  new InvalidRequest(fieldErrorAt(path, detail))

/**
 * Builds a synchronous decoder for `schema` that never throws: a value, or an
 * `InvalidRequest` naming the first bad field. `prefix` is the path of the
 * decoded value inside a larger body (`tools[2]`), so `param` names the field
 * in the caller's terms.
 *
 * @category decoding
 */
export const makeWireDecoder = <A, I>(
  schema: Schema.Codec<A, I>
): (input: unknown, prefix?: ReadonlyArray<PropertyKey>) => Decoded<A> => {
  const decode = makeFieldDecoder(schema)
  return (input, prefix) => Result.mapError(decode(input, prefix), (error) => new InvalidRequest(error))
}

/**
 * `error`, from a decoder run on a value found at `prefix` (`messages[2]`),
 * re-based onto the caller's body: its `param` joined to `prefix`, and the
 * field's path at the head of its message likewise (`Invalid content[0].type: …`
 * → `Invalid messages[2].content[0].type: …`, `content is missing.` →
 * `messages[2].content is missing.`). An error about the value as a whole
 * becomes `Invalid {prefix}: …`; other messages are kept as they are.
 *
 * @category decoding
 */
export const rebase = (error: InvalidRequest, prefix: string): InvalidRequest => {
  const inner = error.param ?? ""
  if (prefix === "") return error
  if (inner === "") return new InvalidRequest({ message: `Invalid ${prefix}: ${error.message}`, param: prefix })
  const param = inner.startsWith("[") ? `${prefix}${inner}` : `${prefix}.${inner}`
  const message = error.message.startsWith(`Invalid ${inner}: `)
    ? `Invalid ${param}: ${error.message.slice(`Invalid ${inner}: `.length)}`
    : error.message.startsWith(`${inner} `)
    ? `${param}${error.message.slice(inner.length)}`
    : error.message
  return new InvalidRequest({ message, param })
}
