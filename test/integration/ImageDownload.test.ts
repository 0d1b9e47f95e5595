import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import type { RecordedRequest } from "../../emulator/Emulator.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-alice-0001"
const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PNG = Uint8Array.from(atob(PNG_BASE64), (c) => c.charCodeAt(0))
const MAX_BYTES = 2048
const TIMEOUT_MS = 400

/** The image server on 127.0.0.1; `hits` counts requests by path and query. */
const startImageServer = () => {
  const hits = new Map<string, number>()
  let port = 0
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request): Response => {
    const url = new URL(request.url)
    hits.set(url.pathname + url.search, (hits.get(url.pathname + url.search) ?? 0) + 1)
    switch (url.pathname) {
      case "/pixel.png":
        return new Response(PNG, { headers: { "content-type": "image/png" } })
      case "/big.png":
        return new Response(new Uint8Array(MAX_BYTES * 2), { headers: { "content-type": "image/png" } })
      case "/slow.png": {
        // The head and 8 bytes at once, then nothing: only the time limit ends this download.
        const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(PNG.slice(0, 8)) })
        return new Response(body, { headers: { "content-type": "image/png" } })
      }
      case "/page.html":
        return new Response("<html><body>not an image</body></html>", { headers: { "content-type": "text/html" } })
      case "/endless.png": {
        // 1 KiB every 5 ms, never ending: only a byte cap or the time limit ends this download.
        let timer: ReturnType<typeof setInterval> | undefined
        const body = new ReadableStream<Uint8Array>({
          start: (controller) => {
            controller.enqueue(PNG)
            timer = setInterval(() => controller.enqueue(new Uint8Array(1024)), 5)
          },
          cancel: () => clearInterval(timer)
        })
        return new Response(body, { headers: { "content-type": "image/png" } })
      }
      case "/to-localhost":
        return Response.redirect(`http://localhost:${port}/pixel.png`, 302)
      default:
        return new Response("not found", { status: 404 })
    }
  })
  port = server.addr.port
  const base = `http://127.0.0.1:${port}`
  return { base, hits, close: () => server.shutdown() }
}

const config = (allowHosts: ReadonlyArray<string>) => (emulatorUrl: string) => {
  const channel = (name: string, type: string, models: ReadonlyArray<string>, settings = {}) => ({
    name,
    type,
    base_url: emulatorUrl,
    keys: ["sk-test-up"],
    models,
    settings
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        ["m-gemini", "m-gemini-url", "m-anthropic", "m-anthropic-inline"].map((name) => [name, { input: 1, output: 2 }])
      ),
      channels: [
        channel("gemini-a", "gemini", ["m-gemini"]),
        channel("gemini-b", "gemini", ["m-gemini"]),
        channel("gemini-url", "gemini", ["m-gemini-url"], { inline_images: false }),
        channel("anthropic", "anthropic", ["m-anthropic"]),
        channel("anthropic-inline", "anthropic", ["m-anthropic-inline"], { inline_images: true })
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { media_allow_hosts: allowHosts, media_max_bytes: MAX_BYTES, media_timeout_ms: TIMEOUT_MS }
    }),
    "images.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

type Json = Record<string, unknown>

const partsOf = (request: RecordedRequest | undefined): ReadonlyArray<Json> =>
  ((request?.body as { contents?: ReadonlyArray<{ parts: ReadonlyArray<Json> }> }).contents ?? [])
    .flatMap((content) => content.parts)

const blocksOf = (request: RecordedRequest | undefined): ReadonlyArray<Json> =>
  ((request?.body as { messages?: ReadonlyArray<{ content: ReadonlyArray<Json> }> }).messages ?? [])
    .flatMap((message) => message.content)

const used = async (gateway: TestGateway): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  return (await response.json()).data.total_used
}

const imageMessages = (url: string): Array<OpenAI.ChatCompletionMessageParam> => [{
  role: "user",
  content: [{ type: "text", text: "what is this" }, { type: "image_url", image_url: { url } }]
}]

