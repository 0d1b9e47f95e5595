/**
 * A `base_url` with a path prefix, end to end: the gateway's channels point
 * at a small forwarder that serves the emulator under `/edge/<name>` (as a
 * corporate proxy or a hosted AI gateway serves a vendor under a path), with
 * and without the version suffix, a trailing slash and a query. Each official
 * SDK's call reaches the forwarder at the prefix followed by the vendor's own
 * path, exactly once, and its answer comes back.
 */
import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { BEDROCK_TEST_API_KEY } from "../../emulator/BedrockAuth.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { VERTEX_TEST_API_KEY, VERTEX_TEST_PROJECT } from "../../emulator/Vertex.ts"
import { startGateway } from "../support/Gateway.ts"

const KEY = "sk-test-prefix-caller-0001"

/** A forwarder that strips `/edge/<name>` and sends the rest to `target`; records every path it was asked. */
const startForwarder = (target: string) => {
  const seen: Array<string> = []
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const url = new URL(request.url)
    seen.push(url.pathname + url.search)
    const match = /^\/edge\/[a-z]+(\/.*)$/.exec(url.pathname)
    if (match === null) return new Response("no such prefix", { status: 404 })
    const headers = new Headers(request.headers)
    headers.delete("host")
    const body = request.method === "GET" ? undefined : await request.arrayBuffer()
    return await fetch(`${target}${match[1]}${url.search}`, { method: request.method, headers, body })
  })
  return { url: `http://127.0.0.1:${server.addr.port}`, seen, close: () => server.shutdown() }
}

Deno.test("base_url with a path prefix: every SDK's call goes to prefix + the vendor's path", async () => {
  const emulator = startEmulator()
  const edge = startForwarder(emulator.url)
  const gateway = await startGateway({
    emulator,
    ownsEmulator: true,
    config: () => {
      const parsed = parseBootstrap(
        JSON.stringify({
          groups: { default: { ratio: 1 } },
          models: Object.fromEntries(
            ["m-chat", "m-query", "m-claude", "m-gemini", "m-vertex", "m-bedrock"].map((
              m
            ) => [m, { input: 1, output: 2 }])
          ),
          channels: [
            {
              name: "chat",
              type: "openai",
              base_url: `${edge.url}/edge/openai`,
              keys: ["sk-test-up"],
              models: ["m-chat"]
            },
            {
              name: "query",
              type: "openai",
              base_url: `${edge.url}/edge/tenant/?tenant=t1`,
              keys: ["sk-test-up"],
              models: ["m-query"]
            },
            {
              name: "claude",
              type: "anthropic",
              base_url: `${edge.url}/edge/claude/v1/`,
              keys: ["sk-test-up"],
              models: ["m-claude"]
            },
            {
              name: "gemini",
              type: "gemini",
              base_url: `${edge.url}/edge/gemini/v1beta`,
              keys: ["sk-test-up"],
              models: ["m-gemini"]
            },
            {
              // The emulator serves Vertex AI under `/vertex`: behind the edge's prefix, with its `/v1`.
              name: "vertex",
              type: "vertex",
              base_url: `${edge.url}/edge/vertex/vertex/v1`,
              keys: [VERTEX_TEST_API_KEY],
              models: ["m-vertex"],
              settings: { project: VERTEX_TEST_PROJECT }
            },
            {
              // A Bedrock API key (Bearer): a SigV4 signature covers the path as sent, which a prefix-stripping proxy
              // changes, so only a proxy that re-signs can carry signed keys.
              name: "bedrock",
              type: "bedrock",
              base_url: `${edge.url}/edge/aws/bedrock/`,
              keys: [BEDROCK_TEST_API_KEY],
              models: ["m-bedrock"],
              model_mapping: { "m-bedrock": "amazon.nova-lite-v1:0" },
              settings: { region: "us-east-1" }
            }
          ],
          users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: KEY }] }]
        }),
        "prefix.json"
      )
      if (Result.isFailure(parsed)) throw new Error(parsed.failure)
      return parsed.success
    }
  })
  try {
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const chat = await openai.chat.completions.create({ model: "m-chat", messages: [{ role: "user", content: "hi" }] })
    strictEqual(chat.choices[0].message.content, "Echo: hi")
    const query = await openai.chat.completions.create({ model: "m-query", messages: [{ role: "user", content: "q" }] })
    strictEqual(query.choices[0].message.content, "Echo: q")

    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 })
    const message = await anthropic.messages.create({
      model: "m-claude",
      max_tokens: 64,
      messages: [{ role: "user", content: "hello claude" }]
    })
    strictEqual(message.content[0].type === "text" ? message.content[0].text : "", "Echo: hello claude")

    const google = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
    let streamed = ""
    for await (
      const chunk of await google.models.generateContentStream({ model: "m-gemini", contents: "hello gemini" })
    ) {
      streamed += chunk.text ?? ""
    }
    strictEqual(streamed, "Echo: hello gemini")
    const vertex = await openai.chat.completions.create({
      model: "m-vertex",
      messages: [{ role: "user", content: "hello vertex" }]
    })
    strictEqual(vertex.choices[0].message.content, "Echo: hello vertex")

    const converse = await openai.chat.completions.create({
      model: "m-bedrock",
      messages: [{ role: "user", content: "hello bedrock" }]
    })
    strictEqual(converse.choices[0].message.content, "Echo: hello bedrock")

    deepStrictEqual(edge.seen, [
      "/edge/openai/v1/chat/completions",
      "/edge/tenant/v1/chat/completions?tenant=t1",
      "/edge/claude/v1/messages",
      "/edge/gemini/v1beta/models/m-gemini:streamGenerateContent?alt=sse",
      `/edge/vertex/vertex/v1/projects/${VERTEX_TEST_PROJECT}/locations/us-central1/publishers/google/models/` +
      "m-vertex:generateContent",
      "/edge/aws/bedrock/model/amazon.nova-lite-v1%3A0/converse"
    ])
  } finally {
    await gateway.close()
    await edge.close()
  }
})
