/**
 * Decoding untrusted JSON with `Schema`, turning the first issue into a
 * `FieldError` whose `param` is the offending field's path
 * (`messages[0].content`), in words a caller can act on: a missing field is
 * named as missing, and a union of objects told apart by a literal field
 * (`type`) is spelled out as its values, with `param` on that field when the
 * caller sent an object.
 *
 * @since 0.1.0
 */
import { Result, Schema, SchemaIssue } from "effect"

/**
 * What is wrong with a decoded value, in words a caller can act on: `param`
 * is the path of the offending field (empty for the value as a whole).
 *
 * @category models
 */
export interface FieldError {
  readonly message: string
  readonly param: string
}

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
 * A `FieldError` naming the field at `path`; the message says what is wrong
 * with it (`Invalid messages[0].role: Expected "user" | "assistant"`).
 *
 * @category constructors
 */
export const fieldErrorAt = (path: ReadonlyArray<PropertyKey>, detail: string): FieldError => {
  const param = pathToParam(path)
  return { message: param === "" ? detail : `Invalid ${param}: ${detail}`, param }
}

/** One member of a union of objects told apart by a literal field, as Schema renders it: `{ readonly "type": "text", ... }`. */
const TAGGED_MEMBER = /^\{ readonly "([^"]+)": ("(?:[^"\\]|\\.)*"), \.\.\. \}$/

/** A literal as Schema renders it in an expectation: a JSON string, a number, `true`, `false` or `null`. */
const LITERAL = /^(?:"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)$/

const orList = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`

/**
 * Schema's `Expected A | B | …` in plain words when its members are literals
 * (`Expected "user" or "assistant"`) or some of them are objects told apart by
 * one literal field (`Expected "auto", "none", or an object whose type is
 * "function" or "custom"`); `undefined`, an absent field, is left out.
 * `tag` is that field's name and `values` its literals, so the caller's object
 * can be pointed at its field; other messages pass unchanged, with no tag.
 *
 * @category decoding
 */
export const plainExpectation = (
  message: string
): { readonly message: string; readonly tag?: string; readonly values?: ReadonlyArray<string> } => {
  if (!message.startsWith("Expected ")) return { message }
  const members = message.slice("Expected ".length).split(" | ")
  const tagged = members.map((member) => TAGGED_MEMBER.exec(member))
  const tags = new Set(tagged.flatMap((match) => match === null ? [] : [match[1]]))
  const present = members.filter((member) => member !== "undefined")
  if (tags.size === 0 && present.length > 1 && present.every((member) => LITERAL.test(member))) {
    return { message: `Expected ${orList(present)}` }
  }
  if (tags.size !== 1) return { message }
  const [tag] = tags
  const values = tagged.flatMap((match) => match === null ? [] : [match[2]])
  const others = members.filter((member, index) => tagged[index] === null && member !== "undefined")
  const objects = `an object whose ${tag} is ${orList(values)}`
  return { message: `Expected ${others.length === 0 ? objects : `${others.join(", ")}, or ${objects}`}`, tag, values }
}

const valueAt = (input: unknown, path: ReadonlyArray<PropertyKey>): unknown =>
  path.reduce<unknown>(
    (value, key) =>
      typeof value === "object" && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined,
    input
  )

/**
 * Builds a synchronous decoder for `schema` that never throws: a `Result`
 * whose success is the value and whose failure is a `FieldError` naming the
 * first bad field. `prefix` is the path of the
 * decoded value inside a larger body (`tools[2]`), so `param` names the field
 * in the caller's terms.
 *
 * @category decoding
 */
export const makeDecoder = <A, I>(
  schema: Schema.Codec<A, I>
): (input: unknown, prefix?: ReadonlyArray<PropertyKey>) => Result.Result<A, FieldError> => {
  const decode = Schema.decodeUnknownExit(schema)
  return (input, prefix = []) => {
    const exit = decode(input, { errors: "first" })
    if (exit._tag === "Success") return Result.succeed(exit.value)
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure === undefined || !Schema.isSchemaError(failure.error)) {
      return Result.fail(fieldErrorAt(prefix, "The request body could not be read."))
    }
    const issue = formatter(failure.error.issue).issues[0]
    const path = (issue?.path ?? []).map((segment) =>
      typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
    ) as ReadonlyArray<PropertyKey>
    const message = issue?.message ?? failure.error.message
    if (message === "Missing key") {
      const param = pathToParam([...prefix, ...path])
      const missing = param === "" ? "A required field is missing." : `${param} is missing.`
      return Result.fail({ message: missing, param })
    }
    const plain = plainExpectation(message)
    const value = valueAt(input, path)
    // An object that matched no member: point at its tag field, and list the tag's values.
    if (
      plain.tag !== undefined && plain.values !== undefined && typeof value === "object" && value !== null &&
      !Array.isArray(value)
    ) {
      const sent = (value as Record<string, unknown>)[plain.tag]
      if (sent === undefined || !plain.values.includes(JSON.stringify(sent))) {
        const param = pathToParam([...prefix, ...path, plain.tag])
        const message = sent === undefined
          ? `${param} is missing.`
          : `Invalid ${param}: Expected ${orList(plain.values)}`
        return Result.fail({ message, param })
      }
    }
    return Result.fail(fieldErrorAt([...prefix, ...path], plain.message))
  }
}
