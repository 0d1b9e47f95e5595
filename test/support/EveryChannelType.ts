/**
 * A gateway in front of the emulator with one channel of each kind: `m-chat`
 * on an `openai` channel speaking chat completions, `m-resp` on an `openai`
 * channel with the Responses API, `m-claude` on `anthropic`, `m-gemini` on
 * `gemini`, `m-deepseek` on `deepseek` (the emulator's DeepSeek under its
 * `/deepseek` prefix), `m-azure` on `azure` (its Azure OpenAI under
 * `/azure`), `m-vertex` on `vertex` (the emulator's Vertex AI under
 * `/vertex`, with its test API key), `m-bedrock` on `bedrock` (the emulator's
 * Bedrock Runtime under `/bedrock`, Converse with Claude, SigV4-signed with the
 * emulator's test credentials); one user `alice` with key `KEY`; and the three
 * official SDK clients pointed at it.
 */
import { Result } from "effect"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { BEDROCK_TEST_CHANNEL_KEY } from "../../emulator/BedrockAuth.ts"
import type { RecordedRequest } from "../../emulator/Emulator.ts"
import { VERTEX_TEST_API_KEY, VERTEX_TEST_PROJECT } from "../../emulator/Vertex.ts"
import type { TestGateway } from "./Gateway.ts"

/** The caller's key. */
export const KEY = "sk-test-alice-0001"

/** The bootstrap file; `settings` are added to every channel (e.g. `{forward_store: false}`). */
export const everyChannelType = (settings: Record<string, unknown> = {}) => (emulatorUrl: string): BootstrapFile => {
  const channel = (
    name: string,
    type: string,
    model: string,
    own: Record<string, unknown> = {},
    path = "",
    key = "sk-test-up"
  ) => ({
    name,
    type,
    base_url: emulatorUrl + path,
    keys: [key],
    models: [model],
    settings: { ...own, ...settings }
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: Object.fromEntries(
        ["m-chat", "m-resp", "m-claude", "m-gemini", "m-deepseek", "m-azure", "m-vertex", "m-bedrock"].map((
          name
        ) => [name, { input: 1, output: 2 }])
      ),
      channels: [
        channel("chat", "openai", "m-chat"),
        channel("resp", "openai", "m-resp", { responses_api: true }),
        channel("claude", "anthropic", "m-claude"),
        channel("gemini", "gemini", "m-gemini"),
        channel("deepseek", "deepseek", "m-deepseek", {}, "/deepseek"),
        channel("azure", "azure", "m-azure", {}, "/azure"),
        channel("vertex", "vertex", "m-vertex", { project: VERTEX_TEST_PROJECT }, "/vertex", VERTEX_TEST_API_KEY),
        {
          ...channel("bedrock", "bedrock", "m-bedrock", { region: "us-east-1" }, "/bedrock"),
          keys: [BEDROCK_TEST_CHANNEL_KEY],
          model_mapping: { "m-bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0" }
        }
      ],
      users: [{ username: "alice", group: "default", quota: 500_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "every-channel-type.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** The official SDK clients, pointed at the gateway with `KEY`. */
export const sdkClients = (gateway: TestGateway) => ({
  openai: new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 }),
  anthropic: new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 }),
  // @google/genai defaults to API version v1; the gateway serves generate-content under /v1beta too.
  google: new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
})

/** The body of the last request the emulator received on a path containing `path`. */
export const lastBodyTo = (gateway: TestGateway, path: string): Record<string, unknown> => {
  const request: RecordedRequest | undefined = gateway.emulator.requests.findLast((recorded) =>
    recorded.path.includes(path)
  )
  if (request === undefined) throw new Error(`no upstream request to ${path}`)
  return request.body as Record<string, unknown>
}
