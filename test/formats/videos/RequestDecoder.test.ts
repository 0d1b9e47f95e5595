/**
 * `decodeVideoRequest` against the validation table (every rule: status,
 * envelope, code, param; and the body the route would render), accepted
 * bodies decoded to the exact canonical `VideoRequest`, and
 * `videoFormFields` on the multipart body the official `openai` SDK's
 * `videos.create` really sends.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Result } from "effect"
import OpenAI, { toFile } from "openai"
import type { VideoRequest } from "../../../src/canonical/Video.ts"
import type { Decoded } from "../../../src/formats/shared/Decoded.ts"
import { defaultVideoFamily, videoErrorEnvelope, type VideoFamily } from "../../../src/formats/videos/VideoFamilies.ts"
import { toProblem } from "../../../src/errors/Envelope.ts"
import type { InvalidRequest } from "../../../src/errors/GatewayError.ts"
import { encodeVideoError } from "../../../src/formats/videos/ErrorBody.ts"
import { decodeVideoRequest, type VideoRoute } from "../../../src/formats/videos/RequestDecoder.ts"
import { videoFormFields } from "../../../src/formats/videos/VideoForm.ts"
import { ASSET_URI, decoderRoute, IMAGE_URL, PNG_DATA_URI, VIDEO_RULES } from "../../support/VideoRules.ts"

/** The family a route would pick: the default for the body's model name (none without a model). */
const familyOf = (body: unknown): VideoFamily | undefined => {
  const model = typeof body === "object" && body !== null ? (body as Record<string, unknown>).model : undefined
  return typeof model === "string" && model.length > 0 ? defaultVideoFamily(model) : undefined
}

const decoded = (body: unknown, route: VideoRoute): Decoded<VideoRequest> =>
  decodeVideoRequest(body as Record<string, unknown>, familyOf(body), route)

