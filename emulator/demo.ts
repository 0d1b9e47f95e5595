/**
 * `deno task demo`: the gateway in front of the upstream emulator, with a
 * bootstrap file that wires one emulator channel per text type (openai,
 * anthropic, gemini, deepseek on the emulator's `/deepseek` prefix, a base
 * URL with a path, azure on its `/azure` prefix, vertex on its `/vertex`
 * prefix with the service-account key the emulator issues, serving a Gemini and
 * a Claude model, and bedrock on its `/bedrock` Bedrock Runtime, signed with
 * AWS's documented example keys), a user and a key, then prints a ready-to-paste `curl`. No
 * vendor account needed. Data stays in memory. Stop with Ctrl-C.
 *
 * @since 0.1.0
 */
// deno-lint-ignore-file no-console
import { Result } from "effect"
import "../src/Prelude.ts"
import { makeHandler } from "../src/App.ts"
import { parseBootstrap } from "../src/config/BootstrapFile.ts"
import { BEDROCK_TEST_CHANNEL_KEY } from "./BedrockAuth.ts"
import { startEmulator } from "./Emulator.ts"
import { VERTEX_TEST_PROJECT } from "./Vertex.ts"

const port = Number(Deno.env.get("PORT") ?? "3000")
const key = "sk-demo-0123456789abcdef"
const emulator = startEmulator({ latencyMs: 50, tokensPerSecond: 40, toolCalls: "asked" })
const vertexKey = await emulator.vertexServiceAccountKey()
const parsed = parseBootstrap(
  JSON.stringify({
    groups: { default: { ratio: 1 } },
    models: {
      "gpt-demo": { input: 2.5, output: 10 },
      "claude-demo": { input: 3, output: 15 },
      "gemini-demo": { input: 1.25, output: 5 },
      "deepseek-demo": { input: 0.28, cached_input: 0.028, output: 0.42 },
      "azure-demo": { input: 2.5, cached_input: 1.25, output: 10 },
      "vertex-gemini-demo": { input: 0.3, cached_input: 0.075, output: 2.5 },
      "vertex-claude-demo": { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 },
      "claude-bedrock-demo": { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 },
      "titan-embed-demo": { input: 0.02 },
      "text-embedding-3-small": { input: 0.02 },
      "gemini-embedding-001": { input: 0.15 }
    },
    channels: [
      {
        name: "emulator-openai",
        type: "openai",
        base_url: emulator.url,
        keys: ["sk-emu"],
        models: ["gpt-demo", "text-embedding-3-small"]
      },
      {
        name: "emulator-anthropic",
        type: "anthropic",
        base_url: emulator.url,
        keys: ["sk-emu"],
        models: ["claude-demo"]
      },
      {
        name: "emulator-gemini",
        type: "gemini",
        base_url: emulator.url,
        keys: ["sk-emu"],
        models: ["gemini-demo", "gemini-embedding-001"]
      },
      {
        name: "emulator-deepseek",
        type: "deepseek",
        base_url: `${emulator.url}/deepseek`,
        keys: ["sk-emu"],
        models: ["deepseek-demo"]
      },
      {
        // Azure OpenAI under the emulator's `/azure` prefix: `azure-demo` is the deployment `gpt-4o-demo`.
        name: "emulator-azure",
        type: "azure",
        base_url: `${emulator.url}/azure`,
        keys: ["sk-emu"],
        models: ["azure-demo"],
        model_mapping: { "azure-demo": "gpt-4o-demo" },
        settings: { api_version: "2024-10-21" }
      },
      {
        name: "emulator-vertex",
        type: "vertex",
        base_url: `${emulator.url}/vertex`,
        keys: [vertexKey],
        models: ["vertex-gemini-demo", "vertex-claude-demo"],
        model_mapping: {
          "vertex-gemini-demo": "gemini-2.5-flash",
          "vertex-claude-demo": "claude-sonnet-4-5@20250929"
        },
        settings: { project: VERTEX_TEST_PROJECT, location: "us-central1" }
      },
      {
        name: "emulator-bedrock",
        type: "bedrock",
        base_url: `${emulator.url}/bedrock`,
        keys: [BEDROCK_TEST_CHANNEL_KEY],
        models: ["claude-bedrock-demo", "titan-embed-demo"],
        model_mapping: {
          "claude-bedrock-demo": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
          "titan-embed-demo": "amazon.titan-embed-text-v2:0"
        },
        settings: { region: "us-east-1" }
      }
    ],
    users: [{ username: "demo", group: "default", quota: 5_000_000, tokens: [{ name: "demo", key }] }]
  }),
  "demo.json"
)
if (Result.isFailure(parsed)) throw new Error(parsed.failure)
const { handler, dispose } = makeHandler({
  databaseUrl: undefined,
  dataDir: "memory://",
  redisUrl: undefined,
  file: parsed.success
})
await handler(new Request("http://localhost/healthz"))
const server = Deno.serve(
  { port, hostname: "127.0.0.1", onListen: () => {} },
  (request, info) => handler(request, info)
)
const base = `http://127.0.0.1:${server.addr.port}`
console.log(`Sluice demo on ${base} (upstream emulator on ${emulator.url})

Key: ${key}
Models: gpt-demo (openai channel), claude-demo (anthropic channel), gemini-demo (gemini channel),
deepseek-demo (deepseek channel), azure-demo (azure channel), vertex-gemini-demo and vertex-claude-demo (vertex
channel), claude-bedrock-demo (bedrock channel, Converse);
embeddings: text-embedding-3-small (openai channel), gemini-embedding-001 (gemini channel),
titan-embed-demo (bedrock channel)

curl ${base}/v1/chat/completions \\
  -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
  -d '{"model": "gpt-demo", "messages": [{"role": "user", "content": "Hello, Sluice"}], "stream": true}'

curl ${base}/v1/embeddings \\
  -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
  -d '{"model": "gemini-embedding-001", "input": ["Hello", "Sluice"], "dimensions": 8, "encoding_format": "float"}'

curl ${base}/api/usage/token -H "Authorization: Bearer ${key}"
`)
Deno.addSignalListener("SIGINT", async () => {
  await server.shutdown()
  await dispose()
  await emulator.close()
  Deno.exit(0)
})
