/**
 * The emulator's image APIs, with deterministic images (`Png.ts`: the seed is
 * the prompt and the image's index) and the checks the real APIs make:
 *
 * - OpenAI `POST /v1/images/generations` and `POST /v1/images/edits`
 *   (platform.openai.com/docs/api-reference/images): `prompt` required;
 *   `model` default `dall-e-2`; sizes per model (dall-e-2 256/512/1024 squares,
 *   dall-e-3 1024x1024, 1792x1024, 1024x1792, GPT image 1024x1024, 1536x1024,
 *   1024x1536, auto); `n` 1–10 and only 1 on dall-e-3; `quality` per model;
 *   `style` only on dall-e-3 (`vivid` | `natural`); `background` only on GPT
 *   image models; `response_format` refused by GPT image models (they answer
 *   `b64_json` and report `usage`); edits need an `image` file (one on
 *   dall-e-2, and dall-e-3 has no edits). URLs point at `GET
 *   /_emulator/images/<seed>.png` on the emulator itself.
 * - Ark `POST /api/v3/images/generations` (docs.byteplus.com/en/docs/ModelArk/1541523):
 *   `model` and `prompt` required; `size` `1K`/`2K`/`4K` or `WxH` with 921,600
 *   to 16,777,216 pixels; `response_format` `url` | `b64_json`; `watermark` a
 *   boolean; `image` a URL or `data:image/…;base64,` URI or an array of at most
 *   14; `sequential_image_generation` `auto` (with
 *   `sequential_image_generation_options.max_images` 1–15) or `disabled`. With
 *   `auto` it makes `max_images` images, one fewer when the prompt holds the
 *   word `fewer` (so a caller is billed for what came back).
 * - Generate-content with `responseModalities` holding `IMAGE`
 *   (ai.google.dev/gemini-api/docs/image-generation) on a model whose name
 *   holds `image` (another model answers text, as `Gemini.ts` does);
 *   `imageConfig.aspectRatio` and `imageSize` checked; the answer has a text
 *   part and one `inlineData` PNG part.
 *
 * @since 0.1.0
 */
import { vendorErrorBody } from "./Faults.ts"
import { pngBase64For, seedOf } from "./Png.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { arrayOr, isObject, type JsonObject, objectOr, type RouteContext, stringOr } from "./Wire.ts"

const openAiBad = (message: string, param: string | null): Reply =>
  jsonReply(vendorErrorBody("openai", 400, message, param ?? undefined), 400)

const SIZES: Record<string, ReadonlyArray<string>> = {
  "dall-e-2": ["256x256", "512x512", "1024x1024"],
  "dall-e-3": ["1024x1024", "1792x1024", "1024x1792"],
  "gpt-image": ["1024x1024", "1536x1024", "1024x1536", "auto"]
}

const QUALITIES: Record<string, ReadonlyArray<string>> = {
  "dall-e-2": ["standard"],
  "dall-e-3": ["standard", "hd"],
  "gpt-image": ["low", "medium", "high", "auto"]
}

/** The OpenAI image model kind of `model`, or `undefined` for a model OpenAI does not have. */
const openAiKind = (model: string): string | undefined =>
  model === "dall-e-2" || model === "dall-e-3" ? model : model.startsWith("gpt-image-") ? "gpt-image" : undefined

/** The seed text of image `index` of a prompt. */
const seedText = (prompt: string, index: number): string => `${index}:${prompt}`

/** The emulator's own URL for the image of `seed` (served by `GET /_emulator/images/<seed>.png`). */
const imageUrl = (context: RouteContext, seed: number): string =>
  `http://${context.headers.get("host") ?? "127.0.0.1"}/_emulator/images/${seed.toString(16)}.png`

/** A form field the emulator parsed from multipart: text as is, a file as `{filename, type, size}`. */
const isFile = (value: unknown): value is JsonObject => isObject(value) && typeof value.filename === "string"

/** A form's text field as a number (`"2"` → 2), a JSON number as is. */
const numeric = (value: unknown): unknown => typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value