const accepted = (body: Record<string, unknown>, route: VideoRoute): VideoRequest => {
  const result = decoded(body, route)
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message} (${result.failure.param})`)
  return result.success
}

const refused = (body: unknown, route: VideoRoute): InvalidRequest => {
  const result = decoded(body, route)
  if (Result.isSuccess(result)) throw new Error(`accepted: ${JSON.stringify(result.success).slice(0, 200)}`)
  return result.failure
}

Deno.test("the validation table has a row for every route and both envelopes, names unique", () => {
  const names = new Set(VIDEO_RULES.map((rule) => rule.name))
  strictEqual(names.size, VIDEO_RULES.length)
  for (const route of ["POST /v1/videos", "POST /v1/video/generations", "POST /v1/videos/{id}/remix"]) {
    ok(VIDEO_RULES.some((rule) => rule.route === route), route)
  }
  ok(VIDEO_RULES.some((rule) => rule.envelope === "flat"))
  ok(VIDEO_RULES.some((rule) => rule.code === "invalid_request_error"))
})

for (const rule of VIDEO_RULES) {
  Deno.test(`rule: ${rule.route}: ${rule.name} → ${rule.status} ${rule.envelope} ${rule.code} param=${rule.param}`, () => {
    const route = decoderRoute(rule.route)
    const error = refused(rule.body, route)
    strictEqual(error._tag, "InvalidRequest")
    strictEqual(error.param ?? "", rule.param, error.message)
    const problem = toProblem(error)
    strictEqual(problem.status, rule.status)
    strictEqual(problem.code, rule.code)
    strictEqual(videoErrorEnvelope(familyOf(rule.body), route), rule.envelope)
    const body = encodeVideoError(rule.envelope)(problem) as Record<string, unknown>
    if (rule.envelope === "flat") {
      deepStrictEqual(Object.keys(body).sort(), ["code", "message"])
      strictEqual(body.code, rule.code)
    } else {
      deepStrictEqual(body, {
        error: { message: problem.message, type: "invalid_request_error", param: rule.param, code: rule.code }
      })
    }
    // The message is short, well-formed text: no megabyte echo, no NUL, no lone surrogate.
    ok(problem.message.length < 300, problem.message.slice(0, 80))
    ok(problem.message.isWellFormed() && !problem.message.includes("\u0000"))
  })
}

Deno.test("accepted: the OpenAI-style create body (seconds as the SDK's string, task_id and video_id ignored)", () => {
  deepStrictEqual(
    accepted({
      model: "sora-2",
      prompt: "a red kite",
      seconds: "8",
      size: "1280x720",
      metadata: { style: "noir" },
      task_id: "ignored",
      video_id: 17
    }, "videos"),
    { model: "sora-2", prompt: "a red kite", seconds: 8, size: "1280x720", metadata: { style: "noir" }, references: [] }
  )
  deepStrictEqual(accepted({ model: "sora-2", prompt: "a red kite", size: "16:9" }, "videos"), {
    model: "sora-2",
    prompt: "a red kite",
    aspectRatio: "16:9",
    references: []
  })
  deepStrictEqual(
    accepted({ model: "sora-2", prompt: "a red kite", input_reference: { image_url: PNG_DATA_URI } }, "videos")
      .references,
    [{ kind: "image", role: "first_frame", ref: PNG_DATA_URI, param: "input_reference" }]
  )
  deepStrictEqual(accepted({ model: "sora-2", prompt: "a red kite", image: ASSET_URI }, "videos").references, [
    { kind: "image", role: "first_frame", ref: ASSET_URI, param: "image" }
  ])
})

Deno.test("accepted: a first-family body with every media field", () => {
  const body = {
    model: "videoa-2-0-fast-260128",
    prompt: "a lighthouse at dusk",
    duration: 10,
    seconds: "5",
    aspect_ratio: "21:9",
    size: "1920x816",
    resolution: "1080P",
    watermark: false,
    generate_audio: true,
    first_image: IMAGE_URL,
    last_image: ASSET_URI,
    reference_image_urls: ["https://media.example.com/r1.png"],
    reference_video_url: "https://media.example.com/v1.mp4",
    reference_video_urls: ["https://media.example.com/v2.mp4"],
    reference_audios: ["https://media.example.com/a1.mp3"],
    reference_audio_urls: ["https://media.example.com/a2.mp3"],
    audio_url: "https://media.example.com/a3.mp3",
    unknown_field: "ignored"
  }
  const expected: VideoRequest = {
    model: "videoa-2-0-fast-260128",
    prompt: "a lighthouse at dusk",
    seconds: 10,
    size: "1920x816",
    aspectRatio: "21:9",
    resolution: "1080p",
    watermark: false,
    generateAudio: true,
    references: [
      { kind: "image", role: "first_frame", ref: IMAGE_URL, param: "first_image" },
      { kind: "image", role: "last_frame", ref: ASSET_URI, param: "last_image" },
      {
        kind: "image",
        role: "reference_image",
        ref: "https://media.example.com/r1.png",
        param: "reference_image_urls[0]"
      },
      {
        kind: "video",
        role: "reference_video",
        ref: "https://media.example.com/v1.mp4",
        param: "reference_video_url"
      },
      {
        kind: "video",
        role: "reference_video",
        ref: "https://media.example.com/v2.mp4",
        param: "reference_video_urls[0]"
      },
      {
        kind: "audio",
        role: "reference_audio",
        ref: "https://media.example.com/a1.mp3",
        param: "reference_audios[0]"
      },
      {
        kind: "audio",
        role: "reference_audio",
        ref: "https://media.example.com/a2.mp3",
        param: "reference_audio_urls[0]"
      },
      { kind: "audio", role: "reference_audio", ref: "https://media.example.com/a3.mp3", param: "audio_url" }
    ]
  }
  deepStrictEqual(accepted(body, "videos"), expected)
  // Text-to-video: model, prompt, duration, aspect_ratio only.
  deepStrictEqual(
    accepted({ model: "videoa-2-0-260128", prompt: "waves", duration: 5, aspect_ratio: "9:16" }, "videos"),
    { model: "videoa-2-0-260128", prompt: "waves", seconds: 5, aspectRatio: "9:16", references: [] }
  )
})

Deno.test("accepted: a mini-2.0 body (480P in any case, up to 9 images)", () => {
  const images = Array.from({ length: 9 }, (_, index) => `https://media.example.com/${index}.jpg`)
  deepStrictEqual(
    accepted(
      { model: "mini-2.0", prompt: "a paper boat", duration: 15, ratio: "9:16", resolution: "480P", images },
      "videos"
    ),
    {
      model: "mini-2.0",
      prompt: "a paper boat",
      seconds: 15,
      aspectRatio: "9:16",
      resolution: "480p",
      references: images.map((ref, index) => ({
        kind: "image",
        role: "reference_image",
        ref,
        param: `images[${index}]`
      }))
    }
  )
  strictEqual(
    accepted({ model: "mini-2.0", prompt: "b", duration: "4", ratio: "16:9", resolution: "480p" }, "videos").seconds,
    4
  )
})

