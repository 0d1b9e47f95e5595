/**
 * Every image validation rule (spec "Endpoints: Images" and "Limits"), one
 * step each, through raw HTTP: status 400, the gateway envelope, code
 * `invalid_request` and `param` naming the field; the rules that change what
 * is sent (defaults, presets, pass-through fields) checked on the body the
 * emulator received. Hostile strings (NUL, lone surrogates, a megabyte
 * prompt, broken bodies) get clear errors and cost nothing.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { pngFor, seedOf } from "../../emulator/Png.ts"
import { lastBodyTo } from "../support/EveryChannelType.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"
import { expectedCost, IMAGE_KEY, imageConfig, usageOf } from "../support/ImageGateway.ts"

const post = async (gateway: TestGateway, body: unknown, path = "/v1/images/generations") => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${IMAGE_KEY}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })
  return { status: response.status, json: await response.json() }
}

const postForm = async (gateway: TestGateway, form: FormData) => {
  const response = await fetch(`${gateway.url}/v1/images/edits`, {
    method: "POST",
    headers: { authorization: `Bearer ${IMAGE_KEY}` },
    body: form
  })
  return { status: response.status, json: await response.json() }
}

/** A 400 in the gateway envelope naming `param`. */
const assertInvalid = (answer: { status: number; json: unknown }, param: string): void => {
  strictEqual(answer.status, 400, JSON.stringify(answer.json))
  const error = (answer.json as { error: Record<string, unknown> }).error
  deepStrictEqual(Object.keys(error).sort(), ["code", "message", "param", "type"])
  strictEqual(error.type, "invalid_request_error")
  strictEqual(error.code, "invalid_request")
  strictEqual(error.param, param)
  ok(typeof error.message === "string" && error.message.length > 0)
}

const png = () => new File([pngFor(seedOf("edit input"))], "in.png", { type: "image/png" })

