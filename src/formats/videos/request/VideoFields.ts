/**
 * The field schemas of a video request body (`Schema`), each failing with the
 * caller-facing message the video routes promise (spec "Errors"), and
 * `decodeFields`, which runs a `Schema.Struct` of them and turns the first
 * issue into an `InvalidRequest` whose `param` is the top-level field (an
 * item of a list is reported on its list: `images`, message `images[2] …`).
 * Absent fields are `undefined` or `null`; fields a schema does not name are
 * ignored (spec "What the service does", 8).
 *
 * @since 0.1.0
 */
import { Result, Schema, SchemaIssue } from "effect"
import type { VideoReference } from "../../../canonical/Video.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import { MAX_VIDEO_REFERENCES } from "../VideoFamilies.ts"
import { type MediaPolicy, mediaProblem } from "./MediaRefs.ts"

/** The largest `metadata` object, in characters of its JSON. @category rules */
export const MAX_METADATA_CHARS = 16_384

/** mini-2.0's own parameter errors carry this code (spec "Errors"). @category rules */
export const MINI_CODE = "invalid_request_error"

/** An absent field (`undefined` or `null`), or one that `schema` decodes; `message` when it is of no member's type. */
const absentOr = <S extends Schema.Top>(schema: S, message: string) =>
  Schema.optionalKey(Schema.NullishOr(schema).annotate({ message }))

/** `problem`'s message as a filter: `undefined` passes. */
const rule = <A>(problem: (value: A) => string | undefined) => Schema.makeFilter((value: A) => problem(value))

/**
 * A string field of at most `max` characters, well formed and without NUL;
 * `check`, when given, adds the field's own rule.
 *
 * @category schemas
 */
export const text = (name: string, max: number, check?: (value: string) => string | undefined) =>
  absentOr(
    Schema.String.check(rule((value: string) =>
      value.length > max
        ? `${name} is ${value.length} characters; at most ${max} are allowed.`
        : !value.isWellFormed() || value.includes("\u0000")
        ? `${name} holds a NUL character or a lone surrogate.`
        : check?.(value)
    )),
    `${name} must be a string.`
  )

/**
 * A required string field: `text`'s rules, `required` as the message when it
 * is absent (or, with `blank`, only white space), then `check` when given
 * (`model`, `prompt` outside the unified route, mini-2.0's `ratio`).
 *
 * @category schemas
 */
export const requiredText = (
  name: string,
  max: number,
  required: string,
  options: { readonly blank?: boolean; readonly check?: (value: string) => string | undefined } = {}
) =>
  Schema.NullishOr(
    Schema.String.check(rule((value: string) =>
      value.length > max
        ? `${name} is ${value.length} characters; at most ${max} are allowed.`
        : !value.isWellFormed() || value.includes("\u0000")
        ? `${name} holds a NUL character or a lone surrogate.`
        : undefined
    ))
  ).annotate({ message: `${name} must be a string.` })
    .check(rule((value: string | null | undefined) =>
      value === undefined || value === null || (options.blank === true && value.trim() === "")
        ? required
        : options.check?.(value)
    ))
    .annotateKey({ messageMissingKey: required })

/**
 * A whole number of seconds: a JSON integer, or (forms, OpenAI's `seconds`)
 * a string of digits. `values` says which values the family takes, for the
 * message. Decoded as given; `secondsOf` reads it.
 *
 * @category schemas
 */
export const seconds = (name: string, values: string) => {
  const message = `${name} must be a whole number of seconds${values}.`
  return absentOr(
    Schema.Union([
      Schema.Number.check(rule((value: number) => Number.isSafeInteger(value) ? undefined : message)),
      Schema.String.check(rule((value: string) => /^\s*\d{1,6}\s*$/.test(value) ? undefined : message))
    ]),
    message
  )
}

/** A `seconds` field's value as a number. @category decoding */
export const secondsOf = (value: number | string | null | undefined): number | undefined =>
  value === undefined || value === null ? undefined : Number(value)

/**
 * A boolean field (a form's `true` / `false` too). Decoded as given;
 * `flagOf` reads it.
 *
 * @category schemas
 */
export const flag = (name: string) => {
  const message = `${name} must be a boolean.`
  return absentOr(
    Schema.Union([
      Schema.Boolean,
      Schema.String.check(rule((value: string) => value === "true" || value === "false" ? undefined : message))
    ]),
    message
  )
}

