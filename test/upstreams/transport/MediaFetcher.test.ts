import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import type { Request } from "../../../src/canonical/Request.ts"
import {
  downloadsFor,
  fileUrlsToInline,
  imageUrlsToInline,
  inlinesFiles,
  inlinesImages,
  MediaFetcher,
  withInlineFiles,
  withInlineImages
} from "../../../src/upstreams/transport/MediaFetcher.ts"

const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PNG = Uint8Array.from(atob(PNG_BASE64), (c) => c.charCodeAt(0))

const request: Request = {
  model: "m",
  stream: false,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "look" },
        { type: "image", source: { kind: "url", url: "https://img.test/a.png" }, detail: "high" },
        { type: "image", source: { kind: "url", url: "data:image/png;base64,AAAA" } },
        { type: "image", source: { kind: "url", url: "gs://bucket/b.png" } },
        { type: "image", source: { kind: "base64", mediaType: "image/gif", data: "R0lG" } },
        { type: "file", source: { kind: "url", url: "https://img.test/doc.pdf" } }
      ]
    },
    { role: "assistant", content: [{ type: "tool-call", callId: "c1", name: "snap", arguments: "{}" }] },
    {
      role: "tool",
      content: [{
        type: "tool-result",
        callId: "c1",
        content: [
          { type: "text", text: "{}" },
          { type: "image", source: { kind: "url", url: "https://img.test/c.png" } },
          { type: "image", source: { kind: "url", url: "https://img.test/a.png" } }
        ]
      }]
    }
  ]
}

Deno.test("inlinesImages: gemini defaults to true, openai and anthropic to false, an explicit setting wins", () => {
  strictEqual(inlinesImages({ type: "gemini", settings: {} }), true)
  strictEqual(inlinesImages({ type: "openai", settings: {} }), false)
  strictEqual(inlinesImages({ type: "anthropic", settings: {} }), false)
  strictEqual(inlinesImages({ type: "gemini", settings: { inline_images: false } }), false)
  strictEqual(inlinesImages({ type: "anthropic", settings: { inline_images: true } }), true)
})

Deno.test("imageUrlsToInline: distinct image URLs of content and tool results; data URIs and Gemini files stay", () => {
  deepStrictEqual(imageUrlsToInline(request, "gemini"), ["https://img.test/a.png", "https://img.test/c.png"])
  deepStrictEqual(imageUrlsToInline(request, "anthropic"), [
    "https://img.test/a.png",
    "gs://bucket/b.png",
    "https://img.test/c.png"
  ])
})

Deno.test("withInlineImages: replaces the downloaded URLs everywhere, keeps detail and every other part", () => {
  const images = new Map([
    ["https://img.test/a.png", { mediaType: "image/png", data: "QQ==" }],
    ["https://img.test/c.png", { mediaType: "image/jpeg", data: "Qw==" }]
  ])
  const inlined = withInlineImages(request, images)
  const user = inlined.messages[0].content
  deepStrictEqual(user[1], {
    type: "image",
    source: { kind: "base64", mediaType: "image/png", data: "QQ==" },
    detail: "high"
  })
  deepStrictEqual(user.slice(2), request.messages[0].content.slice(2))
  deepStrictEqual(inlined.messages[1], request.messages[1])
  const result = inlined.messages[2].content[0]
  ok(result.type === "tool-result")
  deepStrictEqual(result.content.slice(1), [
    { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "Qw==" } },
    { type: "image", source: { kind: "base64", mediaType: "image/png", data: "QQ==" } }
  ])
})

Deno.test("downloadsFor: one per kind and URL, in order, with the first canonical place of each", () => {
  deepStrictEqual(downloadsFor(request, { type: "gemini", settings: {} }, "gemini"), [
    { medium: "image", url: "https://img.test/a.png", location: { message: 0, part: 1 } },
    { medium: "file", url: "https://img.test/doc.pdf", location: { message: 0, part: 5 } },
    { medium: "image", url: "https://img.test/c.png", location: { message: 2, part: 0, inner: 1 } }
  ])
  deepStrictEqual(downloadsFor(request, { type: "openai", settings: {} }, "openai-responses"), [], "takes URLs")
  deepStrictEqual(downloadsFor(request, { type: "openai", settings: {} }, "openai-chat"), [
    { medium: "file", url: "https://img.test/doc.pdf", location: { message: 0, part: 5 } }
  ])
})