/** Checks and answers an OpenAI generation (`edit` false) or edit. */
const openAiImages = (context: RouteContext, edit: boolean): Reply => {
  const body = context.body
  const model = stringOr(body.model) ?? "dall-e-2"
  const kind = openAiKind(model)
  if (kind === undefined) return openAiBad(`Invalid model ${model}. The model must be an image model.`, "model")
  const prompt = body.prompt
  if (typeof prompt !== "string" || prompt.length === 0) {
    return openAiBad("Missing required parameter: 'prompt'.", "prompt")
  }
  const n = numeric(body.n) ?? 1
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 10) {
    return openAiBad(`Invalid 'n': integer between 1 and 10 expected, got ${JSON.stringify(n)}.`, "n")
  }
  if (kind === "dall-e-3" && n !== 1) {
    return openAiBad("Invalid 'n': only n=1 is supported for dall-e-3.", "n")
  }
  const size = body.size
  if (size !== undefined && !SIZES[kind].includes(String(size))) {
    return openAiBad(
      `Invalid value: '${String(size)}'. Supported values are: ${SIZES[kind].map((s) => `'${s}'`).join(", ")}.`,
      "size"
    )
  }
  const quality = body.quality
  if (quality !== undefined && !QUALITIES[kind].includes(String(quality))) {
    return openAiBad(
      `Invalid value: '${String(quality)}'. Supported values are: ${QUALITIES[kind].join(", ")}.`,
      "quality"
    )
  }
  if (body.style !== undefined) {
    if (kind !== "dall-e-3") return openAiBad("Unknown parameter: 'style'.", "style")
    if (body.style !== "vivid" && body.style !== "natural") {
      return openAiBad(`Invalid value: '${String(body.style)}'. Supported values are: 'vivid' and 'natural'.`, "style")
    }
  }
  if (body.background !== undefined && kind !== "gpt-image") {
    return openAiBad("Unknown parameter: 'background'.", "background")
  }
  const format = body.response_format
  if (format !== undefined) {
    if (kind === "gpt-image") return openAiBad("Unknown parameter: 'response_format'.", "response_format")
    if (format !== "url" && format !== "b64_json") {
      return openAiBad(
        `Invalid value: '${String(format)}'. Supported values are: 'url' and 'b64_json'.`,
        "response_format"
      )
    }
  }
  if (edit) {
    if (kind === "dall-e-3") return openAiBad("Invalid model dall-e-3: edits are not supported.", "model")
    const images = [...arrayOr(body.image), ...arrayOr(body["image[]"])].concat(isFile(body.image) ? [body.image] : [])
    if (images.length === 0 || !images.every(isFile)) {
      return openAiBad("Missing required parameter: 'image'. Upload an image file.", "image")
    }
    if (kind === "dall-e-2" && images.length > 1) return openAiBad("dall-e-2 edits take one image.", "image")
    if (body.mask !== undefined && !isFile(body.mask)) return openAiBad("'mask' must be a file.", "mask")
  }
  const b64 = kind === "gpt-image" || format === "b64_json"
  const data = Array.from({ length: n }, (_, index) => {
    const seed = seedOf(seedText(prompt, index))
    const revised = kind === "dall-e-3" ? { revised_prompt: `A picture of: ${prompt}` } : {}
    return b64 ? { b64_json: pngBase64For(seed), ...revised } : { url: imageUrl(context, seed), ...revised }
  })
  const usage = kind === "gpt-image"
    ? {
      usage: {
        input_tokens: Math.ceil(prompt.length / 4),
        output_tokens: 272 * n,
        total_tokens: Math.ceil(prompt.length / 4) + 272 * n,
        input_tokens_details: { text_tokens: Math.ceil(prompt.length / 4), image_tokens: 0 }
      }
    }
    : {}
  return jsonReply({ created: context.created, data, ...usage })
}

/** `POST /v1/images/generations`. @category routes */
export const openAiImageGenerations = (context: RouteContext): Reply => openAiImages(context, false)

/** `POST /v1/images/edits` (multipart; the emulator parsed the form into the body). @category routes */
export const openAiImageEdits = (context: RouteContext): Reply => openAiImages(context, true)

const arkBad = (message: string, param: string): Reply =>
  jsonReply({ error: { code: "InvalidParameter", message, param, type: "BadRequest" } }, 400)

/** Ark's size rule: a tier, or `WxH` within its pixel and ratio bounds. */
const arkSizeOk = (size: string): boolean => {
  if (size === "1K" || size === "2K" || size === "4K") return true
  const match = /^(\d+)x(\d+)$/.exec(size)
  if (match === null) return false
  const width = Number(match[1])
  const height = Number(match[2])
  const pixels = width * height
  return pixels >= 921_600 && pixels <= 16_777_216 && width / height <= 16 && height / width <= 16
}

