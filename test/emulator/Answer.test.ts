import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { anthropicMessages } from "../../emulator/Anthropic.ts"
import { answer, type Prompt, sampleFromSchema, splitWords, stableHash } from "../../emulator/Answer.ts"
import { geminiGenerate } from "../../emulator/Gemini.ts"
import { chatCompletions } from "../../emulator/OpenAiChat.ts"
import { legacyCompletions } from "../../emulator/OpenAiCompletions.ts"
import { compactResponse, createResponse } from "../../emulator/OpenAiResponses.ts"
import {
  makeMjTasks,
  mjAction,
  mjBlend,
  mjChange,
  mjDescribe,
  mjImagine,
  mjListByCondition,
  mjModal
} from "../../emulator/Midjourney.ts"
import { makeVideoTasks } from "../../emulator/VideoTasks.ts"
import { arkVideoCreate } from "../../emulator/VideosArk.ts"
import { geminiVideoCreate } from "../../emulator/VideosGemini.ts"
import { openAiVideoContent, openAiVideoCreate, openAiVideoRemix } from "../../emulator/VideosOpenAi.ts"
import { type JsonObject, makeIds } from "../../emulator/Wire.ts"

const basePrompt: Prompt = {
  lastUserText: "",
  images: [],
  toolResults: [],
  tools: [],
  toolChoice: "auto",
  reasoning: false,
  outputSchema: undefined,
  maxTokens: undefined,
  stop: [],
  texts: [],
  messageCount: 1
}

Deno.test("answer: echo is capped at 64 words and counts words as tokens", () => {
  const long = Array.from({ length: 100 }, (_, index) => `w${index}`).join(" ")
  const result = answer({ ...basePrompt, lastUserText: long, texts: [long] })
  strictEqual(result.words.length, 65)
  strictEqual(result.outputTokens, 65)
  strictEqual(result.finish, "stop")
  strictEqual(result.promptTokens, Math.ceil(long.length / 4) + 3)
})

Deno.test("answer: schema sampling follows the documented rules", () => {
  deepStrictEqual(
    sampleFromSchema({
      type: "OBJECT",
      properties: {
        name: { type: "STRING" },
        count: { type: "integer" },
        ok: { type: "boolean" },
        kind: { enum: ["a", "b"] },
        nested: { type: "object", properties: { x: { type: ["number", "null"] } } },
        list: { type: "array", items: { type: "string" } },
        optional: { type: "string" }
      },
      required: ["name", "count", "ok", "kind", "nested", "list"]
    }),
    { name: "sample", count: 1, ok: true, kind: "a", nested: { x: 1 }, list: ["sample"] }
  )
})

Deno.test("answer: stable hash is deterministic", () => {
  strictEqual(stableHash("abc"), stableHash("abc"))
  ok(stableHash("abc") !== stableHash("abd"))
})

Deno.test("property: word deltas always concatenate back to the text", () => {
  fc.assert(fc.property(fc.string(), (text) => splitWords(text).join("") === text))
})

Deno.test("property: max tokens is never exceeded and finish says length when it cuts", () => {
  fc.assert(
    fc.property(fc.array(fc.stringMatching(/^[a-z]{1,6}$/), { maxLength: 80 }), fc.nat(70), (words, max) => {
      const text = words.join(" ")
      const result = answer({ ...basePrompt, lastUserText: text, texts: [text], maxTokens: max })
      return result.outputTokens <= max && (result.finish === "length") === (words.length + 1 > max)
    })
  )
})

const handlers = [
  ["chat", chatCompletions],
  ["completions", legacyCompletions],
  ["responses", createResponse],
  ["compact", compactResponse],
  ["anthropic", anthropicMessages],
  ["gemini", geminiGenerate],
  ["videos", openAiVideoCreate],
  ["remix", openAiVideoRemix],
  ["video content", openAiVideoContent],
  ["ark videos", arkVideoCreate],
  ["gemini videos", geminiVideoCreate],
  ["mj imagine", mjImagine],
  ["mj change", mjChange],
  ["mj action", mjAction],
  ["mj modal", mjModal],
  ["mj blend", mjBlend],
  ["mj describe", mjDescribe],
  ["mj list", mjListByCondition]
] as const