Deno.test("MediaFetcher: image types from the header, sniffed for octet-stream, refused otherwise; one download per URL", async () => {
  const hits = new Map<string, number>()
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (incoming) => {
    const path = new URL(incoming.url).pathname
    hits.set(path, (hits.get(path) ?? 0) + 1)
    switch (path) {
      case "/typed.png":
        return new Response(PNG, { headers: { "content-type": "image/png; charset=binary" } })
      case "/octet":
        return new Response(PNG, { headers: { "content-type": "application/octet-stream" } })
      case "/octet-text":
        return new Response("just words", { headers: { "content-type": "application/octet-stream" } })
      default:
        return new Response("<html></html>", { headers: { "content-type": "text/html" } })
    }
  })
  const base = `http://127.0.0.1:${server.addr.port}`
  const layer = MediaFetcher.layer({
    mediaMaxBytes: 1024,
    mediaTimeoutMs: 2000,
    mediaAllowHosts: ["127.0.0.1"],
    mediaMaxCount: 16,
    mediaMaxTotalBytes: 1024 * 1024
  })
  try {
    await Effect.gen(function* () {
      const media = yield* MediaFetcher
      deepStrictEqual(yield* media.fetchImage(`${base}/typed.png`), { mediaType: "image/png", data: PNG_BASE64 })
      deepStrictEqual(yield* media.fetchImage(`${base}/octet`), { mediaType: "image/png", data: PNG_BASE64 })
      for (const path of ["/octet-text", "/page.html"]) {
        const error = yield* Effect.flip(media.fetchImage(`${base}${path}`))
        strictEqual(error.reason, "not-an-image", path)
        ok(error.message.includes("is not an image"), error.message)
      }

      const twice: Request = {
        model: "m",
        stream: false,
        messages: [{
          role: "user",
          content: [
            { type: "image", source: { kind: "url", url: `${base}/octet` } },
            { type: "image", source: { kind: "url", url: `${base}/octet` } }
          ]
        }]
      }
      const cache = new Map()
      strictEqual(yield* media.prepare(twice, { type: "openai", settings: {} }, "openai-chat", cache), undefined)
      const first = yield* media.prepare(twice, { type: "gemini", settings: {} }, "gemini", cache)
      const second = yield* media.prepare(
        twice,
        { type: "anthropic", settings: { inline_images: true } },
        "anthropic",
        cache
      )
      deepStrictEqual(first, second)
      deepStrictEqual(first?.messages[0].content[1], {
        type: "image",
        source: { kind: "base64", mediaType: "image/png", data: PNG_BASE64 }
      })
      strictEqual(hits.get("/octet"), 2, "one download for fetchImage above, one for both prepare calls")
    }).pipe(Effect.provide(layer), Effect.runPromise)
  } finally {
    await server.shutdown()
  }
})

Deno.test("files: which channels take them inline, which URLs, and the names they get", () => {
  strictEqual(inlinesFiles({ type: "openai", settings: {} }, "openai-chat"), true, "chat has no file URL field")
  strictEqual(inlinesFiles({ type: "openai", settings: {} }, "openai-responses"), false, "file_url")
  strictEqual(inlinesFiles({ type: "anthropic", settings: {} }, "anthropic"), false, "document url sources")
  strictEqual(inlinesFiles({ type: "gemini", settings: {} }, "gemini"), true)
  strictEqual(inlinesFiles({ type: "gemini", settings: { inline_images: false } }, "gemini"), false)
  const files: Request = {
    model: "m",
    stream: false,
    messages: [{
      role: "user",
      content: [
        { type: "file", source: { kind: "url", url: "https://docs.test/a/Q3%20report.pdf" } },
        { type: "file", source: { kind: "url", url: "https://docs.test/download?id=7" }, filename: "kept.pdf" },
        { type: "file", source: { kind: "url", url: "data:application/pdf;base64,JVBE" } },
        { type: "file", source: { kind: "url", url: "gs://bucket/c.pdf" } },
        { type: "file", source: { kind: "url", url: "https://docs.test/a/Q3%20report.pdf" } }
      ]
    }]
  }
  deepStrictEqual(
    fileUrlsToInline(files, "gemini"),
    ["https://docs.test/a/Q3%20report.pdf", "https://docs.test/download?id=7"],
    "data URIs are inline already; a Gemini file reference stays one on gemini"
  )
  deepStrictEqual(fileUrlsToInline(files, "openai"), [
    "https://docs.test/a/Q3%20report.pdf",
    "https://docs.test/download?id=7",
    "gs://bucket/c.pdf"
  ])
  const pdf = { mediaType: "application/pdf", data: "JVBE" }
  const inlined = withInlineFiles(
    files,
    new Map([["https://docs.test/a/Q3%20report.pdf", pdf], ["https://docs.test/download?id=7", pdf]])
  )
  deepStrictEqual(inlined.messages[0].content.slice(0, 2), [
    { type: "file", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, filename: "Q3 report.pdf" },
    { type: "file", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, filename: "kept.pdf" }
  ])
})

