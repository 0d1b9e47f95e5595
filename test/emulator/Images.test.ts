/**
 * The emulator's image APIs: deterministic PNGs (valid chunks, same prompt
 * same bytes), the URLs it answers served by itself, and the fields each
 * vendor checks refused in its own error shape (so gateway tests fail for the
 * right reason); failures on demand through the usual faults.
 */
import { deepStrictEqual, notDeepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { pngBase64For, pngFor, seedOf } from "../../emulator/Png.ts"
import { withEmulator } from "./Support.ts"

const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test-x", "x-goog-api-key": "sk-test-x" },
    body: JSON.stringify(body)
  })

const refused = async (response: Response, param?: string): Promise<Record<string, unknown>> => {
  strictEqual(response.status, 400)
  const body = await response.json()
  if (param !== undefined) strictEqual(body.error.param, param)
  return body
}

Deno.test("emulator images: PNGs are valid and deterministic", () => {
  const bytes = pngFor(seedOf("a cat"))
  deepStrictEqual([...bytes.slice(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  deepStrictEqual(pngFor(seedOf("a cat")), bytes)
  notDeepStrictEqual(pngFor(seedOf("a dog")), bytes)
  ok(pngBase64For(1).startsWith("iVBORw0KGgo"))
  // The IEND chunk closes the file with its fixed CRC.
  deepStrictEqual([...bytes.slice(-8)], [0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82])
})

Deno.test("emulator images: OpenAI generations answer URLs it serves, and check fields per model", async () => {
  await withEmulator({}, async (emulator) => {
    const answer = await (await post(emulator.url, "/v1/images/generations", { prompt: "a cat", n: 2 })).json()
    strictEqual(answer.data.length, 2)
    const image = await fetch(answer.data[0].url)
    strictEqual(image.headers.get("content-type"), "image/png")
    strictEqual((await image.bytes()).length, pngFor(1).length)
    const gpt = await (await post(emulator.url, "/v1/images/generations", { model: "gpt-image-1", prompt: "x" })).json()
    ok(gpt.data[0].b64_json.startsWith("iVBOR"))
    ok(gpt.usage.output_tokens > 0)
    await refused(await post(emulator.url, "/v1/images/generations", { model: "dall-e-2" }), "prompt")
    await refused(await post(emulator.url, "/v1/images/generations", { prompt: "x", size: "1792x1024" }), "size")
    await refused(await post(emulator.url, "/v1/images/generations", { model: "dall-e-3", prompt: "x", n: 2 }), "n")
    await refused(
      await post(emulator.url, "/v1/images/generations", { model: "gpt-image-1", prompt: "x", response_format: "url" }),
      "response_format"
    )
    await refused(await post(emulator.url, "/v1/images/generations", { prompt: "x", style: "vivid" }), "style")
    await refused(
      await post(emulator.url, "/v1/images/generations", { prompt: "x", background: "opaque" }),
      "background"
    )
    await refused(
      await post(emulator.url, "/v1/images/generations", { model: "dall-e-3", prompt: "x", quality: "low" }),
      "quality"
    )
  })
})

Deno.test("emulator images: OpenAI edits take a multipart form with an image file", async () => {
  await withEmulator({}, async (emulator) => {
    const form = new FormData()
    form.append("model", "gpt-image-1")
    form.append("prompt", "add a hat")
    form.append("image[]", new File([pngFor(1)], "a.png", { type: "image/png" }))
    form.append("image[]", new File([pngFor(2)], "b.png", { type: "image/png" }))
    const response = await fetch(`${emulator.url}/v1/images/edits`, { method: "POST", body: form })
    strictEqual(response.status, 200)
    strictEqual((await response.json()).data.length, 1)
    const recorded = emulator.requests.at(-1)!.body as Record<string, unknown>
    strictEqual((recorded["image[]"] as Array<unknown>).length, 2)
    const noImage = new FormData()
    noImage.append("prompt", "x")
    await refused(await fetch(`${emulator.url}/v1/images/edits`, { method: "POST", body: noImage }), "image")
  })
})

Deno.test("emulator images: Ark checks size, format, watermark, references and group options", async () => {
  await withEmulator({}, async (emulator) => {
    const path = "/api/v3/images/generations"
    const base = { model: "seedream-4-0-250828", prompt: "a city" }
    const group = await (await post(emulator.url, path, {
      ...base,
      sequential_image_generation: "auto",
      sequential_image_generation_options: { max_images: 3 },
      response_format: "b64_json"
    })).json()
    strictEqual(group.data.length, 3)
    strictEqual(group.usage.generated_images, 3)
    const fewer = await (await post(emulator.url, path, {
      ...base,
      prompt: "fewer please",
      sequential_image_generation: "auto",
      sequential_image_generation_options: { max_images: 3 }
    })).json()
    strictEqual(fewer.data.length, 2)
    strictEqual((await (await post(emulator.url, path, { ...base, size: "2K" })).json()).data.length, 1)
    await refused(await post(emulator.url, path, { ...base, size: "512x512" }), "size")
    await refused(await post(emulator.url, path, { ...base, response_format: "png" }), "response_format")
    await refused(await post(emulator.url, path, { ...base, watermark: "no" }), "watermark")
    await refused(await post(emulator.url, path, { ...base, image: "not a url" }), "image")
    await refused(await post(emulator.url, path, { ...base, sequential_image_generation: "yes" }))
    await refused(await post(emulator.url, path, { model: "m" }), "prompt")
  })
})

Deno.test("emulator images: generate-content image output on image models (text on others), config checked", async () => {
  await withEmulator({}, async (emulator) => {
    const body = (config: Record<string, unknown>) => ({
      contents: [{ role: "user", parts: [{ text: "a hill" }] }],
      generationConfig: { responseModalities: ["TEXT", "IMAGE"], ...config }
    })
    const path = "/v1beta/models/gemini-2.5-flash-image:generateContent"
    const answer = await (await post(emulator.url, path, body({ imageConfig: { aspectRatio: "16:9" } }))).json()
    const parts = answer.candidates[0].content.parts
    strictEqual(parts[1].inlineData.mimeType, "image/png")
    ok(parts[1].inlineData.data.startsWith("iVBOR"))
    const text = await (await post(emulator.url, "/v1beta/models/gemini-2.5-flash:generateContent", body({}))).json()
    ok(!JSON.stringify(text).includes("inlineData"))
    strictEqual((await post(emulator.url, path, body({ imageConfig: { aspectRatio: "7:5" } }))).status, 400)
    strictEqual((await post(emulator.url, path, body({ imageConfig: { imageSize: "8K" } }))).status, 400)
  })
})

Deno.test("emulator images: faults apply to the image routes", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ match: { path: "/images/" }, status: 429, times: 1 }])
    const throttled = await post(emulator.url, "/api/v3/images/generations", { model: "m", prompt: "x" })
    strictEqual(throttled.status, 429)
    await throttled.body?.cancel()
    strictEqual((await post(emulator.url, "/api/v3/images/generations", { model: "m", prompt: "x" })).status, 200)
  })
})