Deno.test("accepted: the unified body (duration wins over seconds; size as WxH or ratio; Base64 image)", () => {
  const png = PNG_DATA_URI.slice("data:image/png;base64,".length)
  deepStrictEqual(
    accepted({
      model: "sora-2",
      prompt: "a red kite",
      duration: 6,
      seconds: "10",
      size: "16:9",
      image: png,
      images: [IMAGE_URL],
      input_reference: ASSET_URI,
      metadata: { negative_prompt: "rain" }
    }, "unified"),
    {
      model: "sora-2",
      prompt: "a red kite",
      seconds: 6,
      aspectRatio: "16:9",
      metadata: { negative_prompt: "rain" },
      references: [
        { kind: "image", role: "first_frame", ref: PNG_DATA_URI, param: "image" },
        { kind: "image", role: "reference_image", ref: IMAGE_URL, param: "images[0]" },
        { kind: "image", role: "reference_image", ref: ASSET_URI, param: "input_reference" }
      ]
    }
  )
  deepStrictEqual(accepted({ model: "sora-2", seconds: "10", size: "720x1280", image: IMAGE_URL }, "unified"), {
    model: "sora-2",
    prompt: "",
    seconds: 10,
    size: "720x1280",
    references: [{ kind: "image", role: "first_frame", ref: IMAGE_URL, param: "image" }]
  })
  deepStrictEqual(accepted({ model: "mini-2.0", prompt: "boat", duration: 8, size: "9:16" }, "unified"), {
    model: "mini-2.0",
    prompt: "boat",
    seconds: 8,
    aspectRatio: "9:16",
    resolution: "480p",
    references: []
  })
  deepStrictEqual(accepted({ model: "videoa-2-0-260128", prompt: "waves", size: "4:3" }, "unified"), {
    model: "videoa-2-0-260128",
    prompt: "waves",
    aspectRatio: "4:3",
    references: []
  })
})

Deno.test("accepted: a remix body (model, prompt, seconds, size, image, metadata)", () => {
  deepStrictEqual(
    accepted({ model: "sora-2", prompt: "make it night", seconds: "4", size: "720x1280", image: IMAGE_URL }, "remix"),
    {
      model: "sora-2",
      prompt: "make it night",
      seconds: 4,
      size: "720x1280",
      references: [{ kind: "image", role: "first_frame", ref: IMAGE_URL, param: "image" }]
    }
  )
})

Deno.test("a bootstrap family overrides the name: a videoa-named model under the generic rules takes a ratio size", () => {
  const body = { model: "videoa-custom", prompt: "x", size: "16:9" }
  strictEqual(Result.isSuccess(decodeVideoRequest(body, "videoa", "videos")), false)
  strictEqual(Result.isSuccess(decodeVideoRequest(body, "openai-video", "videos")), true)
})

Deno.test("hostile: random values in every field never throw and never echo megabytes", () => {
  const values: ReadonlyArray<unknown> = [
    null,
    true,
    0,
    -1,
    1e308,
    Number.NaN,
    "",
    "\u0000",
    "\uD800",
    "x".repeat(100_000),
    [],
    [null],
    [[IMAGE_URL]],
    {},
    { __proto__: { polluted: true } },
    PNG_DATA_URI,
    ASSET_URI,
    IMAGE_URL
  ]
  const fields = [
    "model",
    "prompt",
    "duration",
    "seconds",
    "size",
    "aspect_ratio",
    "ratio",
    "resolution",
    "watermark",
    "generate_audio",
    "first_image",
    "last_image",
    "image",
    "images",
    "input_reference",
    "reference_image_urls",
    "reference_video_url",
    "reference_audios",
    "audio_url",
    "metadata"
  ]
  for (const model of ["sora-2", "videoa-2-0-260128", "mini-2.0"]) {
    for (const route of ["videos", "remix", "unified"] as const) {
      for (const field of fields) {
        for (const value of values) {
          const result = decoded(
            { model, prompt: "p", duration: 5, ratio: "16:9", resolution: "480p", [field]: value },
            route
          )
          if (Result.isFailure(result)) ok(result.failure.message.length < 300)
        }
      }
    }
  }
  ok(({} as Record<string, unknown>).polluted === undefined)
})

