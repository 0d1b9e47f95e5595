import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { chatContentProblem, geminiConfigProblem, responsesInputProblem } from "../../emulator/RequestChecks.ts"

Deno.test("chatContentProblem: known parts with their fields pass, video_url included; others name the field", () => {
  const user = (content: unknown) => [{ role: "user", content }]
  strictEqual(
    chatContentProblem(user([
      { type: "text", text: "x" },
      { type: "video_url", video_url: { url: "https://example.com/a.mp4" } },
      { type: "file", file: { file_id: "file-1" } }
    ])),
    undefined
  )
  strictEqual(
    chatContentProblem(user([{ type: "video_url", video_url: {} }]))?.param,
    "messages[0].content[0].video_url.url"
  )
  strictEqual(chatContentProblem(user([{ type: "file", file: {} }]))?.param, "messages[0].content[0].file.file_data")
  strictEqual(chatContentProblem(user([{ type: "hologram" }]))?.param, "messages[0].content[0].type")
  strictEqual(chatContentProblem([{ role: "assistant", content: [{ type: "refusal", refusal: "no" }] }]), undefined)
})

Deno.test("responsesInputProblem: references and replayed hosted calls need their id; hosted choices their tool", () => {
  strictEqual(responsesInputProblem({ input: [{ type: "item_reference", id: "msg_1" }] }), undefined)
  strictEqual(responsesInputProblem({ input: [{ id: "msg_1" }] }), undefined)
  strictEqual(responsesInputProblem({ input: [{ type: "web_search_call" }] })?.param, "input[0].id")
  strictEqual(responsesInputProblem({ input: [{ type: "teleport" }] })?.param, "input[0].type")
  strictEqual(
    responsesInputProblem({ input: [{ type: "reasoning", summary: [], encrypted_content: "sluice.anthropic.x" }] })
      ?.param,
    "input[0].encrypted_content"
  )
  strictEqual(
    responsesInputProblem({ input: [{ role: "user", content: [{ type: "input_image" }] }] })?.param,
    "input[0].content[0].image_url"
  )
  strictEqual(
    responsesInputProblem({ input: "x", tools: [{ type: "web_search" }], tool_choice: { type: "web_search" } }),
    undefined
  )
  deepStrictEqual(responsesInputProblem({ input: "x", tool_choice: { type: "web_search" } }), {
    message: "Tool choice 'web_search' not found in 'tools' parameter.",
    param: "tool_choice"
  })
})

Deno.test("geminiConfigProblem: thinkingLevel alone and on Gemini 3 only; known response modalities", () => {
  const config = (generationConfig: unknown) => ({ contents: [], generationConfig })
  strictEqual(geminiConfigProblem(config({ thinkingConfig: { thinkingLevel: "low" } }), "gemini-3-pro"), undefined)
  strictEqual(
    geminiConfigProblem(config({ thinkingConfig: { thinkingLevel: "low", thinkingBudget: 1024 } }), "gemini-3-pro")
      ?.message,
    "You can only set only one of thinking budget and thinking level."
  )
  strictEqual(
    geminiConfigProblem(config({ thinkingConfig: { thinkingLevel: "low" } }), "gemini-2.5-flash")?.message,
    "thinking_level is not supported by this model"
  )
  strictEqual(geminiConfigProblem(config({ responseModalities: ["TEXT", "IMAGE"] }), "gemini-3-pro"), undefined)
  strictEqual(
    geminiConfigProblem(config({ responseModalities: ["SMELL"] }), "gemini-3-pro")?.param,
    "generationConfig.responseModalities"
  )
})
