/**
 * When the emulator calls a tool (`toolCalls` option, `Answer.ts`'s `ToolCallMode`), on the OpenAI chat, Anthropic,
 * Gemini and Responses wires through their official SDKs: `automatic` (the default) calls the first offered tool whenever tool
 * choice allows; `asked` (the demo's) answers in text unless the last user message asks for a call
 * (`tool:<name> {json}`) or tool choice requires one (a named tool, `required` / `any` / `ANY`), and answers a tool
 * result in text, so an agent's turn ends.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { FunctionCallingConfigMode, GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import type { ToolCallMode } from "../../emulator/Emulator.ts"
import { weatherSchema, withEmulator } from "./Support.ts"

const ASKED = 'tool:get_weather {"location": "Paris", "unit": "celsius"} please'
const SAMPLED = { location: "sample", unit: "celsius" }

const openai = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-test-emulator", maxRetries: 0 })
const chatTools: Array<OpenAI.Chat.ChatCompletionTool> = [
  { type: "function", function: { name: "get_weather", parameters: weatherSchema } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } }
]

/** One chat completion with the two tools; its tool calls as `[name, arguments]` and its text. */
const chat = async (
  url: string,
  content: string,
  extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}
) => {
  const completion = await openai(url).chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content }],
    tools: chatTools,
    ...extra
  })
  const choice = completion.choices[0]
  return {
    calls: (choice.message.tool_calls ?? []).map((call) =>
      call.type === "function" ? [call.function.name, JSON.parse(call.function.arguments)] : [call.type, null]
    ),
    text: choice.message.content,
    finish: choice.finish_reason
  }
}

Deno.test("tool calls: automatic (the default) calls the first tool on the OpenAI chat wire, asked answers in text", async () => {
  for (const mode of [undefined, "automatic"] satisfies Array<ToolCallMode | undefined>) {
    await withEmulator({ toolCalls: mode }, async (emulator) => {
      const plain = await chat(emulator.url, "What is the weather?")
      deepStrictEqual(plain.calls, [["get_weather", SAMPLED]], String(mode))
      strictEqual(plain.finish, "tool_calls")
    })
  }
  await withEmulator({ toolCalls: "asked" }, async (emulator) => {
    const plain = await chat(emulator.url, "What is the weather?")
    deepStrictEqual([plain.calls, plain.text, plain.finish], [[], "Echo: What is the weather?", "stop"])

    const asked = await chat(emulator.url, ASKED)
    deepStrictEqual(asked.calls, [["get_weather", { location: "Paris", unit: "celsius" }]])
    strictEqual(asked.finish, "tool_calls")

    const required = await chat(emulator.url, "Anything.", { tool_choice: "required" })
    deepStrictEqual(required.calls, [["get_weather", SAMPLED]])
    const named = await chat(emulator.url, "Anything.", {
      tool_choice: { type: "function", function: { name: "get_time" } }
    })
    deepStrictEqual(named.calls, [["get_time", {}]])
    const none = await chat(emulator.url, ASKED, { tool_choice: "none" })
    deepStrictEqual(none.calls, [])

    // A streamed answer makes the same choice.
    let text = ""
    let streamedCalls = 0
    const stream = await openai(emulator.url).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "Stream me the weather." }],
      tools: chatTools,
      stream: true
    })
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ""
      streamedCalls += chunk.choices[0]?.delta?.tool_calls?.length ?? 0
    }
    deepStrictEqual([text, streamedCalls], ["Echo: Stream me the weather.", 0])

    // The agent's next turn, with the tool's result: text, so the loop ends.
    const after = await openai(emulator.url).chat.completions.create({
      model: "gpt-test",
      messages: [
        { role: "user", content: ASKED },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "18 degrees" }
      ],
      tools: chatTools
    })
    deepStrictEqual([after.choices[0].message.content, after.choices[0].finish_reason], [
      "Tool result: 18 degrees",
      "stop"
    ])
  })
})

const anthropic = (url: string) => new Anthropic({ baseURL: url, apiKey: "sk-test-emulator", maxRetries: 0 })
const anthropicTools: Array<Anthropic.Tool> = [
  { name: "get_weather", input_schema: weatherSchema },
  { name: "get_time", input_schema: { type: "object", properties: {} } }
]

/** One Anthropic message with the two tools; its tool uses as `[name, input]`, its text and stop reason. */
const message = async (url: string, content: string, toolChoice?: Anthropic.ToolChoice) => {
  const answer = await anthropic(url).messages.create({
    model: "claude-test",
    max_tokens: 256,
    messages: [{ role: "user", content }],
    tools: anthropicTools,
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice })
  })
  return {
    calls: answer.content.flatMap((block) => block.type === "tool_use" ? [[block.name, block.input]] : []),
    text: answer.content.flatMap((block) => block.type === "text" ? [block.text] : []).join(""),
    stop: answer.stop_reason
  }
}

