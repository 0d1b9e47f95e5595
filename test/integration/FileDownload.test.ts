/**
 * URL files (PDFs) reach channels that only take inline files: a chat
 * completions upstream takes `file_data` (or a `file_id`), never a URL, so the
 * gateway downloads the file through its SSRF guard and sends it inline with
 * its name; Responses upstreams (`file_url`) and Messages upstreams (document
 * `url` sources) get the URL as sent. A URL that is a web page is the caller's
 * 400 naming the field, before any upstream call and at no charge.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import type { RecordedRequest } from "../../emulator/Emulator.ts"
import { startGateway, type TestGateway } from "../support/Gateway.ts"

const KEY = "sk-test-files-0001"
/** The smallest shape of a PDF the type sniffer recognises. */
const PDF = new TextEncoder().encode(
  "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
)
const PDF_BASE64 = btoa(String.fromCharCode(...PDF))

const startFileServer = () => {
  const hits = new Set<string>()
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request): Response => {
    hits.add(new URL(request.url).search)
    switch (new URL(request.url).pathname) {
      case "/docs/report.pdf":
        return new Response(PDF, { headers: { "content-type": "application/pdf" } })
      case "/download":
        return new Response(PDF, { headers: { "content-type": "application/octet-stream" } })
      case "/login.html":
        return new Response("<html><body>sign in</body></html>", { headers: { "content-type": "text/html" } })
      default:
        return new Response("not found", { status: 404 })
    }
  })
  return { base: `http://127.0.0.1:${server.addr.port}`, hits, close: () => server.shutdown() }
}

const config = (emulatorUrl: string) => {
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
      models: Object.fromEntries(["m-chat", "m-responses", "m-claude"].map((name) => [name, { input: 1, output: 2 }])),
      channels: [
        channel("chat", "openai", ["m-chat"]),
        channel("responses", "openai", ["m-responses"], { responses_api: true }),
        channel("claude", "anthropic", ["m-claude"])
      ],
      users: [{ username: "dana", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { media_allow_hosts: ["127.0.0.1"], media_max_count: 2 }
    }),
    "files.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

type Json = Record<string, unknown>

/** The content parts of every message of the last upstream request. */
const upstreamParts = (gateway: TestGateway): ReadonlyArray<Json> => {
  const request: RecordedRequest | undefined = gateway.emulator.requests.at(-1)
  const body = request?.body as { messages?: ReadonlyArray<Json>; input?: ReadonlyArray<Json> }
  return [...(body.messages ?? []), ...(body.input ?? [])]
    .flatMap((message) => Array.isArray(message.content) ? message.content as ReadonlyArray<Json> : [])
}

const used = async (gateway: TestGateway): Promise<number> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  return (await response.json()).data.total_used
}

Deno.test("file download: URL files reach chat upstreams inline, other upstreams as URLs", async (t) => {
  const files = startFileServer()
  const gateway = await startGateway({ config })
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
  const report = `${files.base}/docs/report.pdf`
  const askClaudeStyle = (model: string, url: string) =>
    anthropic.messages.create({
      model,
      max_tokens: 64,
      messages: [{
        role: "user",
        content: [{ type: "document", source: { type: "url", url } }, { type: "text", text: "Summarize." }]
      }]
    })
  try {
    await t.step("messages client → chat upstream: file_data with the PDF's bytes, named after the URL", async () => {
      const answer = await askClaudeStyle("m-chat", report)
      ok(answer.content.some((block) => block.type === "text"), "answered")
      deepStrictEqual(upstreamParts(gateway).find((part) => part.type === "file"), {
        type: "file",
        file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: "report.pdf" }
      })
    })

    await t.step("responses client → chat upstream: an octet-stream download is sniffed as a PDF", async () => {
      const answer = await openai.responses.create({
        model: "m-chat",
        input: [{
          role: "user",
          content: [
            { type: "input_text", text: "Summarize." },
            { type: "input_file", file_url: `${files.base}/download`, filename: "q3.pdf" }
          ]
        }]
      })
      ok(answer.output_text.length > 0, "answered")
      deepStrictEqual(upstreamParts(gateway).find((part) => part.type === "file"), {
        type: "file",
        file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: "q3.pdf" }
      })
    })

    await t.step("responses and messages upstreams fetch URLs themselves: the URL goes as sent", async () => {
      await openai.responses.create({
        model: "m-responses",
        input: [{
          role: "user",
          content: [{ type: "input_text", text: "Summarize." }, { type: "input_file", file_url: report }]
        }]
      })
      strictEqual(upstreamParts(gateway).find((part) => part.type === "input_file")?.file_url, report)
      await askClaudeStyle("m-claude", report)
      deepStrictEqual(upstreamParts(gateway).find((part) => part.type === "document")?.source, {
        type: "url",
        url: report
      })
    })

    await t.step("a web page is refused: 400 naming the field, no upstream call, nothing charged", async () => {
      const before = await used(gateway)
      const calls = gateway.emulator.requests.length
      const error = await askClaudeStyle("m-chat", `${files.base}/login.html`).then(() => undefined, (e) => e)
      ok(error instanceof Anthropic.BadRequestError, `expected a 400, got ${error}`)
      const body = (error.error as { error: { message: string } }).error
      ok(body.message.includes('is not a document (content type "text/html")'), body.message)
      strictEqual(gateway.emulator.requests.length, calls, "no upstream call")
      strictEqual(await used(gateway), before, "nothing charged")
    })

    await t.step("a third file URL is past the per-request cap: 400 naming its field, nothing downloaded", async () => {
      const before = await used(gateway)
      const calls = gateway.emulator.requests.length
      const error = await openai.responses.create({
        model: "m-chat",
        input: [{
          role: "user",
          content: [
            { type: "input_text", text: "Compare." },
            ...["one", "two", "three"].map((name) => ({
              type: "input_file" as const,
              file_url: `${files.base}/docs/report.pdf?copy=${name}`
            }))
          ]
        }]
      }).then(() => undefined, (e) => e)
      ok(error instanceof OpenAI.BadRequestError, `expected a 400, got ${error}`)
      const body = error.error as { message: string; param: string }
      ok(body.message.includes("more than 2 images and files to download"), body.message)
      strictEqual(body.param, "input[0].content[3].file_url")
      strictEqual(gateway.emulator.requests.length, calls, "no upstream call")
      strictEqual(await used(gateway), before, "nothing charged")
      ok(["one", "two", "three"].every((name) => !files.hits.has(`?copy=${name}`)), "nothing downloaded")
    })
  } finally {
    await gateway.close()
    await files.close()
  }
})