/** A `flag` field's value as a boolean. @category decoding */
export const flagOf = (value: boolean | string | null | undefined): boolean | undefined =>
  value === undefined || value === null ? undefined : value === true || value === "true"

/**
 * `metadata`: a plain object whose JSON is at most `MAX_METADATA_CHARS`.
 *
 * @category schemas
 */
export const metadata = absentOr(
  Schema.Record(Schema.String, Schema.Unknown).check(rule((value: Readonly<Record<string, unknown>>) => {
    const json = JSON.stringify(value)
    return json.length > MAX_METADATA_CHARS
      ? `metadata is ${json.length} characters of JSON; at most ${MAX_METADATA_CHARS} are allowed.`
      : undefined
  })),
  "metadata must be an object."
)

/**
 * A single media reference of `kind` (`MediaRefs.ts`'s rules).
 *
 * @category schemas
 */
export const media = (name: string, kind: VideoReference["kind"], policy: MediaPolicy) =>
  absentOr(
    Schema.String.check(rule((value: string) => mediaProblem(value, name, kind, policy))),
    `${name} must be a non-empty string.`
  )

/**
 * Why `value` is not a list of at most `MAX_VIDEO_REFERENCES` media
 * references of `kind` (items named `name[i]`), or `undefined`; `single`
 * takes one reference as a plain string too.
 *
 * @category rules
 */
export const listProblem = (
  value: unknown,
  name: string,
  kind: VideoReference["kind"],
  policy: MediaPolicy,
  single = false
): string | undefined => {
  if (value === undefined || value === null) return undefined
  if (single && typeof value === "string") return mediaProblem(value, name, kind, policy)
  if (!Array.isArray(value)) return `${name} must be an array of strings${single ? " or a string" : ""}.`
  if (value.length > MAX_VIDEO_REFERENCES) {
    return `${name} has ${value.length} items; at most ${MAX_VIDEO_REFERENCES} are allowed.`
  }
  for (const [index, item] of value.entries()) {
    const problem = mediaProblem(item, `${name}[${index}]`, kind, policy)
    if (problem !== undefined) return problem
  }
  return undefined
}

/**
 * A list of media references (`listProblem`'s rules); `before`, when given,
 * is the field's own rule checked first. Decoded as given; `listOf` reads it.
 *
 * @category schemas
 */
export const mediaList = (
  name: string,
  kind: VideoReference["kind"],
  policy: MediaPolicy,
  options: { readonly single?: boolean; readonly before?: (value: unknown) => string | undefined } = {}
) =>
  Schema.optionalKey(
    Schema.Unknown.check(rule((value: unknown) =>
      value === undefined || value === null
        ? undefined
        : options.before?.(value) ?? listProblem(value, name, kind, policy, options.single)
    ))
  )

/** A `mediaList` field's references: none when absent, one for a plain string. @category decoding */
export const listOf = (value: unknown): ReadonlyArray<string> =>
  value === undefined || value === null ? [] : typeof value === "string" ? [value] : (value as ReadonlyArray<string>) // checked by `listProblem`

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * An `InvalidRequest` for the video routes: `param` names the field, `code`
 * is mini-2.0's `MINI_CODE` for its own parameters.
 *
 * @category constructors
 */
export const refusal = (message: string, param: string, code?: string): InvalidRequest =>
  new InvalidRequest({ message, param, ...(code === undefined ? {} : { code }) })

/**
 * A decoder for a `Schema.Struct` of video fields: the decoded fields, or an
 * `InvalidRequest` for the first issue, `param` its top-level field and
 * `code` the given one.
 *
 * @category decoding
 */
export const decodeFields = <A, I>(schema: Schema.Codec<A, I>, code?: string) => {
  const decode = Schema.decodeUnknownExit(schema)
  return (raw: Readonly<Record<string, unknown>>): Result.Result<A, InvalidRequest> => {
    const exit = decode(raw, { errors: "first" })
    if (exit._tag === "Success") return Result.succeed(exit.value)
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    const issue = failure !== undefined && Schema.isSchemaError(failure.error)
      ? formatter(failure.error.issue).issues[0]
      : undefined
    const head = issue?.path?.[0]
    const param = typeof head === "object" && head !== null && "key" in head ? head.key : head
    return Result.fail(
      refusal(issue?.message ?? "The request body could not be read.", param === undefined ? "" : String(param), code)
    )
  }
}