/** Sends `params` through the official SDK's `videos.create` and returns the multipart body it posted. */
const sdkForm = async (params: OpenAI.VideoCreateParams): Promise<FormData> => {
  let captured: Request | undefined
  const client = new OpenAI({
    apiKey: "sk-test-video-form",
    baseURL: "http://127.0.0.1:9/v1",
    maxRetries: 0,
    fetch: (input: string | URL | Request, init?: RequestInit) => {
      captured = new Request(input, init)
      const video = { id: "video_1", object: "video", model: "sora-2", status: "queued", progress: 0, created_at: 1 }
      return Promise.resolve(Response.json(video))
    }
  })
  await client.videos.create(params)
  if (captured === undefined) throw new Error("the SDK sent nothing")
  ok((captured.headers.get("content-type") ?? "").startsWith("multipart/form-data"))
  return await captured.formData()
}

const PNG_BYTES = Uint8Array.from(atob(PNG_DATA_URI.slice(PNG_DATA_URI.indexOf(",") + 1)), (c) => c.charCodeAt(0))

const fieldsOf = (form: FormData, family: VideoFamily | undefined) =>
  Effect.runPromise(Effect.result(videoFormFields(form, family)))

Deno.test("videoFormFields: the SDK's videos.create form with an uploaded input_reference (generic family)", async () => {
  const form = await sdkForm({
    model: "sora-2",
    prompt: "a red kite",
    seconds: "8",
    size: "1280x720",
    input_reference: await toFile(PNG_BYTES, "frame.png", { type: "image/png" })
  })
  const result = await fieldsOf(form, "openai-video")
  if (result._tag !== "Success") throw new Error(result.failure.message)
  deepStrictEqual(result.success, {
    model: "sora-2",
    prompt: "a red kite",
    seconds: "8",
    size: "1280x720",
    input_reference: PNG_DATA_URI
  })
  deepStrictEqual(accepted(result.success, "videos"), {
    model: "sora-2",
    prompt: "a red kite",
    seconds: 8,
    size: "1280x720",
    references: [{ kind: "image", role: "first_frame", ref: PNG_DATA_URI, param: "input_reference" }]
  })
})

Deno.test("videoFormFields: the SDK's input_reference object becomes input_reference[image_url]", async () => {
  const form = await sdkForm({ model: "sora-2", prompt: "a red kite", input_reference: { image_url: IMAGE_URL } })
  const result = await fieldsOf(form, undefined)
  if (result._tag !== "Success") throw new Error(result.failure.message)
  deepStrictEqual(result.success, { model: "sora-2", prompt: "a red kite", input_reference: { image_url: IMAGE_URL } })
  deepStrictEqual(accepted(result.success, "videos").references, [
    { kind: "image", role: "first_frame", ref: IMAGE_URL, param: "input_reference" }
  ])
})

Deno.test("videoFormFields: a file for the first family or mini-2.0 is a 400 naming the field", async () => {
  for (
    const [model, family, code] of [["videoa-2-0-260128", "videoa", undefined], [
      "mini-2.0",
      "mini-2.0",
      "invalid_request_error"
    ]] as const
  ) {
    const form = await sdkForm({
      model,
      prompt: "x",
      input_reference: await toFile(PNG_BYTES, "frame.png", { type: "image/png" })
    })
    const result = await fieldsOf(form, family)
    if (result._tag !== "Failure") throw new Error("accepted an upload")
    strictEqual(result.failure.param, "input_reference")
    strictEqual(result.failure.code, code)
    strictEqual(toProblem(result.failure).status, 400)
  }
})

Deno.test("videoFormFields: wrong file types, files in text fields, oversized and hostile forms", async () => {
  const fail = async (form: FormData, family: VideoFamily | undefined, param: string) => {
    const result = await fieldsOf(form, family)
    if (result._tag !== "Failure") throw new Error(`accepted ${JSON.stringify(result.success).slice(0, 100)}`)
    strictEqual(result.failure.param, param)
  }
  const text = new FormData()
  text.append("model", "sora-2")
  text.append("input_reference", new File(["hello"], "a.txt", { type: "text/plain" }))
  await fail(text, undefined, "input_reference")

  const inPrompt = new FormData()
  inPrompt.append("model", "sora-2")
  inPrompt.append("prompt", new File([PNG_BYTES], "a.png", { type: "image/png" }))
  await fail(inPrompt, undefined, "prompt")

  const big = new FormData()
  big.append("model", "sora-2")
  big.append("input_reference", new File([new Uint8Array(8 * 1024 * 1024)], "a.png", { type: "image/png" }))
  await fail(big, undefined, "input_reference")

  const many = new FormData()
  for (let index = 0; index < 300; index++) many.append(`metadata[k${index}]`, "v")
  await fail(many, undefined, "")

  const proto = new FormData()
  proto.append("metadata[__proto__]", "x")
  await fail(proto, undefined, "metadata")

  const twice = new FormData()
  twice.append("prompt", "a")
  twice.append("prompt", "b")
  await fail(twice, undefined, "prompt")

  const odd = new FormData()
  odd.append("prompt]]", "a")
  await fail(odd, undefined, "prompt]]")

  const lists = new FormData()
  lists.append("model", "mini-2.0")
  lists.append("images[]", IMAGE_URL)
  lists.append("images[]", ASSET_URI)
  lists.append("metadata[style]", "noir")
  const result = await fieldsOf(lists, undefined)
  if (result._tag !== "Success") throw new Error(result.failure.message)
  deepStrictEqual(result.success, { model: "mini-2.0", images: [IMAGE_URL, ASSET_URI], metadata: { style: "noir" } })
})

