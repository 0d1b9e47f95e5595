/**
 * Each inbound format names the field of a canonical media item in its own
 * wire shape, through its own request decoder: a text that holds the same
 * URL, a `tool_result` split out of its user turn, Responses items merged into
 * one turn and snake_case generate-content keys all name the right field.
 */
import { strictEqual } from "node:assert/strict"
import { mediaParam } from "../../../src/formats/shared/MediaParam.ts"

const URL_A = "https://img.test/a.png"
const URL_B = "https://img.test/b\u0000\ud800.png"

Deno.test("mediaParam openai-chat: the image_url field, not a text holding the same URL", () => {
  const body = {
    model: "m",
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: [{ type: "text", text: URL_A }, { type: "image_url", image_url: { url: URL_A } }] }
    ]
  }
  strictEqual(mediaParam("openai-chat", body, { message: 1, part: 1 }), "messages[1].content[1].image_url.url")
  strictEqual(mediaParam("openai-chat", body, { message: 1, part: 0 }), undefined, "a text part is no media item")
  strictEqual(mediaParam("openai-chat", body, { message: 9, part: 0 }), undefined)
  strictEqual(mediaParam("openai-chat", { messages: "nope" }, { message: 0, part: 0 }), undefined)
})

Deno.test("mediaParam anthropic: a tool_result placed first in canonical form is named where the caller wrote it", () => {
  const body = {
    model: "m",
    max_tokens: 8,
    system: "be brief",
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { type: "url", url: URL_A } },
        {
          type: "tool_result",
          tool_use_id: "t1",
          content: [{ type: "text", text: "shot" }, { type: "image", source: { type: "url", url: URL_B } }]
        },
        { type: "document", source: { type: "url", url: URL_A } }
      ]
    }]
  }
  // Canonical: system, tool (the tool_result), user (image, document).
  strictEqual(
    mediaParam("anthropic", body, { message: 1, part: 0, inner: 1 }),
    "messages[0].content[1].content[1].source.url"
  )
  strictEqual(mediaParam("anthropic", body, { message: 2, part: 0 }), "messages[0].content[0].source.url")
  strictEqual(mediaParam("anthropic", body, { message: 2, part: 1 }), "messages[0].content[2].source.url")
})

Deno.test("mediaParam openai-responses: content and function_call_output fields of merged items", () => {
  const body = {
    model: "m",
    input: [
      { role: "user", content: [{ type: "input_text", text: "hi" }, { type: "input_file", file_url: URL_A }] },
      { type: "function_call", call_id: "c1", name: "snap", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: [{ type: "input_image", image_url: URL_B }] },
      { role: "user", content: [{ type: "input_image", image_url: URL_A }] }
    ]
  }
  strictEqual(mediaParam("openai-responses", body, { message: 0, part: 1 }), "input[0].content[1].file_url")
  strictEqual(mediaParam("openai-responses", body, { message: 2, part: 0, inner: 0 }), "input[2].output[0].image_url")
  strictEqual(mediaParam("openai-responses", body, { message: 3, part: 0 }), "input[3].content[0].image_url")
})

Deno.test("mediaParam gemini: the caller's spelling, function response parts, a system instruction before", () => {
  const body = {
    systemInstruction: { parts: [{ text: "be brief" }] },
    contents: [
      { role: "user", parts: [{ text: "x" }, { file_data: { mime_type: "image/png", file_uri: URL_A } }] },
      { role: "model", parts: [{ functionCall: { name: "snap", args: {} } }] },
      {
        role: "user",
        parts: [{
          functionResponse: {
            name: "snap",
            response: {},
            parts: [{ fileData: { mimeType: "image/png", fileUri: URL_B } }]
          }
        }]
      }
    ]
  }
  strictEqual(mediaParam("gemini", body, { message: 1, part: 1 }), "contents[0].parts[1].file_data.file_uri")
  strictEqual(
    mediaParam("gemini", body, { message: 3, part: 0, inner: 1 }),
    "contents[2].parts[0].functionResponse.parts[0].fileData.fileUri"
  )
})

Deno.test("mediaParam completions: no media, no field; the caller's body is left as it was", () => {
  const body = { model: "m", prompt: URL_A }
  strictEqual(mediaParam("completions", body, { message: 0, part: 0 }), undefined)
  const chat = { model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: URL_A } }] }] }
  mediaParam("openai-chat", chat, { message: 0, part: 0 })
  strictEqual(chat.messages[0].content[0].image_url.url, URL_A)
})
