/**
 * Issue 26's property: a value the decoder does not model at a position that holds an enumerated string (a role,
 * a thinking type or display, an effort, a tool or tool-choice type, a format type, a verbosity) never fails
 * decoding; it is named in `Request.untranslatable` at the caller's path (so a translation is refused by name and a
 * same-format channel gets the body as sent), and the caller's body is left as it was. For every format with such
 * positions: messages, chat completions, Responses, generate-content (legacy completions has none: its body holds
 * no enumerated string).
 */
import { Result } from "effect"
import fc from "fast-check"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { FormatName } from "../../../src/formats/Format.ts"
import { formatOf } from "../../../src/formats/Formats.ts"

type Json = Record<string, unknown>

/** One position: a valid body with `value` put there, the param that names it, and the values the decoder reads. */
interface Position {
  readonly format: FormatName
  readonly param: string
  readonly known: ReadonlyArray<string>
  readonly body: (value: string) => Json
}

const efforts = ["none", "minimal", "low", "medium", "high", "xhigh", "max"]
const anthropicEfforts = ["low", "medium", "high", "xhigh", "max"]

const anthropic = (extra: Json, messages: ReadonlyArray<Json> = [{ role: "user", content: "hi" }]): Json => ({
  model: "m",
  max_tokens: 100,
  messages,
  ...extra
})
const chat = (extra: Json, messages: ReadonlyArray<Json> = [{ role: "user", content: "hi" }]): Json => ({
  model: "m",
  messages,
  ...extra
})
const responses = (extra: Json): Json => ({ model: "m", input: "hi", ...extra })
const tool = { name: "f", description: "d", input_schema: { type: "object" } }

const POSITIONS: ReadonlyArray<Position> = [
  {
    format: "anthropic",
    param: "messages[1].role",
    known: ["user", "assistant", "system"],
    body: (role) =>
      anthropic({}, [{ role: "user", content: "hi" }, { role, content: "x" }, { role: "user", content: "y" }])
  },
  {
    format: "anthropic",
    param: "thinking.type",
    known: ["enabled", "adaptive", "between_tools", "disabled"],
    body: (type) => anthropic({ thinking: { type } })
  },
  {
    format: "anthropic",
    param: "thinking.display",
    known: ["summarized", "omitted"],
    body: (display) => anthropic({ thinking: { type: "adaptive", display } })
  },
  {
    format: "anthropic",
    param: "output_config.effort",
    known: anthropicEfforts,
    body: (effort) => anthropic({ output_config: { effort } })
  },
  { format: "anthropic", param: "effort", known: anthropicEfforts, body: (effort) => anthropic({ effort }) },
  {
    format: "anthropic",
    param: "tool_choice.type",
    known: ["auto", "any", "tool", "none"],
    body: (type) => anthropic({ tools: [tool], tool_choice: { type } })
  },
  {
    format: "openai-chat",
    param: "messages[1].role",
    known: ["system", "developer", "user", "assistant", "tool", "function"],
    body: (role) => chat({}, [{ role: "user", content: "hi" }, { role, content: "x" }, { role: "user", content: "y" }])
  },
  {
    format: "openai-chat",
    param: "tools[0].type",
    known: ["function", "custom"],
    body: (type) => chat({ tools: [{ type, [type]: {} }] })
  },
  {
    format: "openai-chat",
    param: "tool_choice",
    known: ["auto", "none", "required"],
    body: (choice) => chat({ tool_choice: choice })
  },
  {
    format: "openai-chat",
    param: "tool_choice.type",
    known: ["function", "custom", "allowed_tools"],
    body: (type) => chat({ tool_choice: { type } })
  },
  {
    format: "openai-chat",
    param: "response_format.type",
    known: ["text", "json_object", "json_schema"],
    body: (type) => chat({ response_format: { type } })
  },
  {
    format: "openai-chat",
    param: "reasoning_effort",
    known: efforts,
    body: (effort) => chat({ reasoning_effort: effort })
  },
  {
    format: "openai-chat",
    param: "verbosity",
    known: ["low", "medium", "high"],
    body: (verbosity) => chat({ verbosity })
  },
  {
    format: "openai-responses",
    param: "input[1].role",
    known: ["user", "system", "developer", "assistant"],
    body: (role) => ({
      model: "m",
      input: [{ role: "user", content: "hi" }, { role, content: "x" }, { type: "message", role: "user", content: "y" }]
    })
  },
  {
    format: "openai-responses",
    param: "reasoning.effort",
    known: efforts,
    body: (effort) => responses({ reasoning: { effort } })
  },
  {
    format: "openai-responses",
    param: "reasoning.summary",
    known: ["auto", "concise", "detailed"],
    body: (summary) => responses({ reasoning: { effort: "low", summary } })
  },
  {
    format: "openai-responses",
    param: "tool_choice",
    known: ["auto", "none", "required"],
    body: (choice) => responses({ tool_choice: choice })
  },
  {
    format: "openai-responses",
    param: "text.format.type",
    known: ["text", "json_object", "json_schema"],
    body: (type) => responses({ text: { format: { type } } })
  },
  {
    format: "openai-responses",
    param: "text.verbosity",
    known: ["low", "medium", "high"],
    body: (verbosity) => responses({ text: { verbosity } })
  },
  {
    format: "gemini",
    param: "contents[1].role",
    known: ["user", "model", "function"],
    body: (role) => ({
      contents: [{ role: "user", parts: [{ text: "hi" }] }, { role, parts: [{ text: "x" }] }, {
        role: "user",
        parts: [{ text: "y" }]
      }]
    })
  }
]

/** Strings of any code units, lone surrogates and NUL included; a known value is filtered out per position. */
const anyValue = fc.string({ unit: "binary", minLength: 1, maxLength: 24 })

for (const position of POSITIONS) {
  Deno.test(`property: a new value at ${position.format} ${position.param} is set aside and named`, () => {
    fc.assert(
      fc.property(anyValue.filter((value) => !position.known.includes(value)), (value) => {
        const body = position.body(value)
        const before = structuredClone(body)
        const decoded = formatOf(position.format).decodeRequest(body, { model: "m" })
        ok(
          Result.isSuccess(decoded),
          Result.isSuccess(decoded) ? "" : `${decoded.failure.param}: ${decoded.failure.message}`
        )
        const notes = decoded.success.untranslatable ?? []
        ok(notes.some((note) => note.param === position.param), JSON.stringify(notes))
        deepStrictEqual(body, before)
      }),
      { numRuns: 60 }
    )
  })
}

Deno.test("a known value at each position is decoded, not set aside", () => {
  for (const position of POSITIONS) {
    for (const value of position.known) {
      const decoded = formatOf(position.format).decodeRequest(position.body(value), { model: "m" })
      if (Result.isFailure(decoded)) continue // A known value may still be invalid in this body (e.g. a tool role without its id).
      const notes = decoded.success.untranslatable ?? []
      strictEqual(notes.some((note) => note.param === position.param), false, `${position.format} ${value}`)
    }
  }
})