Deno.test("property: every route handler answers arbitrary JSON bodies without throwing", () => {
  const ids = makeIds()
  const videos = makeVideoTasks(1, 100)
  const headers = new Headers({ "anthropic-version": "2023-06-01" })
  for (const [name, handler] of handlers) {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.boolean(), (body, stream) => {
        const reply = handler({
          body: { ...body, stream } as JsonObject,
          query: {},
          headers,
          path: name === "gemini" && stream ? "/v1beta/models/g:streamGenerateContent" : "/v1/x",
          model: "m",
          ids,
          created: 0,
          videos,
          midjourney: makeMjTasks(1, 100)
        })
        return reply._tag === "Events" || (reply.status >= 200 && reply.status < 500)
      }),
      { numRuns: 200 }
    )
  }
})

Deno.test("property: structured shapes with arbitrary content never throw", () => {
  const ids = makeIds()
  const videos = makeVideoTasks(1, 100)
  const part = fc.oneof(
    fc.record({ type: fc.constant("text"), text: fc.jsonValue() }),
    fc.record({ type: fc.constant("image_url"), image_url: fc.jsonValue() }),
    fc.record({ type: fc.constant("image"), source: fc.jsonValue() }),
    fc.record({ type: fc.constant("tool_result"), content: fc.jsonValue() }),
    fc.record({ text: fc.jsonValue(), inlineData: fc.jsonValue(), functionResponse: fc.jsonValue() })
  )
  const message = fc.record({
    role: fc.constantFrom("user", "assistant", "tool", "model", "system"),
    content: fc.oneof(fc.string(), fc.array(part)),
    parts: fc.array(part)
  })
  fc.assert(
    fc.property(fc.array(message), fc.jsonValue(), fc.jsonValue(), (messages, tools, toolChoice) => {
      for (const [, handler] of handlers) {
        handler({
          body: {
            model: "m",
            max_tokens: 50,
            messages,
            contents: messages,
            input: messages,
            tools,
            tool_choice: toolChoice
          },
          query: {},
          headers: new Headers({ "anthropic-version": "2023-06-01" }),
          path: "/v1/x",
          model: "m",
          ids,
          created: 0,
          videos,
          midjourney: makeMjTasks(1, 100)
        })
      }
      return true
    }),
    { numRuns: 200 }
  )
})

Deno.test("answer: `tool:<name> {json}` calls that offered tool with those arguments, then answers its result", () => {
  const tools = [{ name: "Agent", schema: { type: "object" } }, { name: "Bash", schema: { type: "object" } }]
  const asked = answer({
    ...basePrompt,
    tools,
    lastUserText: 'please tool:Bash {"command": "cat {a}.txt", "description": "read"} and tell me'
  })
  deepStrictEqual(asked.toolCalls, [{
    name: "Bash",
    input: { command: "cat {a}.txt", description: "read" },
    arguments: JSON.stringify({ command: "cat {a}.txt", description: "read" })
  }])
  strictEqual(asked.finish, "tool_calls")
  // A tool not offered, or no JSON: the usual rules (first tool, sampled arguments) or empty arguments.
  strictEqual(answer({ ...basePrompt, tools, lastUserText: "tool:Missing {}" }).toolCalls[0].name, "Agent")
  deepStrictEqual(answer({ ...basePrompt, tools, lastUserText: "tool:Bash {broken" }).toolCalls[0].input, {})
  // After the tool's result: text.
  const after = answer({ ...basePrompt, tools, lastUserText: "tool:Bash {}", toolResults: ["hello"] })
  strictEqual(after.text, "Tool result: hello")
})