/** `POST /api/v3/images/generations` (Ark). @category routes */
export const arkImageGenerations = (context: RouteContext): Reply => {
  const body = context.body
  if (typeof body.model !== "string" || body.model.length === 0) {
    return arkBad("The parameter `model` specified in the request is not valid.", "model")
  }
  const prompt = body.prompt
  if (typeof prompt !== "string" || prompt.length === 0) {
    return arkBad("The parameter `prompt` specified in the request is not valid.", "prompt")
  }
  if (body.size !== undefined && (typeof body.size !== "string" || !arkSizeOk(body.size))) {
    return arkBad(`The parameter \`size\` specified in the request is not valid: ${String(body.size)}.`, "size")
  }
  const format = body.response_format ?? "url"
  if (format !== "url" && format !== "b64_json") {
    return arkBad("The parameter `response_format` specified in the request is not valid.", "response_format")
  }
  if (body.watermark !== undefined && typeof body.watermark !== "boolean") {
    return arkBad("The parameter `watermark` specified in the request is not valid.", "watermark")
  }
  const images = body.image === undefined ? [] : Array.isArray(body.image) ? body.image : [body.image]
  if (
    images.length > 14 ||
    !images.every((image) => typeof image === "string" && /^(https?:\/\/|data:image\/[\w.+-]+;base64,)/.test(image))
  ) {
    return arkBad("The parameter `image` specified in the request is not valid.", "image")
  }
  const sequential = body.sequential_image_generation ?? "disabled"
  if (sequential !== "auto" && sequential !== "disabled") {
    return arkBad(
      "The parameter `sequential_image_generation` specified in the request is not valid.",
      "sequential_image_generation"
    )
  }
  const most = objectOr(body.sequential_image_generation_options).max_images ?? 15
  if (typeof most !== "number" || !Number.isInteger(most) || most < 1 || most > 15) {
    return arkBad("The parameter `sequential_image_generation_options.max_images` is not valid.", "max_images")
  }
  const count = sequential === "auto" ? Math.max(1, /\bfewer\b/.test(prompt) ? most - 1 : most) : 1
  const size = typeof body.size === "string" && body.size.includes("x") ? body.size : "2048x2048"
  const data = Array.from({ length: count }, (_, index) => {
    const seed = seedOf(seedText(prompt, index))
    return format === "b64_json" ? { b64_json: pngBase64For(seed), size } : { url: imageUrl(context, seed), size }
  })
  return jsonReply({
    model: body.model,
    created: context.created,
    data,
    usage: { generated_images: count, output_tokens: 16384 * count, total_tokens: 16384 * count }
  })
}

const GEMINI_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"]

const geminiBad = (message: string): Reply =>
  jsonReply({ error: { code: 400, message, status: "INVALID_ARGUMENT" } }, 400)

/**
 * A generate-content request asking for image output: the checks, then one
 * image from the text of the request's parts (images given as input change
 * the seed too). `config` is its `generationConfig`.
 *
 * @category routes
 */
export const geminiImageAnswer = (context: RouteContext, config: JsonObject): Reply => {
  const imageConfig = objectOr(config.imageConfig ?? config.image_config)
  const ratio = imageConfig.aspectRatio ?? imageConfig.aspect_ratio
  if (ratio !== undefined && !GEMINI_RATIOS.includes(String(ratio))) {
    return geminiBad(
      `* GenerateContentRequest.generation_config.image_config.aspect_ratio: invalid value ${String(ratio)}`
    )
  }
  const imageSize = imageConfig.imageSize ?? imageConfig.image_size
  if (imageSize !== undefined && imageSize !== "1K" && imageSize !== "2K" && imageSize !== "4K") {
    return geminiBad(
      `* GenerateContentRequest.generation_config.image_config.image_size: invalid value ${String(imageSize)}`
    )
  }
  const texts: Array<string> = []
  for (const content of arrayOr(context.body.contents)) {
    for (const part of arrayOr(objectOr(content).parts)) {
      const object = objectOr(part)
      if (typeof object.text === "string") texts.push(object.text)
      const inline = objectOr(object.inlineData ?? object.inline_data)
      if (typeof inline.data === "string") texts.push(`#${inline.data.length}`)
    }
  }
  const prompt = texts.join("\n")
  const data = pngBase64For(seedOf(seedText(prompt, 0)))
  const promptTokens = Math.ceil(prompt.length / 4)
  return jsonReply({
    candidates: [{
      content: {
        role: "model",
        parts: [{ text: "Here is your image." }, { inlineData: { mimeType: "image/png", data } }]
      },
      finishReason: "STOP",
      index: 0
    }],
    usageMetadata: { promptTokenCount: promptTokens, candidatesTokenCount: 1295, totalTokenCount: promptTokens + 1295 },
    modelVersion: context.model,
    responseId: context.ids.next("resp-")
  })
}
