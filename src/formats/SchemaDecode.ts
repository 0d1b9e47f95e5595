/**
 * Decoding untrusted JSON with `Schema`, turning the first issue into an
 * `InvalidRequest` whose `param` is the offending field's path
 * (`messages[0].content`).
 *
 * @since 0.1.0
 */
import { Schema, SchemaIssue } from "effect"
import { InvalidRequest } from "../errors/GatewayError.ts"
import type { Decoded } from "./Format.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Renders a path as `a.b[0].c`.
 *
 * @category decoding
 */
export const pathToParam = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((out, key) => {
    if (typeof key === "number") return `${out}[${key}]`
    const name = String(key)
    return out === "" ? name : `${out}.${name}`
  }, "")

/**
 * An `InvalidRequest` naming the field at `path`; the message says what is
 * wrong with it (`Invalid messages[0].role: Expected "user" | "assistant"`).
 *
 * @category constructors
 */
export const invalidAt = (path: ReadonlyArray<PropertyKey>, detail: string): InvalidRequest => {
  const param = pathToParam(path)
  return new InvalidRequest({ message: param === "" ? detail : `Invalid ${param}: ${detail}`, param })
}

/**
 * Builds a synchronous decoder for `schema` that never throws: a value, or an
 * `InvalidRequest` naming the first bad field. `prefix` is the path of the
 * decoded value inside a larger body (`tools[2]`), so `param` names the field
 * in the caller's terms.
 *
 * @category decoding
 */
export const makeDecoder = <A, I>(
  schema: Schema.Codec<A, I>
): (input: unknown, prefix?: ReadonlyArray<PropertyKey>) => Decoded<A> => {
  const decode = Schema.decodeUnknownExit(schema)
  return (input, prefix = []) => {
    const exit = decode(input, { errors: "first" })
    if (exit._tag === "Success") return { ok: true, value: exit.value }
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure === undefined || !Schema.isSchemaError(failure.error)) {
      return { ok: false, error: invalidAt(prefix, "The request body could not be read.") }
    }
    const issue = formatter(failure.error.issue).issues[0]
    const path = (issue?.path ?? []).map((segment) =>
      typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
    ) as ReadonlyArray<PropertyKey>
    return { ok: false, error: invalidAt([...prefix, ...path], issue?.message ?? failure.error.message) }
  }
}