Deno.test("image validation: every rule a 400 naming its field", async (t) => {
  const gateway = await startGateway({ config: imageConfig })
  const before = await usageOf(gateway)
  // What the accepted requests should have cost, added up as they are made.
  let billed = 0
  const ok200 = async (body: Record<string, unknown>, path = "/api/v3/images/generations") => {
    const answer = await post(gateway, body)
    strictEqual(answer.status, 200, JSON.stringify(answer.json))
    billed += expectedCost(String(body.model), answer.json.data.length)
    return { answer: answer.json, sent: lastBodyTo(gateway, path) }
  }
  try {
    await t.step("model is required", async () => assertInvalid(await post(gateway, { prompt: "x" }), "model"))
    await t.step("prompt is required", async () => assertInvalid(await post(gateway, { model: "dall-e-2" }), "prompt"))
    await t.step(
      "a blank prompt is refused",
      async () => assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "   " }), "prompt")
    )
    await t.step(
      "prompt must be a string",
      async () => assertInvalid(await post(gateway, { model: "dall-e-2", prompt: ["a"] }), "prompt")
    )

    await t.step("n absent is 1", async () => {
      const { answer, sent } = await ok200({ model: "dall-e-2", prompt: "one" }, "/v1/images/generations")
      strictEqual(sent.n, 1)
      strictEqual(answer.data.length, 1)
    })
    await t.step("n = 0 is 1", async () => {
      const { answer, sent } = await ok200({ model: "dall-e-2", prompt: "zero", n: 0 }, "/v1/images/generations")
      strictEqual(sent.n, 1)
      strictEqual(answer.data.length, 1)
    })
    await t.step("n must be a whole number from 1", async () => {
      assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x", n: -1 }), "n")
      assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x", n: 1.5 }), "n")
      assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x", n: "2" }), "n")
    })
    await t.step(
      "n at most 10",
      async () => assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x", n: 11 }), "n")
    )
    await t.step(
      "dall-e-3 makes one image per request",
      async () => assertInvalid(await post(gateway, { model: "dall-e-3", prompt: "x", n: 2 }), "n")
    )

    await t.step(
      "response_format is url, b64_json or base64",
      async () =>
        assertInvalid(
          await post(gateway, { model: "dall-e-2", prompt: "x", response_format: "png" }),
          "response_format"
        )
    )
    await t.step("response_format base64 returns Base64", async () => {
      const { answer, sent } = await ok200(
        { model: "dall-e-2", prompt: "b", response_format: "base64" },
        "/v1/images/generations"
      )
      strictEqual(sent.response_format, "b64_json")
      ok(answer.data[0].b64_json.startsWith("iVBOR"))
    })

    await t.step("dall-e-2 sizes: 256x256, 512x512, 1024x1024", async () => {
      assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x", size: "1792x1024" }), "size")
      const { sent } = await ok200({ model: "dall-e-2", prompt: "s", size: "512x512" }, "/v1/images/generations")
      strictEqual(sent.size, "512x512")
    })
    await t.step("dall-e-3 sizes: 1024x1024, 1024x1792, 1792x1024", async () => {
      assertInvalid(await post(gateway, { model: "dall-e-3", prompt: "x", size: "512x512" }), "size")
      const { sent } = await ok200({ model: "dall-e-3", prompt: "s", size: "1024x1792" }, "/v1/images/generations")
      strictEqual(sent.size, "1024x1792")
    })
    await t.step(
      "gpt-image sizes",
      async () => assertInvalid(await post(gateway, { model: "gpt-image-1", prompt: "x", size: "256x256" }), "size")
    )

    await t.step("dall-e-3 quality defaults to standard; standard or hd", async () => {
      const { sent } = await ok200({ model: "dall-e-3", prompt: "q" }, "/v1/images/generations")
      strictEqual(sent.quality, "standard")
      assertInvalid(await post(gateway, { model: "dall-e-3", prompt: "x", quality: "ultra" }), "quality")
    })
    await t.step("gpt-image quality defaults to auto; low, medium, high or auto", async () => {
      const { sent } = await ok200({ model: "gpt-image-1", prompt: "q" }, "/v1/images/generations")
      strictEqual(sent.quality, "auto")
      assertInvalid(await post(gateway, { model: "gpt-image-1", prompt: "x", quality: "hd" }), "quality")
    })
    await t.step(
      "dall-e-2 quality is standard only",
      async () => assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x", quality: "hd" }), "quality")
    )
    await t.step("flare quality: low, medium, high, xhigh, max, auto", async () => {
      for (const quality of ["low", "medium", "high", "xhigh", "max", "auto"]) {
        await ok200({ model: "seedream", prompt: "q", quality })
      }
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", quality: "ultra" }), "quality")
    })

    await t.step("flare sizes: base-tier ratio presets sent as their actual size", async () => {
      const expected: Record<string, string> = {
        "1:1": "1024x1024",
        "4:3": "1536x1152",
        "3:2": "1536x1024",
        "2:3": "1024x1536",
        "16:9": "1920x1080",
        "9:16": "1080x1920"
      }
      for (const [preset, size] of Object.entries(expected)) {
        strictEqual((await ok200({ model: "seedream", prompt: "p", size: preset })).sent.size, size)
      }
    })
    await t.step("flare sizes: 2K and 4K tiers (1:1) and the table's sizes", async () => {
      strictEqual((await ok200({ model: "seedream", prompt: "p", size: "2K" })).sent.size, "2048x2048")
      strictEqual((await ok200({ model: "seedream", prompt: "p", size: "4K" })).sent.size, "2880x2880")
      strictEqual((await ok200({ model: "seedream", prompt: "p", size: "2560x1712" })).sent.size, "2560x1712")
      strictEqual((await ok200({ model: "seedream", prompt: "p", size: "3840x2160" })).sent.size, "3840x2160")
    })
    await t.step("flare sizes: anything else is refused, <ratio>(2K) included", async () => {
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", size: "1000x1000" }), "size")
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", size: "16:9(2K)" }), "size")
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", size: "5:4" }), "size")
    })
    await t.step("pro image sizes: <ratio>(2K) and <ratio>(4K) presets", async () => {
      strictEqual((await ok200({ model: "seedream-pro", prompt: "p", size: "3:2(4K)" })).sent.size, "3840x2560")
      strictEqual((await ok200({ model: "seedream-pro", prompt: "p", size: "9:16(2K)" })).sent.size, "1152x2048")
      assertInvalid(await post(gateway, { model: "seedream-pro", prompt: "x", size: "5:4(2K)" }), "size")
    })

    await t.step("watermark is a boolean, passed to Ark", async () => {
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", watermark: "no" }), "watermark")
      strictEqual((await ok200({ model: "seedream", prompt: "w", watermark: true })).sent.watermark, true)
    })
    await t.step("style is a string or an object, passed to dall-e-3", async () => {
      assertInvalid(await post(gateway, { model: "dall-e-3", prompt: "x", style: 3 }), "style")
      const { sent } = await ok200({ model: "dall-e-3", prompt: "st", style: "natural" }, "/v1/images/generations")
      strictEqual(sent.style, "natural")
    })
    await t.step("background is a string or an object, passed to GPT image models", async () => {
      assertInvalid(await post(gateway, { model: "gpt-image-1", prompt: "x", background: ["a"] }), "background")
      const { sent } = await ok200(
        { model: "gpt-image-1", prompt: "bg", background: "opaque" },
        "/v1/images/generations"
      )
      strictEqual(sent.background, "opaque")
    })
    await t.step("image is a string, an array of strings or an object, passed to Ark as references", async () => {
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", image: 7 }), "image")
      assertInvalid(await post(gateway, { model: "seedream", prompt: "x", image: [1] }), "image")
      const url = "https://example.com/ref.png"
      strictEqual((await ok200({ model: "seedream", prompt: "i", image: url })).sent.image, url)
      deepStrictEqual((await ok200({ model: "seedream", prompt: "i", image: [url, url] })).sent.image, [url, url])
      strictEqual((await ok200({ model: "seedream", prompt: "i", image: { url } })).sent.image, url)
    })

    await t.step("edits: an image file is required", async () => {
      const form = new FormData()
      form.append("model", "gpt-image-1")
      form.append("prompt", "x")
      assertInvalid(await postForm(gateway, form), "image")
    })
    await t.step("edits: image must be a file, not text", async () => {
      const form = new FormData()
      form.append("model", "gpt-image-1")
      form.append("prompt", "x")
      form.append("image", "https://example.com/a.png")
      assertInvalid(await postForm(gateway, form), "image")
    })
    await t.step("edits: dall-e-3 cannot edit", async () => {
      const form = new FormData()
      form.append("model", "dall-e-3")
      form.append("prompt", "x")
      form.append("image", png())
      assertInvalid(await postForm(gateway, form), "model")
    })
    await t.step("edits: dall-e-2 edits one image", async () => {
      const form = new FormData()
      form.append("model", "dall-e-2")
      form.append("prompt", "x")
      form.append("image[]", png())
      form.append("image[]", png())
      assertInvalid(await postForm(gateway, form), "image")
    })
    await t.step("edits: n in a form follows the same rules", async () => {
      const form = new FormData()
      form.append("model", "dall-e-2")
      form.append("prompt", "x")
      form.append("n", "11")
      form.append("image", png())
      assertInvalid(await postForm(gateway, form), "n")
    })
    await t.step(
      "edits: a JSON body is refused",
      async () => assertInvalid(await post(gateway, { model: "gpt-image-1", prompt: "x" }, "/v1/images/edits"), "")
    )

    await t.step("only the accepted requests were charged, nothing for a refused one", async () => {
      strictEqual((await usageOf(gateway)).used - before.used, billed)
      const logs = gateway.logs.join("\n")
      ok(!logs.includes("sk-test-up-"), "no upstream key in the logs")
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("image validation: hostile strings get clear errors and cost nothing", async (t) => {
  const gateway = await startGateway({ config: imageConfig })
  const before = await usageOf(gateway)
  try {
    await t.step(
      "NUL in the prompt",
      async () => assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "a\u0000b" }), "prompt")
    )
    await t.step(
      "a lone surrogate in the prompt",
      async () => assertInvalid(await post(gateway, '{"model": "dall-e-2", "prompt": "a \\ud800 b"}'), "prompt")
    )
    await t.step(
      "a lone surrogate in the model name",
      async () => assertInvalid(await post(gateway, '{"model": "x\\udc00", "prompt": "a"}'), "model")
    )
    await t.step("a megabyte prompt", async () => {
      const answer = await post(gateway, { model: "gpt-image-1", prompt: "word ".repeat(200_000) })
      assertInvalid(answer, "prompt")
      ok(String(answer.json.error.message).length < 200)
    })
    await t.step(
      "a prompt over the family's limit (dall-e-2: 1000 characters)",
      async () => assertInvalid(await post(gateway, { model: "dall-e-2", prompt: "x".repeat(1001) }), "prompt")
    )
    await t.step("a body that is not JSON, or not an object", async () => {
      assertInvalid(await post(gateway, "{not json"), "")
      assertInvalid(await post(gateway, "[1, 2]"), "")
    })
    await t.step("a hostile size is quoted short and escaped", async () => {
      const answer = await post(gateway, { model: "dall-e-2", prompt: "x", size: "\u0007".repeat(5000) })
      assertInvalid(answer, "size")
      ok(String(answer.json.error.message).length < 300)
    })
    await t.step("an unknown key is a 401 in the gateway envelope", async () => {
      const response = await fetch(`${gateway.url}/v1/images/generations`, {
        method: "POST",
        headers: { authorization: "Bearer sk-test-nobody-00000", "content-type": "application/json" },
        body: JSON.stringify({ model: "dall-e-2", prompt: "x" })
      })
      strictEqual(response.status, 401)
      strictEqual((await response.json()).error.code, "invalid_api_key")
    })
    await t.step("nothing was charged and the gateway still answers", async () => {
      strictEqual((await usageOf(gateway)).used, before.used)
      strictEqual(await fetch(`${gateway.url}/healthz`).then(async (r) => (await r.body?.cancel(), r.status)), 200)
    })
  } finally {
    await gateway.close()
  }
})
