/**
 * The JSON nesting scanner: on `JSON.stringify` output of any value it gives
 * the value's real nesting depth, whatever its strings hold (brackets,
 * quotes, backslashes, escapes); it stops at the first level past its limit;
 * and `parseJsonWithin` refuses a bracket bomb without parsing it.
 */
import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import {
  jsonDepth,
  MAX_JSON_DEPTH,
  nestsTooDeep,
  parseJsonOrUndefined,
  parseJsonWithin
} from "../../src/domain/JsonDepth.ts"

/** The nesting depth of a parsed value, by walking it (0 for a scalar). */
const realDepth = (value: unknown): number => {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(realDepth))
  if (typeof value === "object" && value !== null) return 1 + Math.max(0, ...Object.values(value).map(realDepth))
  return 0
}

/** Strings made mostly of what could fool a scanner: brackets, quotes, backslashes, escapes, control characters. */
const trickyString = fc.string({
  unit: fc.constantFrom("[", "]", "{", "}", '"', "\\", "\\u0022", "\\\\", "a", ":", ",", "\n", "\u0000", "\u2028", "é"),
  maxLength: 12
})

const { json: trickyJson } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -1.5),
    trickyString,
    fc.array(tie("json"), { maxLength: 4 }),
    fc.dictionary(trickyString, tie("json"), { maxKeys: 4 })
  )
}))

const nested = (levels: number, inner = ""): string => "[".repeat(levels) + inner + "]".repeat(levels)

Deno.test("jsonDepth: equals the real depth of JSON.stringify of any JSON value", () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
      strictEqual(jsonDepth(JSON.stringify(value)), realDepth(value))
    }),
    { numRuns: 500 }
  )
})

Deno.test("jsonDepth: strings and keys full of brackets, quotes and backslashes do not count", () => {
  fc.assert(
    fc.property(trickyJson, (value) => {
      const text = JSON.stringify(value)
      strictEqual(jsonDepth(text), realDepth(value), text)
      // Pretty-printed the same.
      strictEqual(jsonDepth(JSON.stringify(value, null, 2)), realDepth(value), text)
    }),
    { numRuns: 1000 }
  )
})

Deno.test("jsonDepth: hand-picked strings, escapes and levels", () => {
  strictEqual(jsonDepth("42"), 0)
  strictEqual(jsonDepth('"[[[["'), 0)
  strictEqual(jsonDepth("[]"), 1)
  strictEqual(jsonDepth("{}"), 1)
  strictEqual(jsonDepth('{"a":[{"b":[]}]}'), 4)
  strictEqual(jsonDepth('{"[[[[": "]]]]{{{{"}'), 1)
  // An escaped quote does not end the string; an escaped backslash before a quote does not escape it.
  strictEqual(jsonDepth('["\\"[[[[[[", "x"]'), 1)
  strictEqual(jsonDepth('["\\\\", [[]]]'), 3)
  strictEqual(jsonDepth('["\\\\\\"[[[[", []]'), 2)
  strictEqual(jsonDepth(`[${JSON.stringify("\\".repeat(101) + '"[[[')}]`), 1)
  // An unterminated string runs to the end; a stray closing bracket counts for nothing.
  strictEqual(jsonDepth('["[[[['), 1)
  strictEqual(jsonDepth("]]]][[[["), 4)
  strictEqual(jsonDepth(nested(64)), 64)
  strictEqual(jsonDepth(nested(3, nested(2)) + nested(5)), 5)
})

Deno.test("jsonDepth: stops at the first level past the limit", () => {
  strictEqual(jsonDepth(nested(1_000_000), 64), 65)
  strictEqual(jsonDepth(nested(64), 64), 64)
  strictEqual(nestsTooDeep(nested(MAX_JSON_DEPTH)), false)
  strictEqual(nestsTooDeep(nested(MAX_JSON_DEPTH + 1)), true)
  strictEqual(nestsTooDeep('{"a":' + nested(MAX_JSON_DEPTH - 1) + "}"), false)
  strictEqual(nestsTooDeep('{"a":' + nested(MAX_JSON_DEPTH) + "}"), true)
  strictEqual(nestsTooDeep(`{"a":${JSON.stringify(nested(10_000))}}`), false, "a bomb inside a string is text")
  strictEqual(nestsTooDeep(nested(3), 2), true)
})

Deno.test("parseJsonWithin: a bomb is refused unparsed; 64 levels, scalars and bad JSON as JSON.parse says", () => {
  deepStrictEqual(parseJsonWithin(nested(1_000_000)), Result.fail("too-deep"))
  // Unbalanced: the scanner still refuses it before JSON.parse sees it.
  deepStrictEqual(parseJsonWithin("[".repeat(1_000_000)), Result.fail("too-deep"))
  const deepest = parseJsonWithin(nested(MAX_JSON_DEPTH))
  strictEqual(Result.isSuccess(deepest), true)
  if (Result.isSuccess(deepest)) strictEqual(realDepth(deepest.success), MAX_JSON_DEPTH)
  deepStrictEqual(parseJsonWithin('{"a":"[[["}'), Result.succeed({ a: "[[[" }))
  deepStrictEqual(parseJsonWithin("7"), Result.succeed(7))
  deepStrictEqual(parseJsonWithin("{"), Result.fail("not-json"))
  deepStrictEqual(parseJsonWithin(""), Result.fail("not-json"))
  strictEqual(parseJsonOrUndefined(nested(MAX_JSON_DEPTH + 1)), undefined)
  deepStrictEqual(parseJsonOrUndefined("[1]"), [1])
})
