/**
 * The image routes end to end through the official `openai` SDK against the
 * emulator, on each image channel type (`openai`, `ark`, `gemini`):
 * `images.generate` with `url` and `b64_json`, `images.edit` (multipart), the
 * upstream body each vendor got, and billing checked against
 * `/api/usage/token` (ceil(ratio × images returned × per_image × 10⁶)).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI, { toFile } from "openai"
import { generateImage } from "ai"
import { createOpenAI } from "@ai-sdk/openai"
import { pngFor, seedOf } from "../../emulator/Png.ts"
import { startGateway } from "../support/Gateway.ts"
import { lastBodyTo } from "../support/EveryChannelType.ts"
import { expectedCost, IMAGE_KEY, imageClient, imageConfig, usageOf } from "../support/ImageGateway.ts"

const PNG_MAGIC = "iVBORw0KGgo"

Deno.test("images.generate and images.edit through the SDK on every image channel type", async (t) => {
  const gateway = await startGateway({ config: imageConfig })
  const client = imageClient(gateway)
  try {
    await t.step("openai: dall-e-3 url, default quality standard sent, revised prompt kept", async () => {
      const before = await usageOf(gateway)
      const result = await client.images.generate({ model: "dall-e-3", prompt: "a red fox", size: "1792x1024" })
      strictEqual(result.data?.length, 1)
      const url = result.data![0].url!
      ok(url.includes("/_emulator/images/"), url)
      strictEqual(result.data![0].revised_prompt, "A picture of: a red fox")
      const image = await fetch(url)
      strictEqual(image.headers.get("content-type"), "image/png")
      strictEqual((await image.bytes())[1], 0x50)
      const sent = lastBodyTo(gateway, "/v1/images/generations")
      deepStrictEqual(sent, {
        model: "dall-e-3",
        prompt: "a red fox",
        n: 1,
        size: "1792x1024",
        quality: "standard",
        response_format: "url"
      })
      strictEqual((await usageOf(gateway)).used - before.used, expectedCost("dall-e-3", 1))
    })

    await t.step("openai: dall-e-2 b64_json, n = 3 billed for 3", async () => {
      const before = await usageOf(gateway)
      const result = await client.images.generate({
        model: "dall-e-2",
        prompt: "a blue bird",
        n: 3,
        size: "256x256",
        response_format: "b64_json"
      })
      strictEqual(result.data?.length, 3)
      for (const item of result.data!) ok(item.b64_json!.startsWith(PNG_MAGIC))
      strictEqual((await usageOf(gateway)).used - before.used, expectedCost("dall-e-2", 3))
    })

    await t.step(
      "openai: gpt-image-1 gets no response_format; none asked → b64_json as OpenAI answers; quality default auto",
      async () => {
        const result = await client.images.generate({
          model: "gpt-image-1",
          prompt: "a lamp",
          background: "transparent"
        })
        ok(result.data![0].b64_json!.startsWith(PNG_MAGIC))
        strictEqual(result.data![0].url, undefined)
        const sent = lastBodyTo(gateway, "/v1/images/generations")
        strictEqual(sent.response_format, undefined)
        strictEqual(sent.quality, "auto")
        strictEqual(sent.background, "transparent")
        const b64 = await client.images.generate({
          model: "gpt-image-1",
          prompt: "a lamp",
          response_format: "b64_json"
        })
        ok(b64.data![0].b64_json!.startsWith(PNG_MAGIC))
        const dallE = await client.images.generate({ model: "dall-e-2", prompt: "a lamp", size: "256x256" })
        ok(dallE.data![0].url!.includes("/_emulator/images/"), "dall-e answers a url by default, as OpenAI does")
      }
    )

    await t.step("openai: the AI SDK's OpenAI image provider reads a gpt-image-1 answer", async () => {
      const provider = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: IMAGE_KEY })
      const result = await generateImage({ model: provider.image("gpt-image-1"), prompt: "a kite", maxRetries: 0 })
      strictEqual(result.images.length, 1)
      deepStrictEqual([...result.images[0].uint8Array.slice(0, 4)], [0x89, 0x50, 0x4e, 0x47])
    })

    await t.step("openai: images.edit sends the upload as a multipart form upstream", async () => {
      const png = pngFor(seedOf("input"))
      const before = await usageOf(gateway)
      const result = await client.images.edit({
        model: "gpt-image-1",
        image: await toFile(png, "input.png", { type: "image/png" }),
        prompt: "make it green",
        n: 2
      })
      strictEqual(result.data?.length, 2)
      ok(result.data![0].b64_json!.startsWith(PNG_MAGIC))
      const sent = lastBodyTo(gateway, "/v1/images/edits") as Record<string, unknown>
      strictEqual(sent.prompt, "make it green")
      strictEqual(sent.n, "2")
      deepStrictEqual(sent.image, { filename: "input.png", type: "image/png", size: png.length })
      strictEqual((await usageOf(gateway)).used - before.used, expectedCost("gpt-image-1", 2))
      const two = await client.images.edit({
        model: "gpt-image-1",
        image: [await toFile(png, "a.png", { type: "image/png" }), await toFile(png, "b.png", { type: "image/png" })],
        prompt: "merge them",
        response_format: "b64_json"
      })
      ok(two.data![0].b64_json!.startsWith(PNG_MAGIC))
      strictEqual((lastBodyTo(gateway, "/v1/images/edits")["image[]"] as Array<unknown>).length, 2)
    })

    await t.step("ark: the 2K 16:9 preset sent as its actual size, watermark off, url and b64_json", async () => {
      const before = await usageOf(gateway)
      const result = await client.images.generate({
        model: "seedream-pro",
        prompt: "a city at night",
        size: "16:9(2K)" as "1024x1024",
        // @ts-expect-error: Sluice's pass-through field
        watermark: false
      })
      ok(result.data![0].url!.includes("/_emulator/images/"))
      const sent = lastBodyTo(gateway, "/api/v3/images/generations")
      deepStrictEqual(sent, {
        model: "seedream-4-0-250828",
        prompt: "a city at night",
        response_format: "url",
        size: "2048x1152",
        watermark: false,
        sequential_image_generation: "disabled"
      })
      const b64 = await client.images.generate({ model: "seedream", prompt: "a city", response_format: "b64_json" })
      ok(b64.data![0].b64_json!.startsWith(PNG_MAGIC))
      strictEqual(
        (await usageOf(gateway)).used - before.used,
        expectedCost("seedream-pro", 1) + expectedCost("seedream", 1)
      )
    })

    await t.step("ark: n = 3 asks for a group of 3; billed for the 2 the upstream returned", async () => {
      const before = await usageOf(gateway)
      const result = await client.images.generate({ model: "seedream", prompt: "fewer cats please", n: 3, size: "2K" })
      strictEqual(result.data?.length, 2)
      const sent = lastBodyTo(gateway, "/api/v3/images/generations")
      strictEqual(sent.sequential_image_generation, "auto")
      deepStrictEqual(sent.sequential_image_generation_options, { max_images: 3 })
      strictEqual(sent.size, "2048x2048")
      strictEqual((await usageOf(gateway)).used - before.used, expectedCost("seedream", 2))
    })

    await t.step(
      "ark (flare): a bare Base64 image is sent as a data URI of its type; text that is no image is a 400",
      async () => {
        const jpeg = btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe0, ...new Array(28).fill(7)))
        const png = btoa(String.fromCharCode(...pngFor(seedOf("ref"))))
        const result = await client.images.generate({
          model: "seedream",
          prompt: "the same, at dusk",
          // @ts-expect-error: the spec's reference image field
          image: [png, jpeg]
        })
        strictEqual(result.data?.length, 1)
        deepStrictEqual(lastBodyTo(gateway, "/api/v3/images/generations").image, [
          `data:image/png;base64,${png}`,
          `data:image/jpeg;base64,${jpeg}`
        ])
        const one = await client.images.generate({
          model: "seedream",
          prompt: "one reference",
          // @ts-expect-error: the spec's reference image field
          image: png
        })
        strictEqual(one.data?.length, 1)
        strictEqual(lastBodyTo(gateway, "/api/v3/images/generations").image, `data:image/png;base64,${png}`)

        const before = await usageOf(gateway)
        const calls = gateway.emulator.requests.length
        for (const bad of [btoa("just some text, not an image at all"), "not base64 at all!"]) {
          const error = await client.images.generate({
            model: "seedream",
            prompt: "x",
            // @ts-expect-error: the spec's reference image field
            image: bad
          }).then(() => undefined, (caught) => caught as InstanceType<typeof OpenAI.APIError>)
          strictEqual(error?.status, 400)
          strictEqual((error?.error as { param?: string }).param, "image")
        }
        strictEqual(gateway.emulator.requests.length, calls, "no upstream call")
        strictEqual((await usageOf(gateway)).used, before.used, "nothing charged")
      }
    )

    await t.step("ark: images.edit sends the upload as a data-URI reference", async () => {
      const png = pngFor(seedOf("input"))
      const result = await client.images.edit({
        model: "seedream",
        image: await toFile(png, "in.png", { type: "image/png" }),
        prompt: "add a hat"
      })
      strictEqual(result.data?.length, 1)
      const sent = lastBodyTo(gateway, "/api/v3/images/generations")
      ok(String(sent.image).startsWith("data:image/png;base64,"))
    })

    await t.step(
      "gemini: IMAGE modality asked, inlineData answered as b64_json and as a gateway URL; n calls",
      async () => {
        const before = await usageOf(gateway)
        const result = await client.images.generate({
          model: "gemini-image",
          prompt: "a green hill",
          n: 2,
          size: "1920x1080",
          response_format: "b64_json"
        })
        strictEqual(result.data?.length, 2)
        ok(result.data![0].b64_json!.startsWith(PNG_MAGIC))
        const sent = lastBodyTo(gateway, ":generateContent")
        deepStrictEqual(sent.generationConfig, {
          responseModalities: ["TEXT", "IMAGE"],
          imageConfig: { aspectRatio: "16:9" }
        })
        deepStrictEqual(sent.contents, [{ role: "user", parts: [{ text: "a green hill" }] }])
        const url = await client.images.generate({ model: "gemini-image", prompt: "a hill" })
        ok(url.data![0].url!.startsWith(`${gateway.url}/v1/images/content/img_`), url.data![0].url!)
        strictEqual((await usageOf(gateway)).used - before.used, expectedCost("gemini-image", 3))
      }
    )

    await t.step("gemini: images.edit sends the upload as an inlineData part", async () => {
      const png = pngFor(seedOf("input"))
      const result = await client.images.edit({
        model: "gemini-image",
        image: await toFile(png, "in.png", { type: "image/png" }),
        prompt: "make it snow",
        response_format: "b64_json"
      })
      ok(result.data![0].b64_json!.startsWith(PNG_MAGIC))
      const sent = lastBodyTo(gateway, ":generateContent") as { contents: Array<{ parts: Array<unknown> }> }
      deepStrictEqual(sent.contents[0].parts[1], {
        inlineData: { mimeType: "image/png", data: btoa(String.fromCharCode(...png)) }
      })
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("an ark channel serves chat completions through Ark's OpenAI-compatible chat API", async () => {
  const gateway = await startGateway({
    config: (emulatorUrl) => {
      const file = imageConfig(emulatorUrl)
      const channels = file.channels ?? []
      return {
        ...file,
        models: { ...file.models, "ark-chat": { input: 1, output: 2 } },
        channels: [...channels, {
          ...channels.find((channel) => channel.name === "ark-images")!,
          name: "ark-chat",
          models: ["ark-chat"],
          model_mapping: { "ark-chat": "doubao-seed-1-6-250615" }
        }]
      }
    }
  })
  try {
    const completion = await imageClient(gateway).chat.completions.create({
      model: "ark-chat",
      messages: [{ role: "user", content: "hello ark" }]
    })
    strictEqual(completion.choices[0].message.content, "Echo: hello ark")
    const request = gateway.emulator.requests.at(-1)!
    strictEqual(request.path, "/api/v3/chat/completions")
    strictEqual(request.headers.authorization, "Bearer sk-test-up-ark-images")
    strictEqual((request.body as { model: string }).model, "doubao-seed-1-6-250615")
  } finally {
    await gateway.close()
  }
})
