/**
 * The one shape of every line the gateway writes to its log (stdout): the
 * access log's request lines, a WebSocket's end line and Effect's own log
 * lines (`Effect.log*`) alike.
 *
 * A line is `time` (ISO-8601, UTC), `level` (`debug`, `info`, `warn` or
 * `error`), `msg` (the message), then its fields:
 * - `LOG_FORMAT=json`: one JSON object per line,
 *   `{"time":"2026-11-25T15:00:00.000Z","level":"warn","msg":"Channel put in cooldown","channel":"openai-main",…}`;
 * - `LOG_FORMAT=text`: `2026-11-25T15:00:00.000Z WARN  Channel put in cooldown channel=openai-main …`, the level
 *   upper-cased and padded to five characters, a value written bare when it is a plain word and as JSON otherwise
 *   (quoted and escaped), fields with no value (`null`, `[]`, `{}`) left out.
 *
 * An Effect line's fields are, in order: its log annotations (`request_id`
 * first inside a request, `Telemetry.ts`); the entries of
 * the plain objects logged after the message (`Effect.logWarning("…", { seq })`
 * gives `"seq":…`); `detail`, the other values logged after the message (one
 * value, or an array of them; an `Error` is its stack, cut as a cause is);
 * `spans` (`{ label: milliseconds }`, when inside `Effect.withLogSpan`);
 * `cause` (the pretty-printed cause, when one was logged). There is no fiber
 * id. A field whose key is already on the line (`time`, `level`, `msg`, or an
 * earlier field) is written under `field_<key>` (repeated until free); nothing
 * overwrites `time`, `level` or `msg`.
 *
 * Every value is made safe (`makeLine`): control characters (NUL included;
 * tab and newline stay, both forms escape them) and U+2028/U+2029 become
 * spaces, lone surrogates U+FFFD, a string is cut to 1000 UTF-16 units (a
 * cause to 4000) ending in `…`, key-like text is masked (`domain/Redact.ts`
 * `safeVendorText`: `sk-…`, `AIza…`, `Bearer …`, long mixed runs and the
 * configured upstream keys), objects are cut to 32 entries and 4 levels, a
 * line to 64 fields (`fields_dropped` counts the rest), `bigint` becomes a
 * decimal string and a non-finite number `null`. Not masked (only cleaned and
 * cut): `msg`, the gateway's own sentence (the generated root password is
 * written once in one), and fields named `id` or `…_id`, ids the gateway made
 * or checked (masking would hide a hex id).
 *
 * @since 0.1.0
 */
import { Cause, Inspectable, Logger, type LogLevel, References } from "effect"
import type { LogLevelName } from "../config/ObservabilityEnv.ts"
import { safeVendorText } from "../domain/Redact.ts"

/** A value a log line holds: what JSON holds. @category models */
export type LogValue = string | number | boolean | null | ReadonlyArray<LogValue> | { readonly [key: string]: LogValue }

/**
 * One log line: `time` (ISO-8601), `level`, `msg`, then its fields, in
 * insertion order (the order they are written in).
 *
 * @category models
 */
export interface LogLine {
  readonly time: string
  readonly level: LogLevelName
  readonly msg: string
  readonly [field: string]: LogValue
}

/** The longest string value kept, in UTF-16 units. @category limits */
export const MAX_VALUE_CHARS = 1000
/** The longest `cause` kept, in UTF-16 units. @category limits */
export const MAX_CAUSE_CHARS = 4000
/** The most fields after `time`, `level` and `msg`; the rest are counted in `fields_dropped`. @category limits */
export const MAX_FIELDS = 64
/** The most entries of an object or array value kept. @category limits */
export const MAX_ENTRIES = 32
/** The deepest nesting of object and array values kept. @category limits */
export const MAX_DEPTH = 4
const MAX_KEY_CHARS = 64

/** The prefix of a field whose key is already on the line. @category formatting */
export const CLASH_PREFIX = "field_"

// C0 controls other than tab and newline (NUL included), DEL, the C1 block, and the line and paragraph separators.
// Tab and newline stay: both forms escape them (`\t`, `\n`), so a line stays one line.
// deno-lint-ignore no-control-regex
const unsafe = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029]/g
const separators = /[\u2028\u2029]/g

