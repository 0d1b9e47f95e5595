import { Result } from "effect"
/**
 * How deep JSON text nests, told before it is parsed: one linear scan that
 * counts `[` and `{` outside strings (string contents skipped, escapes
 * included), so a body of nested brackets is refused in microseconds instead
 * of being parsed into a structure that every later walk (`JSON.stringify`
 * on each attempt, the recursive checks) pays for again, or overflows the
 * stack on. `parseJsonWithin` is `JSON.parse` behind that check; every parse
 * of text from a caller or a vendor goes through it or checks first. Pure.
 *
 * @since 0.1.0
 */

/**
 * The deepest nesting of arrays and objects accepted in JSON from a caller or
 * a vendor (levels: `[]` and `{}` are 1, `[[]]` is 2). No vendor format needs
 * nearly as many: measured over the 280 request bodies of the coding-agent,
 * same-format, AI SDK, cross-format matrix, chat, Responses and
 * generate-content integration tests (tool JSON Schemas included), the
 * deepest nests 8 levels. A constant rather than a setting: the bound guards
 * the gateway, and is read by pure decoders that take no settings.
 *
 * @category constants
 */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d

/**
 * The index just past the quote that closes the string whose contents start
 * at `from`, or `text.length` when none does. A quote preceded by an odd run
 * of backslashes is escaped. Each run of backslashes is counted once (it ends
 * at the previous quote), so the whole scan stays linear.
 */
const stringEnd = (text: string, from: number): number => {
  let at = from
  while (true) {
    const quote = text.indexOf('"', at)
    if (quote === -1) return text.length
    let backslashes = 0
    while (quote - backslashes - 1 >= from && text.charCodeAt(quote - backslashes - 1) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return quote + 1
    at = quote + 1
  }
}

/**
 * The nesting depth of the JSON text `text`: the most arrays and objects open
 * at once (0 for a scalar). For valid JSON it is the real depth of the parsed
 * value; text that is not JSON gets a number too (an unmatched closing bracket
 * counts for nothing), which `JSON.parse` then refuses anyway. The scan stops
 * as soon as the depth passes `limit`, returning `limit + 1`. Linear in the
 * length of `text`; allocates nothing.
 *
 * @category json
 */
export const jsonDepth = (text: string, limit: number = Number.POSITIVE_INFINITY): number => {
  let depth = 0
  let deepest = 0
  let index = 0
  const length = text.length
  while (index < length) {
    const code = text.charCodeAt(index)
    if (code === QUOTE) {
      index = stringEnd(text, index + 1)
      continue
    }
    if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      depth++
      if (depth > deepest) {
        deepest = depth
        if (deepest > limit) return deepest
      }
    } else if ((code === CLOSE_BRACKET || code === CLOSE_BRACE) && depth > 0) depth--
    index++
  }
  return deepest
}

/**
 * Whether `text` nests arrays and objects deeper than `limit` levels (default
 * `MAX_JSON_DEPTH`). Stops scanning at the first level past it.
 *
 * @category json
 */
export const nestsTooDeep = (text: string, limit: number = MAX_JSON_DEPTH): boolean => jsonDepth(text, limit) > limit

/**
 * What `parseJsonWithin` gives: Effect's `Result`, whose success is the value
 * and whose failure says why there is none (`too-deep`: the text nests deeper
 * than the limit and was not parsed; `not-json`: `JSON.parse` refused it).
 *
 * @category models
 */
export type JsonParsed = Result.Result<unknown, "too-deep" | "not-json">

/**
 * `JSON.parse(text)` when `text` nests at most `limit` levels (default
 * `MAX_JSON_DEPTH`), checked first by `nestsTooDeep`. Never throws.
 *
 * @category json
 */
export const parseJsonWithin = (text: string, limit: number = MAX_JSON_DEPTH): JsonParsed => {
  if (nestsTooDeep(text, limit)) return Result.fail("too-deep")
  try {
    return Result.succeed(JSON.parse(text))
  } catch {
    return Result.fail("not-json")
  }
}

/**
 * The value of the JSON text `text`, or `undefined` when it is not JSON or
 * nests deeper than `MAX_JSON_DEPTH` (`parseJsonWithin`): for the readers of
 * vendor text and tool arguments that treat both alike. Never throws.
 *
 * @category json
 */
export const parseJsonOrUndefined = (text: string): unknown => {
  const parsed = parseJsonWithin(text)
  return Result.getOrUndefined(parsed)
}