const chatWithImage = (client: OpenAI, model: string, url: string) =>
  client.chat.completions.create({ model, messages: imageMessages(url) })

const chatStreamWithImage = (client: OpenAI, model: string, url: string) =>
  client.chat.completions.create({ model, stream: true, messages: imageMessages(url) })

/** A request that must fail with a 400 before any upstream call, charging nothing. */
const expectRefused = async (
  gateway: TestGateway,
  send: () => Promise<unknown>,
  expected: { readonly message: string | RegExp; readonly param: string }
) => {
  const before = await used(gateway)
  const upstreamCalls = gateway.emulator.requests.length
  const error = await send().then(() => undefined, (failure) => failure)
  ok(error instanceof OpenAI.BadRequestError, `expected a 400, got ${error}`)
  const body = error.error as { message: string; type: string; param: string; code: string }
  if (typeof expected.message === "string") ok(body.message.includes(expected.message), body.message)
  else ok(expected.message.test(body.message), body.message)
  strictEqual(body.param, expected.param)
  strictEqual(body.code, "invalid_request")
  strictEqual(gateway.emulator.requests.length, upstreamCalls, "no upstream call")
  strictEqual(await used(gateway), before, "no quota charged")
}

Deno.test("image download: URL images reach inline-only channels as inline data (allow-listed image host)", async (t) => {
  const images = startImageServer()
  const gateway = await startGateway({ config: config(["127.0.0.1"]) })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const pixel = `${images.base}/pixel.png`
  const inlinePng = { inlineData: { mimeType: "image/png", data: PNG_BASE64 } }
  try {
    await t.step("chat → gemini: the URL arrives as inlineData with the image's bytes and type", async () => {
      const completion = await chatWithImage(openai, "m-gemini", pixel)
      strictEqual(completion.choices[0].message.content, "I see 1 image(s) [image/png] Echo: what is this")
      const parts = partsOf(gateway.emulator.requests.at(-1))
      deepStrictEqual(parts.find((part) => part.inlineData !== undefined), inlinePng)
      ok(parts.every((part) => part.fileData === undefined), "no fileData upstream")
    })

    await t.step("chat stream → gemini: inline too", async () => {
      const stream = await chatStreamWithImage(openai, "m-gemini", pixel)
      let text = ""
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ""
      strictEqual(text, "I see 1 image(s) [image/png] Echo: what is this")
      deepStrictEqual(partsOf(gateway.emulator.requests.at(-1)).find((part) => part.inlineData), inlinePng)
    })

    await t.step("a failover attempt reuses the download", async () => {
      gateway.emulator.reset()
      gateway.emulator.setFaults([{ status: 500, times: 1, match: { path: "generateContent" } }])
      const completion = await chatWithImage(openai, "m-gemini", `${pixel}?failover=1`)
      strictEqual(completion.choices[0].message.content, "I see 1 image(s) [image/png] Echo: what is this")
      strictEqual(gateway.emulator.requests.length, 2, "two attempts")
      for (const request of gateway.emulator.requests) {
        deepStrictEqual(partsOf(request).find((part) => part.inlineData), inlinePng)
      }
      strictEqual(images.hits.get("/pixel.png?failover=1"), 1, "downloaded once")
    })

    await t.step("generate-content → gemini: a fileData URL is made inline too", async () => {
      const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
      const answer = await genai.models.generateContent({
        model: "m-gemini",
        contents: [{ role: "user", parts: [{ text: "what" }, { fileData: { mimeType: "image/png", fileUri: pixel } }] }]
      })
      strictEqual(answer.text, "I see 1 image(s) [image/png] Echo: what")
      const parts = partsOf(gateway.emulator.requests.at(-1))
      deepStrictEqual(parts.find((part) => part.inlineData), inlinePng)
      ok(parts.every((part) => part.fileData === undefined))
    })

    await t.step(
      "inline_images: false on a gemini channel forwards the URL; the upstream refuses an http URI",
      async () => {
        const error = await chatWithImage(openai, "m-gemini-url", pixel).then(() => undefined, (failure) => failure)
        ok(error instanceof OpenAI.APIError && error.status === 400, `expected a 400, got ${error}`)
        ok(error.message.includes("Invalid or unsupported file uri"), error.message)
        deepStrictEqual(partsOf(gateway.emulator.requests.at(-1)).find((part) => part.fileData), {
          fileData: { mimeType: "image/png", fileUri: pixel }
        })
      }
    )

    await t.step("responses → messages-format model: URL and data URI images work", async () => {
      const ask = (image_url: string) =>
        openai.responses.create({
          model: "m-anthropic",
          input: [{
            role: "user",
            content: [
              { type: "input_text", text: "what is this" },
              { type: "input_image", image_url, detail: "auto" }
            ]
          }]
        })
      const byUrl = await ask(pixel)
      strictEqual(byUrl.output_text, `I see 1 image(s) [${pixel}] Echo: what is this`)
      deepStrictEqual(blocksOf(gateway.emulator.requests.at(-1)).find((block) => block.type === "image"), {
        type: "image",
        source: { type: "url", url: pixel }
      })
      const byData = await ask(`data:image/png;base64,${PNG_BASE64}`)
      strictEqual(byData.output_text, "I see 1 image(s) [image/png] Echo: what is this")
      deepStrictEqual(blocksOf(gateway.emulator.requests.at(-1)).find((block) => block.type === "image"), {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: PNG_BASE64 }
      })
      const stream = await openai.responses.create({
        model: "m-anthropic",
        stream: true,
        input: [{
          role: "user",
          content: [{ type: "input_text", text: "what is this" }, {
            type: "input_image",
            image_url: pixel,
            detail: "auto"
          }]
        }]
      })
      let text = ""
      for await (const event of stream) if (event.type === "response.output_text.delta") text += event.delta
      strictEqual(text, `I see 1 image(s) [${pixel}] Echo: what is this`)
    })

    await t.step("inline_images: true on an anthropic channel sends a base64 block", async () => {
      await chatWithImage(openai, "m-anthropic-inline", pixel)
      deepStrictEqual(blocksOf(gateway.emulator.requests.at(-1)).find((block) => block.type === "image"), {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: PNG_BASE64 }
      })
    })

    await t.step(
      "failed downloads: 400 naming the reason and the field, nothing charged, no upstream call",
      async () => {
        const param = "messages[0].content[1].image_url.url"
        const cases: ReadonlyArray<readonly [string, string | RegExp]> = [
          ["/big.png", `is larger than the limit of ${MAX_BYTES} bytes`],
          ["/slow.png", `did not finish within ${TIMEOUT_MS} ms`],
          ["/page.html", `is not an image (content type "text/html")`],
          ["/missing.png", "answered HTTP 404"],
          [
            "/to-localhost",
            /http:\/\/localhost:\d+\/pixel\.png points to a blocked address \((127\.0\.0\.1|::1) is loopback\)/
          ]
        ]
        for (const [path, message] of cases) {
          await expectRefused(gateway, () => chatWithImage(openai, "m-gemini", `${images.base}${path}`), {
            message,
            param
          })
        }
        await expectRefused(gateway, () => chatStreamWithImage(openai, "m-gemini", `${images.base}/big.png`), {
          message: "is larger than the limit",
          param
        })
        // A text part that holds the same URL is not the field that failed.
        const big = `${images.base}/big.png`
        await expectRefused(gateway, () =>
          openai.chat.completions.create({
            model: "m-gemini",
            messages: [{
              role: "user",
              content: [{ type: "text", text: big }, { type: "image_url", image_url: { url: big } }]
            }]
          }), { message: "is larger than the limit", param: "messages[0].content[1].image_url.url" })
      }
    )

    await t.step("the failures did not cool the gemini channels down", async () => {
      const completion = await chatWithImage(openai, "m-gemini", pixel)
      strictEqual(completion.choices[0].message.content, "I see 1 image(s) [image/png] Echo: what is this")
    })
  } finally {
    await gateway.close()
    await images.close()
  }
})

