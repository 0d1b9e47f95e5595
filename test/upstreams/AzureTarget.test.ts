/**
 * The `azure` channel type with plain values: its URLs in both API version modes (deployment encoded, the base
 * URL's path kept and its `/openai` or `/openai/v1` not doubled), its key headers (`api-key`, or Bearer for an
 * `entra:` entry), its wire choice (Responses only on v1), its embedding / image / audio targets, the
 * classification of Azure's errors by their structured codes, the chat stream decoder on Azure's first chunk, and
 * the validation of `settings.api_version` and of a missing `base_url`.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { Sse } from "effect/encoding"
import { ChannelSpec, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { makeDecoder } from "../../src/domain/SchemaDecode.ts"
import { classifyAzureError } from "../../src/formats/azure/ErrorBody.ts"
import { chatStreamDecoder } from "../../src/formats/openai/chat/StreamDecoder.ts"
import { adapters, type Channel, wireOf } from "../../src/upstreams/Adapter.ts"
import { audioAdapters } from "../../src/upstreams/AudioAdapter.ts"
import { azureAuthHeaders, azureUrl } from "../../src/upstreams/AzureTarget.ts"
import { embeddingAdapters } from "../../src/upstreams/EmbeddingAdapter.ts"
import { imageAdapters } from "../../src/upstreams/ImageAdapter.ts"

const channel = (baseUrl: string, apiVersion?: string): Channel => ({
  type: "azure",
  baseUrl,
  settings: apiVersion === undefined ? {} : { api_version: apiVersion }
})

Deno.test("azure URLs: dated deployment paths with api-version, v1 paths without, base URL paths kept", () => {
  const resource = "https://res.openai.azure.com"
  strictEqual(
    azureUrl(channel(resource), "gpt 4o/x", "chat/completions"),
    "https://res.openai.azure.com/openai/deployments/gpt%204o%2Fx/chat/completions?api-version=2024-10-21"
  )
  strictEqual(
    azureUrl(channel(`${resource}/`, "2025-04-01-preview"), "dep", "embeddings"),
    "https://res.openai.azure.com/openai/deployments/dep/embeddings?api-version=2025-04-01-preview"
  )
  strictEqual(
    azureUrl(channel(`${resource}/openai/`), "dep", "audio/speech"),
    "https://res.openai.azure.com/openai/deployments/dep/audio/speech?api-version=2024-10-21"
  )
  strictEqual(
    azureUrl(channel("http://proxy.internal/azure", "v1"), "dep", "responses"),
    "http://proxy.internal/azure/openai/v1/responses"
  )
  strictEqual(
    azureUrl(channel(`${resource}/openai/v1`, "v1"), "dep", "images/generations"),
    "https://res.openai.azure.com/openai/v1/images/generations"
  )
})

Deno.test("azure keys: api-key, or Authorization Bearer for entra:<token>", () => {
  deepStrictEqual(azureAuthHeaders("sk-test-azure-1"), { "api-key": "sk-test-azure-1" })
  deepStrictEqual(azureAuthHeaders("entra:eyJ.test.token"), { authorization: "Bearer eyJ.test.token" })
})

Deno.test("azure adapter: Responses only on v1, every other text format as itself or through chat", () => {
  const dated = channel("https://res.openai.azure.com")
  const v1 = channel("https://res.openai.azure.com", "v1")
  strictEqual(adapters.azure.wireFormat("openai-responses", dated, "dep"), "openai-chat")
  strictEqual(adapters.azure.wireFormat("openai-responses", v1, "dep"), "openai-responses")
  strictEqual(adapters.azure.wireFormat("completions", dated, "dep"), "completions")
  strictEqual(adapters.azure.wireFormat("anthropic", v1, "dep"), "openai-chat")
  strictEqual(adapters.azure.wireFormat("gemini", dated, "dep"), "openai-chat")
  const target = adapters.azure.target(dated, "sk-test-azure-1", "completions", "dep", true)
  strictEqual(target.url, "https://res.openai.azure.com/openai/deployments/dep/completions?api-version=2024-10-21")
  deepStrictEqual(target.headers, { "content-type": "application/json", "api-key": "sk-test-azure-1" })
  strictEqual(wireOf("azure", "openai-chat").classifyError, classifyAzureError)
  strictEqual(wireOf("azure", "openai-responses").classifyError, classifyAzureError)
})

Deno.test("azure embeddings, images and audio: the same URL families and keys", () => {
  const dated = channel("https://res.openai.azure.com")
  const v1 = { ...channel("https://res.openai.azure.com", "v1"), settings: { api_version: "v1", headers: { x: "y" } } }
  const embed = embeddingAdapters.azure!.target(dated, "entra:tok", "emb")
  strictEqual(embed.url, "https://res.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21")
  deepStrictEqual(embed.headers, { "content-type": "application/json", authorization: "Bearer tok" })
  const edit = imageAdapters.azure!.target(v1, "sk-test-azure-1", "img", true, true)
  strictEqual(edit.url, "https://res.openai.azure.com/openai/v1/images/edits")
  deepStrictEqual(edit.headers, { "api-key": "sk-test-azure-1", x: "y" })
  const audio = audioAdapters.azure!
  ok(!audio.serves.has("moderations"), "Azure has no moderations endpoint")
  strictEqual(
    audio.target(dated, "k", "transcriptions", "whisper").url,
    "https://res.openai.azure.com/openai/deployments/whisper/audio/transcriptions?api-version=2024-10-21"
  )
})

Deno.test("azure errors: the content filter by its codes, never by message text", () => {
  const filtered = JSON.stringify({
    error: {
      message: "The response was filtered",
      type: null,
      param: "prompt",
      code: "content_filter",
      status: 400,
      innererror: { code: "ResponsibleAIPolicyViolation", content_filter_result: {} }
    }
  })
  deepStrictEqual(classifyAzureError(400, filtered), {
    kind: "rejected",
    message: "The response was filtered",
    code: "content_filter"
  })
  const innerOnly = JSON.stringify({ error: { message: "m", innererror: { code: "ResponsibleAIPolicyViolation" } } })
  strictEqual(classifyAzureError(400, innerOnly).code, "content_filter")
  const worded = JSON.stringify({ error: { message: "content_filter triggered", code: "invalid_value" } })
  deepStrictEqual(classifyAzureError(400, worded), { kind: "rejected", message: "content_filter triggered" })
  strictEqual(classifyAzureError(500, filtered).kind, "server")
  strictEqual(classifyAzureError(500, filtered).code, undefined)
  const unauthorized = JSON.stringify({ error: { code: "401", message: "Access denied" } })
  deepStrictEqual(classifyAzureError(401, unauthorized), { kind: "unauthorized", message: "Access denied" })
  strictEqual(classifyAzureError(429, JSON.stringify({ error: { code: "429", message: "Rate" } })).kind, "throttled")
  strictEqual(classifyAzureError(404, JSON.stringify({ error: { code: "DeploymentNotFound" } })).kind, "rejected")
})

Deno.test("chat stream decoder: Azure's prompt_filter_results chunk starts nothing; the next chunk's id does", () => {
  const event = (data: unknown): Sse.Event => ({
    _tag: "Event",
    event: "message",
    id: undefined,
    data: JSON.stringify(data)
  })
  const first = chatStreamDecoder.step(
    chatStreamDecoder.initial(),
    event({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: [{ prompt_index: 0 }] })
  )
  ok(Array.isArray(first))
  deepStrictEqual(first[1], [])
  const second = chatStreamDecoder.step(
    first[0],
    event({
      id: "chatcmpl-1",
      model: "gpt-4o",
      created: 5,
      choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, content_filter_results: {} }]
    })
  )
  ok(Array.isArray(second))
  deepStrictEqual(second[1][0], { _tag: "ResponseStart", id: "chatcmpl-1", model: "gpt-4o", created: 5 })
})

Deno.test("azure settings: api_version a date, a preview date or v1; an azure channel needs a base_url", () => {
  const file = (settings: Record<string, unknown>, baseUrl: string | null = "https://res.openai.azure.com") =>
    parseBootstrap(
      JSON.stringify({
        channels: [{
          name: "az",
          type: "azure",
          ...(baseUrl === null ? {} : { base_url: baseUrl }),
          keys: ["sk-test-azure-1"],
          models: ["m"],
          settings
        }]
      }),
      "azure.json"
    )
  for (const version of ["2024-10-21", "2025-04-01-preview", "v1"]) {
    ok(Result.isSuccess(file({ api_version: version })), version)
  }
  for (const version of ["2024-10", "v2", "latest", "2024-10-21-beta"]) {
    const parsed = file({ api_version: version })
    ok(Result.isFailure(parsed) && parsed.failure.startsWith("channels[0].settings.api_version:"), version)
  }
  // In YAML an unquoted date stays the string Azure takes (the README's example).
  const yaml = parseBootstrap(
    "channels:\n  - name: az\n    type: azure\n    base_url: https://res.openai.azure.com\n" +
      "    keys: [sk-test-azure-1]\n    models: [m]\n    settings: { api_version: 2024-10-21 }\n",
    "azure.yaml"
  )
  ok(
    Result.isSuccess(yaml) && yaml.success.channels?.[0].settings?.api_version === "2024-10-21",
    "a YAML date is the version"
  )
  const missing = file({}, null)
  ok(Result.isFailure(missing) && missing.failure.startsWith("channels[0].base_url: missing"), "no default base URL")
  // The admin API decodes the same fields: its error names the field.
  const decoded = makeDecoder(ChannelSpec)({
    name: "az",
    type: "azure",
    keys: ["k"],
    models: ["m"],
    settings: { api_version: "nope" }
  })
  ok(Result.isFailure(decoded))
  strictEqual(decoded.failure.param, "settings.api_version")
})
