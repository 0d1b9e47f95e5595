/**
 * What the benchmark sends and how the gateway under test is configured: the
 * bootstrap files (checked with the gateway's own `parseBootstrap` before they
 * are written) and the request bodies with their headers.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { parseBootstrap } from "../src/config/BootstrapFile.ts"

/** The caller's key in every bench bootstrap file. @category constants */
export const benchKey = "sk-bench-0123456789abcdef"

/** The model every text case asks for (priced, served by openai channels). @category constants */
export const benchModel = "gpt-bench"

/**
 * The model the embeddings case asks for (priced, served by the main gateway's openai channel; the emulator takes
 * `dimensions` only on `text-embedding-3` models, as OpenAI does).
 *
 * @category constants
 */
export const benchEmbeddingModel = "text-embedding-3-small"

const user = {
  username: "bench",
  group: "default",
  // The largest amount the file accepts (quota units), so the run never meets InsufficientQuota.
  quota: Number.MAX_SAFE_INTEGER,
  tokens: [{ name: "bench", key: benchKey }]
}

const channel = (name: string, baseUrl: string, priority: number, models: ReadonlyArray<string> = [benchModel]) => ({
  name,
  type: "openai",
  base_url: baseUrl,
  keys: [`sk-upstream-${name}`],
  models,
  priority
})

const checked = (file: unknown, name: string): string => {
  const text = JSON.stringify(file, null, 2)
  const parsed = parseBootstrap(text, name)
  if (Result.isFailure(parsed)) throw new Error(`The generated bootstrap file ${name} is invalid: ${parsed.failure}`)
  return text
}

/**
 * The main gateway's bootstrap file (JSON text): one openai channel on the
 * emulator at `emulatorUrl`, `gpt-bench` priced at 2 / 8 USD per 1M input /
 * output tokens and `text-embedding-3-small` at 0.02 USD per 1M input tokens,
 * one user with the largest quota the file accepts and `benchKey`.
 *
 * @category config
 */
export const gatewayConfig = (emulatorUrl: string): string =>
  checked({
    groups: { default: { ratio: 1 } },
    models: { [benchModel]: { input: 2, output: 8 }, [benchEmbeddingModel]: { input: 0.02 } },
    channels: [channel("emulator", emulatorUrl, 0, [benchModel, benchEmbeddingModel])],
    users: [user]
  }, "bench-gateway.json")

/**
 * The failover gateway's bootstrap file (JSON text): a primary channel at
 * priority 10 on `brokenUrl` (an emulator that answers every request 500) and
 * a secondary at priority 0 on `healthyUrl`; `cooldown_failures` 1,000,000 so
 * the primary never cools down and every request pays for one failed attempt.
 *
 * @category config
 */
export const failoverConfig = (brokenUrl: string, healthyUrl: string): string =>
  checked({
    groups: { default: { ratio: 1 } },
    models: { [benchModel]: { input: 2, output: 8 } },
    channels: [channel("primary-broken", brokenUrl, 10), channel("secondary-healthy", healthyUrl, 0)],
    users: [user],
    settings: { cooldown_failures: 1_000_000 }
  }, "bench-failover.json")

const system = "You are a concise assistant for a load test."
const prompt = "Summarize in two short sentences why an HTTP gateway keeps upstream connections alive between requests."

/**
 * An OpenAI chat completions request (https://platform.openai.com/docs/api-reference/chat/create);
 * streaming asks for the usage chunk too (`stream_options.include_usage`).
 *
 * @category requests
 */
export const chatBody = (stream: boolean): unknown => ({
  model: benchModel,
  messages: [{ role: "system", content: system }, { role: "user", content: prompt }],
  max_tokens: 128,
  ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
})

/**
 * A streaming Messages request (https://docs.anthropic.com/en/api/messages): spec "Endpoints", `POST /v1/messages`.
 *
 * @category requests
 */
export const messagesBody = (): unknown => ({
  model: benchModel,
  max_tokens: 128,
  system,
  messages: [{ role: "user", content: prompt }],
  stream: true
})

/** Inputs per embeddings request. @category constants */
export const embeddingInputs = 16

/**
 * An OpenAI embeddings request (https://platform.openai.com/docs/api-reference/embeddings/create) as the `openai`
 * SDK sends it by default (`encoding_format: "base64"`): `embeddingInputs` sentences of about 20 words each,
 * 256 dimensions.
 *
 * @category requests
 */
export const embeddingsBody = (): unknown => ({
  model: benchEmbeddingModel,
  input: Array.from({ length: embeddingInputs }, (_, index) => `Passage ${index + 1}: ${prompt}`),
  encoding_format: "base64",
  dimensions: 256
})

/** Headers of chat requests: the bench key as a bearer token. @category requests */
export const chatHeaders: Record<string, string> = { Authorization: `Bearer ${benchKey}` }

/**
 * Headers of Messages requests: the key in `x-api-key` and the API version header
 * (https://docs.anthropic.com/en/api/versioning; the emulator tells Messages calls apart by it).
 *
 * @category requests
 */
export const messagesHeaders: Record<string, string> = { "x-api-key": benchKey, "anthropic-version": "2023-06-01" }

/** The video model of the tasks case (`--tasks`), on the emulator's OpenAI videos API. @category constants */
export const benchVideoModel = "sora-2"

/**
 * The tasks gateway's bootstrap file (JSON text): `sora-2` priced at 0.1 USD
 * per second on one openai channel on the emulator at `emulatorUrl`, the bench
 * user, and `task_poll_interval_ms` = `pollMillis`.
 *
 * @category config
 */
export const tasksConfig = (emulatorUrl: string, pollMillis: number): string =>
  checked({
    groups: { default: { ratio: 1 } },
    models: { [benchVideoModel]: { per_second: 0.1 } },
    channels: [channel("emulator-video", emulatorUrl, 0, [benchVideoModel])],
    users: [user],
    settings: { task_poll_interval_ms: pollMillis }
  }, "bench-tasks.json")