Deno.test('media fields take a public http:// URL as well as https:// (the spec\'s "public URL"), every family', () => {
  const http = "http://media.example.com/frame.png"
  deepStrictEqual(accepted({ model: "videoa-2-0-260128", prompt: "p", first_image: http }, "videos").references, [
    { kind: "image", role: "first_frame", ref: http, param: "first_image" }
  ])
  deepStrictEqual(
    accepted(
      { model: "mini-2.0", prompt: "p", duration: 5, ratio: "16:9", resolution: "480p", images: [http] },
      "videos"
    ).references,
    [{ kind: "image", role: "reference_image", ref: http, param: "images[0]" }]
  )
  deepStrictEqual(accepted({ model: "sora-2", prompt: "p", image: http }, "unified").references, [
    { kind: "image", role: "first_frame", ref: http, param: "image" }
  ])
  for (const other of ["ftp://media.example.com/a.png", "file:///etc/passwd", "gopher://media.example.com/"]) {
    strictEqual(refused({ model: "videoa-2-0-260128", prompt: "p", first_image: other }, "videos").param, "first_image")
  }
})

Deno.test("the first family's duration: whole seconds 4 to 15 (Seedance 2.0's range), the message names them", () => {
  for (const duration of [4, 5, 15]) {
    strictEqual(accepted({ model: "videoa-2-0-260128", prompt: "p", duration }, "videos").seconds, duration)
  }
  for (const duration of [5.5, 3, 16]) {
    const error = refused({ model: "videoa-2-0-260128", prompt: "p", duration }, "videos")
    strictEqual(error.param, "duration")
    ok(error.message.includes("from 4 to 15"), error.message)
  }
  // The unified route applies the same family rule.
  strictEqual(refused({ model: "videoa-2-0-260128", prompt: "p", duration: 5.5 }, "unified").param, "duration")
  strictEqual(accepted({ model: "videoa-2-0-260128", prompt: "p", duration: 12 }, "unified").seconds, 12)
})

Deno.test("unified: each family's own fields — mini-2.0's ratio, the first family's aspect_ratio, Base64 images", () => {
  const png = PNG_DATA_URI.slice("data:image/png;base64,".length)
  deepStrictEqual(accepted({ model: "mini-2.0", prompt: "boat", duration: 8, ratio: "9:16" }, "unified"), {
    model: "mini-2.0",
    prompt: "boat",
    seconds: 8,
    aspectRatio: "9:16",
    resolution: "480p",
    references: []
  })
  strictEqual(
    accepted({ model: "mini-2.0", prompt: "boat", duration: 8, ratio: "9:16", size: "9:16" }, "unified").aspectRatio,
    "9:16"
  )
  strictEqual(
    accepted({ model: "videoa-2-0-260128", prompt: "w", aspect_ratio: "21:9" }, "unified").aspectRatio,
    "21:9"
  )
  for (const model of ["videoa-2-0-260128", "mini-2.0"]) {
    const body = { model, prompt: "p", duration: 5, size: "16:9" }
    deepStrictEqual(accepted({ ...body, image: png }, "unified").references, [
      { kind: "image", role: "first_frame", ref: PNG_DATA_URI, param: "image" }
    ])
    deepStrictEqual(accepted({ ...body, image: PNG_DATA_URI }, "unified").references[0].ref, PNG_DATA_URI)
  }
  strictEqual(
    refused({ model: "videoa-2-0-260128", prompt: "p", image: IMAGE_URL, images: [IMAGE_URL] }, "unified").param,
    "images"
  )
  // mini-2.0 keeps image and images together (all are references to it).
  strictEqual(
    accepted(
      { model: "mini-2.0", prompt: "p", duration: 5, ratio: "16:9", image: IMAGE_URL, images: [IMAGE_URL] },
      "unified"
    )
      .references.length,
    2
  )
})
