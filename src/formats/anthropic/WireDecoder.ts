/**
 * Decoding untrusted JSON with `Schema` for the messages format, turning the
 * first issue into an `InvalidRequest` whose `param` is the offending field's
 * path (`messages[0].content[1].source.data`), optionally below a prefix path
 * for values picked out of a larger body (`tools[2]`).
 *
 * It does what `../SchemaDecode.ts` does, plus the prefix; it exists because
 * that shared file does not type-check under Deno 2.9 / TypeScript 6 (see the
 * report of this folder).
 *
 * @since 0.1.0
 */
import { Schema, SchemaIssue } from "effect"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../Format.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * A path inside a JSON value: object keys and array indexes.
 *
 * @category models
 */
export type WirePath = ReadonlyArray<string | number>

/**
 * Renders a path as `a.b[0].c`.
 *
 * @category decoding
 */
export const renderPath = (path: WirePath): string =>
  path.reduce<string>((out, key) => {
    if (typeof key === "number") return `${out}[${key}]`
    return out === "" ? key : `${out}.${key}`
  }, "")

/**
 * An `InvalidRequest` naming the field at `path`; the message says what is wrong
 * with it (`Invalid messages[0].role: Expected "user" | "assistant"`).
 *
 * @category constructors
 */
export const invalidAt = (path: WirePath, detail: string): InvalidRequest => {
  const param = renderPath(path)
  return new InvalidRequest({ message: param === "" ? detail : `Invalid ${param}: ${detail}`, param })
}

/**
 * Builds a synchronous decoder for `schema` that never throws: a value, or an
 * `InvalidRequest` naming the first bad field below `prefix`.
 *
 * @category decoding
 */
export const wireDecoder = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownExit(schema as unknown as Schema.Codec<S["Type"], S["Encoded"]>)
  return (input: unknown, prefix: WirePath = []): Decoded<S["Type"]> => {
    const exit = decode(input, { errors: "first" })
    if (exit._tag === "Success") return { ok: true, value: exit.value }
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure === undefined || !Schema.isSchemaError(failure.error)) {
      return { ok: false, error: invalidAt(prefix, "The value could not be read.") }
    }
    const issue = formatter(failure.error.issue).issues[0]
    const path = (issue?.path ?? []).flatMap((segment): Array<string | number> => {
      const key = typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
      return typeof key === "number" || typeof key === "string" ? [key] : [String(key)]
    })
    return { ok: false, error: invalidAt([...prefix, ...path], issue?.message ?? failure.error.message) }
  }
}