Deno.test("tool calls: the Anthropic wire follows the mode (automatic, asked, any, a named tool)", async () => {
  await withEmulator({}, async (emulator) => {
    const plain = await message(emulator.url, "What is the weather?")
    deepStrictEqual([plain.calls, plain.stop], [[["get_weather", SAMPLED]], "tool_use"])
  })
  await withEmulator({ toolCalls: "asked" }, async (emulator) => {
    const plain = await message(emulator.url, "What is the weather?")
    deepStrictEqual([plain.calls, plain.text, plain.stop], [[], "Echo: What is the weather?", "end_turn"])
    const asked = await message(emulator.url, ASKED)
    deepStrictEqual([asked.calls, asked.stop], [[["get_weather", { location: "Paris", unit: "celsius" }]], "tool_use"])
    deepStrictEqual((await message(emulator.url, "Anything.", { type: "any" })).calls, [["get_weather", SAMPLED]])
    deepStrictEqual((await message(emulator.url, "Anything.", { type: "tool", name: "get_time" })).calls, [[
      "get_time",
      {}
    ]])
    deepStrictEqual((await message(emulator.url, "Anything.", { type: "auto" })).calls, [])

    let text = ""
    const stream = anthropic(emulator.url).messages.stream({
      model: "claude-test",
      max_tokens: 256,
      messages: [{ role: "user", content: "Stream me the weather." }],
      tools: anthropicTools
    })
    stream.on("text", (delta) => void (text += delta))
    const final = await stream.finalMessage()
    deepStrictEqual([text, final.stop_reason, final.content.some((block) => block.type === "tool_use")], [
      "Echo: Stream me the weather.",
      "end_turn",
      false
    ])
  })
})

const gemini = (url: string) => new GoogleGenAI({ apiKey: "gm-test", httpOptions: { baseUrl: url } })
const geminiTools = [{
  functionDeclarations: [
    { name: "get_weather", parametersJsonSchema: weatherSchema },
    { name: "get_time", parametersJsonSchema: { type: "object", properties: {} } }
  ]
}]

/** One Gemini generation with the two tools; its function calls as `[name, args]` and its text. */
const generate = async (url: string, contents: string, mode?: FunctionCallingConfigMode, allowed?: Array<string>) => {
  const response = await gemini(url).models.generateContent({
    model: "gemini-2.5-flash",
    contents,
    config: {
      tools: geminiTools,
      ...(mode === undefined ? {} : {
        toolConfig: {
          functionCallingConfig: { mode, ...(allowed === undefined ? {} : { allowedFunctionNames: allowed }) }
        }
      })
    }
  })
  return {
    calls: (response.functionCalls ?? []).map((call) => [call.name, call.args]),
    // The parts' own text: the SDK's `text` getter warns on a function call.
    text: (response.candidates?.[0]?.content?.parts ?? []).map((part) => part.text ?? "").join("")
  }
}

Deno.test("tool calls: the Gemini wire follows the mode (automatic, asked, ANY, one allowed function)", async () => {
  await withEmulator({ toolCalls: "automatic" }, async (emulator) => {
    deepStrictEqual((await generate(emulator.url, "What is the weather?")).calls, [["get_weather", SAMPLED]])
  })
  await withEmulator({ toolCalls: "asked" }, async (emulator) => {
    const plain = await generate(emulator.url, "What is the weather?")
    deepStrictEqual([plain.calls, plain.text], [[], "Echo: What is the weather?"])
    deepStrictEqual((await generate(emulator.url, ASKED)).calls, [[
      "get_weather",
      { location: "Paris", unit: "celsius" }
    ]])
    deepStrictEqual((await generate(emulator.url, "Anything.", FunctionCallingConfigMode.ANY)).calls, [[
      "get_weather",
      SAMPLED
    ]])
    deepStrictEqual(
      (await generate(emulator.url, "Anything.", FunctionCallingConfigMode.ANY, ["get_time"])).calls,
      [["get_time", {}]]
    )
    deepStrictEqual((await generate(emulator.url, "Anything.", FunctionCallingConfigMode.AUTO)).calls, [])

    let text = ""
    let calls = 0
    const stream = await gemini(emulator.url).models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: "Stream me the weather.",
      config: { tools: geminiTools }
    })
    for await (const chunk of stream) {
      text += chunk.text ?? ""
      calls += chunk.functionCalls?.length ?? 0
    }
    deepStrictEqual([text, calls], ["Echo: Stream me the weather.", 0])
  })
})

Deno.test("tool calls: the Responses wire (what Codex speaks) follows the mode", async () => {
  const weatherTool = { type: "function" as const, name: "get_weather", parameters: weatherSchema, strict: true }
  const respond = async (url: string, input: string, toolChoice?: OpenAI.Responses.ToolChoiceOptions) => {
    const response = await openai(url).responses.create({
      model: "gpt-5",
      input,
      tools: [weatherTool],
      ...(toolChoice === undefined ? {} : { tool_choice: toolChoice })
    })
    return {
      calls: response.output.flatMap((item) =>
        item.type === "function_call" ? [[item.name, JSON.parse(item.arguments)]] : []
      ),
      text: response.output_text
    }
  }
  await withEmulator({}, async (emulator) => {
    deepStrictEqual((await respond(emulator.url, "What is the weather?")).calls, [["get_weather", SAMPLED]])
  })
  await withEmulator({ toolCalls: "asked" }, async (emulator) => {
    deepStrictEqual(await respond(emulator.url, "What is the weather?"), {
      calls: [],
      text: "Echo: What is the weather?"
    })
    deepStrictEqual((await respond(emulator.url, ASKED)).calls, [["get_weather", {
      location: "Paris",
      unit: "celsius"
    }]])
    deepStrictEqual((await respond(emulator.url, "Anything.", "required")).calls, [["get_weather", SAMPLED]])
  })
})
