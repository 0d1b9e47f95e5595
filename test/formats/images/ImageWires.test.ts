/**
 * The image wires as pure translators: what each sends for a canonical
 * request (fields only where the family has them, tiers and ratios for
 * generate-content, Ark groups), and how answers are read (Ark's failed items
 * skipped, a generate-content URL in `inlineData`, a blocked prompt a refusal,
 * an answer with no image unreadable), and the caller's answer (Base64 to a
 * `url` caller as a data URI).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { ImageRequest } from "../../../src/canonical/Image.ts"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import { encodeImagesAnswer, imageWires } from "../../../src/formats/images/Wires.ts"

const request = (over: Partial<ImageRequest> = {}): ImageRequest => ({
  model: "m",
  prompt: "a cat",
  n: 1,
  b64: false,
  references: [],
  ...over
})

Deno.test("openai wire: style only to dall-e-3, background only to GPT image, no response_format to GPT image", () => {
  const [dalle] = imageWires.openai.encodeCalls(
    request({ style: "vivid", background: "opaque" }),
    "dall-e-3",
    "dall-e-3"
  )
  deepStrictEqual(dalle, {
    _tag: "json",
    body: { model: "dall-e-3", prompt: "a cat", n: 1, response_format: "url", style: "vivid" }
  })
  const [gpt] = imageWires.openai.encodeCalls(
    request({ style: "vivid", background: "opaque", b64: true }),
    "gpt-image-1",
    "gpt-image"
  )
  deepStrictEqual(gpt, { _tag: "json", body: { model: "gpt-image-1", prompt: "a cat", n: 1, background: "opaque" } })
  const [free] = imageWires.openai.encodeCalls(request({ style: { a: 1 }, background: "x" }), "x", undefined)
  deepStrictEqual((free as { body: Record<string, unknown> }).body.style, { a: 1 })
})

Deno.test("openai wire: an edit is one multipart form with its files", async () => {
  const edit = {
    images: [{ mediaType: "image/png", base64: btoa("one") }, { mediaType: "image/png", base64: btoa("two") }],
    mask: { mediaType: "image/png", base64: btoa("mask") }
  }
  const [call] = imageWires.openai.encodeCalls(request({ edit }), "gpt-image-1", "gpt-image")
  strictEqual(call._tag, "form")
  const form = (call as { form: FormData }).form
  strictEqual(form.getAll("image[]").length, 2)
  strictEqual(await (form.get("mask") as File).text(), "mask")
  strictEqual(form.get("n"), "1")
})

Deno.test("ark wire: a group for n > 1, references as image, edits as data URIs", () => {
  const [group] = imageWires.ark.encodeCalls(
    request({ n: 3, size: "2048x2048", watermark: false }),
    "seedream",
    "flare"
  )
  deepStrictEqual(group, {
    _tag: "json",
    body: {
      model: "seedream",
      prompt: "a cat",
      response_format: "url",
      size: "2048x2048",
      watermark: false,
      sequential_image_generation: "auto",
      sequential_image_generation_options: { max_images: 3 }
    }
  })
  const [edit] = imageWires.ark.encodeCalls(
    request({ edit: { images: [{ mediaType: "image/jpeg", base64: "AAAA" }] } }),
    "s",
    "flare"
  )
  strictEqual((edit as { body: Record<string, unknown> }).body.image, "data:image/jpeg;base64,AAAA")
})

Deno.test("ark wire: failed items of a group are skipped; no image at all is unreadable", () => {
  deepStrictEqual(
    imageWires.ark.decodeResponse({ data: [{ url: "https://x/1.png" }, { error: { code: "OutputImageSensitive" } }] }),
    { images: [{ url: "https://x/1.png", revisedPrompt: undefined }] }
  )
  const none = imageWires.ark.decodeResponse({ data: [{ error: { code: "OutputImageSensitive" } }] })
  ok(none instanceof UpstreamFailed)
  strictEqual(none.kind, "bad-body")
})

Deno.test("gemini wire: one call per image, aspect ratio and tier, references as parts", () => {
  const calls = imageWires.gemini.encodeCalls(
    request({ n: 2, size: "2560x1712", tier: "2K", references: ["data:image/png;base64,QUJD", "https://x/a.png"] }),
    "gemini-2.5-flash-image",
    "pro-image"
  )
  strictEqual(calls.length, 2)
  deepStrictEqual((calls[0] as { body: Record<string, unknown> }).body, {
    contents: [{
      role: "user",
      parts: [{ text: "a cat" }, { inlineData: { mimeType: "image/png", data: "QUJD" } }, {
        fileData: { fileUri: "https://x/a.png" }
      }]
    }],
    generationConfig: { responseModalities: ["TEXT", "IMAGE"], imageConfig: { aspectRatio: "3:2", imageSize: "2K" } }
  })
})

Deno.test("gemini wire: inlineData as Base64 or a URL; a blocked prompt is a refusal", () => {
  const parts = [{ text: "here" }, { inlineData: { mimeType: "image/png", data: "iVBOR" } }, {
    inlineData: { data: "https://cdn/x.png" }
  }]
  deepStrictEqual(imageWires.gemini.decodeResponse({ candidates: [{ content: { parts } }] }), {
    images: [{ base64: "iVBOR", mediaType: "image/png" }, { url: "https://cdn/x.png" }]
  })
  const blocked = imageWires.gemini.decodeResponse({ promptFeedback: { blockReason: "SAFETY" } })
  ok(blocked instanceof UpstreamFailed)
  strictEqual(blocked.kind, "rejected")
  strictEqual(blocked.status, 400)
})

Deno.test("the caller's answer: Base64 to a url caller is a data URI; a URL stays a URL for a b64 caller", () => {
  const response = { images: [{ base64: "iVBOR", mediaType: "image/png" }, { url: "https://x/1.png" }] }
  deepStrictEqual(encodeImagesAnswer(response, false, 7), {
    created: 7,
    data: [{ url: "data:image/png;base64,iVBOR" }, { url: "https://x/1.png" }]
  })
  deepStrictEqual(encodeImagesAnswer(response, true, 7).data, [{ b64_json: "iVBOR" }, { url: "https://x/1.png" }])
})