Deno.test("image download: without the allow-list a loopback image URL is a 400 naming the blocked address", async () => {
  const images = startImageServer()
  const gateway = await startGateway({ config: config([]) })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const pixel = `${images.base}/pixel.png`
  const message = `The URL ${pixel} points to a blocked address (127.0.0.1 is loopback).`
  try {
    for (const send of [chatWithImage, chatStreamWithImage]) {
      await expectRefused(gateway, () => send(openai, "m-gemini", pixel), {
        message,
        param: "messages[0].content[1].image_url.url"
      })
    }
    await expectRefused(gateway, () =>
      openai.responses.create({
        model: "m-gemini",
        input: [{ role: "user", content: [{ type: "input_image", image_url: pixel, detail: "auto" }] }]
      }), { message, param: "input[0].content[0].image_url" })
    // Channels that fetch URLs themselves are not affected.
    const answer = await chatWithImage(openai, "m-anthropic", pixel)
    strictEqual(answer.choices[0].message.content, `I see 1 image(s) [${pixel}] Echo: what is this`)
    strictEqual(images.hits.size, 0, "the gateway never connected to the image server")

    const response = await fetch(`${gateway.url}/v1beta/models/m-gemini:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
      body: JSON.stringify({
        contents: [{ role: "user", parts: [{ text: "x" }, { fileData: { mimeType: "image/png", fileUri: pixel } }] }]
      })
    })
    strictEqual(response.status, 400)
    const body = await response.json()
    ok(JSON.stringify(body).includes("127.0.0.1 is loopback"), JSON.stringify(body))
  } finally {
    await gateway.close()
    await images.close()
  }
})

Deno.test("image download: per-request caps on the count and total bytes of downloads", async (t) => {
  const images = startImageServer()
  const withCaps = (emulatorUrl: string) => {
    const file = config(["127.0.0.1"])(emulatorUrl)
    return {
      ...file,
      settings: {
        ...file.settings,
        media_max_bytes: 1024 * 1024,
        media_timeout_ms: 2000,
        media_max_count: 2,
        media_max_total_bytes: 4096
      }
    }
  }
  const gateway = await startGateway({ config: withCaps })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const ask = (urls: ReadonlyArray<string>, stream = false) =>
    openai.chat.completions.create({
      model: "m-gemini",
      stream,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "what are these" },
          ...urls.map((url) => ({ type: "image_url" as const, image_url: { url } }))
        ]
      }]
    })
  try {
    await t.step("a third distinct URL is refused before any download, naming its field", async () => {
      const urls = ["a", "b", "c"].map((name) => `${images.base}/pixel.png?count=${name}`)
      for (const stream of [false, true]) {
        await expectRefused(gateway, () => ask(urls, stream), {
          message: "more than 2 images and files to download",
          param: "messages[0].content[3].image_url.url"
        })
      }
      for (const name of ["a", "b", "c"]) strictEqual(images.hits.get(`/pixel.png?count=${name}`), undefined)
    })

    await t.step("a repeated URL is one download: two distinct URLs in three parts pass", async () => {
      const first = `${images.base}/pixel.png?repeat=1`
      const completion = await ask([first, `${images.base}/pixel.png?repeat=2`, first]) as OpenAI.ChatCompletion
      strictEqual(
        completion.choices[0].message.content,
        "I see 3 image(s) [image/png, image/png, image/png] Echo: what are these"
      )
    })

    await t.step("a download that crosses the total is stopped at once and named", async () => {
      const started = Date.now()
      await expectRefused(gateway, () => ask([`${images.base}/pixel.png?total=1`, `${images.base}/endless.png`]), {
        message: "larger than the limit of 4096 bytes in total",
        param: "messages[0].content[2].image_url.url"
      })
      ok(Date.now() - started < 1000, "stopped by the cap, not by the 2 s time limit")
    })
  } finally {
    await gateway.close()
    await images.close()
  }
})