/** `text` cut to `maxChars` UTF-16 units without splitting a surrogate pair, ending in `…` when cut. */
const cut = (text: string, maxChars: number): string => {
  if (text.length <= maxChars) return text
  let end = maxChars - 1
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${text.slice(0, end)}…`
}

/**
 * Text made fit for a log line without masking: cut to `maxChars`, control
 * characters and line separators as spaces, lone surrogates as U+FFFD.
 *
 * @category formatting
 */
export const cleanText = (text: string, maxChars: number = MAX_VALUE_CHARS): string =>
  // Cut first (a megabyte costs only its first `maxChars`); the replacements keep the length.
  cut(text, maxChars).replace(unsafe, " ").toWellFormed()

/** How far past the cut text is still masked: any key that starts before the cut ends within this. */
const MASK_MARGIN = 4096

/** Text made fit for a log line and masked of key-like text (`safeVendorText`, which leaves U+2028/U+2029). */
const maskedText = (text: string, maxChars: number): string =>
  // Masked before it is cut, so no key is cut in half and left readable; what lies past the margin is never shown,
  // so a megabyte costs no more than its first few kilobytes.
  safeVendorText(text.length > maxChars + MASK_MARGIN ? text.slice(0, maxChars + MASK_MARGIN) : text, maxChars)
    .replace(separators, " ")

/** Whether a field holds an id (`id`, `request_id`, `socket_id`, …): cleaned, never masked. */
const isIdKey = (key: string): boolean => key === "id" || key.endsWith("_id")

// Anything but letters, digits and `_ . : -`.
const keyUnsafe = /[^A-Za-z0-9_.:-]/g

/** A key made safe: characters outside `A-Z a-z 0-9 _ . : -` as `_`, at most 64 characters, never empty. */
const cleanKey = (key: string): string => key.slice(0, MAX_KEY_CHARS).replace(keyUnsafe, "_") || "_"

/** Sets an own, enumerable property (never the `__proto__` setter). */
const define = (target: Record<string, LogValue>, key: string, value: LogValue): void => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** Whether `value` is a plain object (an object literal, or one with no prototype). */
const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/**
 * Any value as a `LogValue`, made safe (see the module's header); `key` is
 * the field's (or the nearest object key's) name, which decides whether a
 * string is masked.
 *
 * @category formatting
 */
export const logValue = (value: unknown, key: string, depth = 0): LogValue => {
  switch (typeof value) {
    case "string":
      return isIdKey(key) ? cleanText(value) : maskedText(value, MAX_VALUE_CHARS)
    case "number":
      return Number.isFinite(value) ? value : null
    case "boolean":
      return value
    case "bigint":
      return value.toString()
    case "undefined":
      return null
    case "symbol":
    case "function":
      return cleanText(String(value))
  }
  if (typeof value !== "object" || value === null) return null
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
  if (depth >= MAX_DEPTH) return "[nested too deep]"
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ENTRIES).map((item) => logValue(item, key, depth + 1))
    return value.length > MAX_ENTRIES ? [...items, `… ${value.length - MAX_ENTRIES} more`] : items
  }
  // Effect's values (errors, `Redacted`, `Option`…) by their `toJSON`, a redacted value as `<redacted>`.
  const json = Inspectable.toJson(value)
  if (json !== value) return logValue(json, key, depth + 1)
  if (value instanceof Error) {
    // A defect's stack tells an operator where it came from (it starts with the name and message).
    const stack = typeof value.stack === "string" && value.stack.length > 0 ? value.stack : undefined
    return maskedText(stack ?? `${value.name}: ${value.message}`, MAX_CAUSE_CHARS)
  }
  const out: Record<string, LogValue> = {}
  let entries = 0
  for (const [name, item] of Object.entries(value)) {
    if (entries === MAX_ENTRIES) {
      define(out, "entries_dropped", Object.keys(value).length - MAX_ENTRIES)
      break
    }
    const field = cleanKey(name)
    define(out, field, logValue(item, field, depth + 1))
    entries++
  }
  return out
}

/**
 * A line of `msg` at `level` and `time` (epoch milliseconds or a `Date`),
 * with `fields` (undefined values left out) made safe and keyed as the
 * module's header says.
 *
 * @category constructors
 */
export const makeLine = (
  time: number | Date,
  level: LogLevelName,
  msg: string,
  fields: Iterable<readonly [string, unknown]>
): LogLine => {
  const date = typeof time === "number" ? new Date(time) : time
  const line: Record<string, LogValue> = {
    time: Number.isNaN(date.getTime()) ? new Date(0).toISOString() : date.toISOString(),
    level,
    msg: cleanText(msg)
  }
  let count = 0
  let dropped = 0
  for (const [key, value] of fields) {
    if (value === undefined) continue
    if (count === MAX_FIELDS) {
      dropped++
      continue
    }
    let name = cleanKey(key)
    while (Object.hasOwn(line, name)) name = `${CLASH_PREFIX}${name}`
    define(line, name, logValue(value, name))
    count++
  }
  if (dropped > 0) define(line, "fields_dropped", dropped)
  return line as unknown as LogLine
}

/** Effect's levels as the line's. @category levels */
export const levelName = (level: LogLevel.LogLevel): LogLevelName => {
  switch (level) {
    case "Fatal":
    case "Error":
      return "error"
    case "Warn":
      return "warn"
    case "Debug":
    case "Trace":
      return "debug"
    default:
      return "info"
  }
}

/**
 * The line of one of Effect's log events (`Logger.Options`): the message's
 * first part, when a string, as `msg` (else `msg` is empty and that part is
 * read as the others are), then the annotations, the plain objects' entries,
 * `detail`, `spans` and `cause`, as the module's header says.
 *
 * @category constructors
 */
export const effectLine = (options: Logger.Options<unknown>): LogLine => {
  const parts: ReadonlyArray<unknown> = Array.isArray(options.message) ? options.message : [options.message]
  const first = parts[0]
  const msg = typeof first === "string" ? first : ""
  const fields: Array<readonly [string, unknown]> = Object.entries(
    options.fiber.getRef(References.CurrentLogAnnotations)
  )
  const details: Array<unknown> = []
  for (const part of typeof first === "string" ? parts.slice(1) : parts) {
    if (isPlainObject(part)) fields.push(...Object.entries(part))
    else details.push(part)
  }
  if (details.length > 0) fields.push(["detail", details.length === 1 ? details[0] : details])
  const spans = options.fiber.getRef(References.CurrentLogSpans)
  if (spans.length > 0) {
    const now = options.date.getTime()
    fields.push(["spans", Object.fromEntries(spans.map(([label, startedAt]) => [label, now - startedAt]))])
  }
  const line = makeLine(options.date, levelName(options.logLevel), msg, fields)
  if (options.cause.reasons.length === 0) return line
  let name = "cause"
  while (Object.hasOwn(line, name)) name = `${CLASH_PREFIX}${name}`
  define(line as unknown as Record<string, LogValue>, name, maskedText(Cause.pretty(options.cause), MAX_CAUSE_CHARS))
  return line
}

/**
 * A line as JSON (no newline): `JSON.stringify` of it, so `time`, `level`
 * and `msg` first.
 *
 * @category formatting
 */
export const lineJson = (line: LogLine): string => JSON.stringify(line)

// A word written bare in the text form: no space, quote, `=`, backslash, control or format character, no surrogate.
const bareWord = /^[^\s"=\\\p{C}]+$/u
// A message written bare: no `=`, no control or format character, no line break, no surrogate.
const bareMessage = /^[^=\p{C}\u2028\u2029]+$/u

/** JSON text with the line and paragraph separators escaped (JSON leaves them raw). */
const quoted = (value: unknown): string =>
  JSON.stringify(value).replaceAll("\u2028", "\\u2028").replaceAll("\u2029", "\\u2029")

/** A value in the text form: a plain word bare, any other string quoted, a number or boolean as is, else JSON. */
const textValue = (value: LogValue): string =>
  typeof value === "string"
    ? (bareWord.test(value) ? value : quoted(value))
    : typeof value === "object"
    ? quoted(value)
    : String(value)

/** Whether a value is left out of the text form: `null`, `[]` and `{}`. */
const isEmpty = (value: LogValue | undefined): boolean =>
  value === null || value === undefined ||
  (typeof value === "object" && (Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0))

/**
 * A line in the readable form (no newline): `time LEVEL msg key=value …`,
 * e.g. `2026-11-25T15:00:00.000Z WARN  Channel put in cooldown channel=openai-main seconds=30`. The message is
 * written bare unless it holds `=` or a control character (then quoted as JSON).
 *
 * @category formatting
 */
export const lineText = (line: LogLine): string => {
  let text = `${line.time} ${line.level.toUpperCase().padEnd(5)} ${
    bareMessage.test(line.msg) ? line.msg : quoted(line.msg)
  }`
  for (const key of Object.keys(line)) {
    if (key === "time" || key === "level" || key === "msg") continue
    const value = line[key]
    if (!isEmpty(value)) text += ` ${bareWord.test(key) ? key : quoted(key)}=${textValue(value)}`
  }
  return text
}

/** A line in `format`. @category formatting */
export const formatLine = (line: LogLine, format: "json" | "text"): string =>
  format === "json" ? lineJson(line) : lineText(line)

/**
 * Effect's logger writing every event as one line in `format` to `sink`
 * (no newline); the level filter is `References.MinimumLogLevel`'s.
 *
 * @category loggers
 */
export const lineLogger = (format: "json" | "text", sink: (line: string) => void): Logger.Logger<unknown, void> =>
  Logger.make((options) => sink(formatLine(effectLine(options), format)))