const imagesRequest = (urls: ReadonlyArray<string>): Request => ({
  model: "m",
  stream: false,
  messages: [{
    role: "user",
    content: [
      { type: "text", text: "look" },
      ...urls.map((url) => ({ type: "image" as const, source: { kind: "url" as const, url } }))
    ]
  }]
})

Deno.test("MediaFetcher.prepare: per-request caps on count (before downloading) and total bytes (while reading)", async () => {
  const hits: Array<string> = []
  let endlessSent = 0
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (incoming) => {
    const url = new URL(incoming.url)
    hits.push(url.pathname + url.search)
    if (url.pathname === "/endless") {
      let timer: ReturnType<typeof setInterval> | undefined
      const body = new ReadableStream<Uint8Array>({
        start: (controller) => {
          controller.enqueue(PNG)
          timer = setInterval(() => {
            endlessSent += 1024
            controller.enqueue(new Uint8Array(1024))
          }, 2)
        },
        cancel: () => clearInterval(timer)
      })
      return new Response(body, { headers: { "content-type": "image/png" } })
    }
    return new Response(PNG, { headers: { "content-type": "image/png" } })
  })
  const base = `http://127.0.0.1:${server.addr.port}`
  const layer = MediaFetcher.layer({
    mediaMaxBytes: 1024 * 1024,
    mediaTimeoutMs: 5000,
    mediaAllowHosts: ["127.0.0.1"],
    mediaMaxCount: 2,
    mediaMaxTotalBytes: 4096
  })
  const gemini = { type: "gemini" as const, settings: {} }
  try {
    await Effect.gen(function* () {
      const media = yield* MediaFetcher
      const three = imagesRequest([`${base}/a`, `${base}/a`, `${base}/b`, `${base}/c`])
      const tooMany = yield* Effect.flip(media.prepare(three, gemini, "gemini", new Map()))
      strictEqual(tooMany.reason, "too-many-downloads")
      deepStrictEqual(tooMany.location, { message: 0, part: 4 })
      ok(tooMany.message.includes("more than 2 images and files to download"), tooMany.message)
      deepStrictEqual(hits, [], "refused before any download")

      // Downloads of an earlier attempt count: with a and b cached, c is the third.
      const cache = new Map()
      ok((yield* media.prepare(imagesRequest([`${base}/a`, `${base}/b`]), gemini, "gemini", cache)) !== undefined)
      const third = yield* Effect.flip(media.prepare(imagesRequest([`${base}/c`]), gemini, "gemini", cache))
      strictEqual(third.reason, "too-many-downloads")
      deepStrictEqual(third.location, { message: 0, part: 1 })

      const started = Date.now()
      const over = yield* Effect.flip(
        media.prepare(imagesRequest([`${base}/small`, `${base}/endless`]), gemini, "gemini", new Map())
      )
      strictEqual(over.reason, "over-budget")
      deepStrictEqual(over.location, { message: 0, part: 2 })
      ok(over.message.includes("larger than the limit of 4096 bytes in total"), over.message)
      ok(Date.now() - started < 2000, "stopped at the cap, not by the 5 s time limit")
      ok(endlessSent < 64 * 1024, `stopped early (${endlessSent} bytes sent)`)
    }).pipe(Effect.provide(layer), Effect.runPromise)
  } finally {
    await server.shutdown()
  }
})
