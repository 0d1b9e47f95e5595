/**
 * Which channel types serve the audio and moderation routes, and where: the
 * URL and headers of each call. A `Record<ChannelType, …>`, so a new channel
 * type does not compile until it says whether it serves them.
 *
 * @since 0.1.0
 */
import type { AudioFormatName } from "../formats/audio/Wires.ts"
import {
  adapters,
  type Channel,
  type ChannelType,
  channelUrl,
  type UpstreamTarget,
  withExtraHeaders
} from "./Adapter.ts"
import { azureAuthHeaders, azureUrl } from "./AzureTarget.ts"

/** The audio and moderation operations. @category models */
export type AudioOperation = "speech" | "transcriptions" | "translations" | "moderations"

/** A channel type's audio endpoints. @category models */
export interface AudioAdapter {
  /** The wire its calls speak (`formats/audio/Wires.ts`): OpenAI's audio API, or generate-content. */
  readonly wire: AudioFormatName
  /** The operations it serves. */
  readonly serves: ReadonlySet<AudioOperation>
  /** URL and headers of `operation` on `model` with `key` (the channel's extra headers included). */
  readonly target: (channel: Channel, key: string, operation: AudioOperation, model: string) => UpstreamTarget
}

/** OpenAI's paths below the channel root (platform.openai.com/docs/api-reference/audio, …/moderations). */
const OPENAI_PATHS: Record<AudioOperation, string> = {
  speech: "/v1/audio/speech",
  transcriptions: "/v1/audio/transcriptions",
  translations: "/v1/audio/translations",
  moderations: "/v1/moderations"
}

/**
 * OpenAI-compatible upstreams: the same root, bearer key and extra headers as
 * the chat call, with the operation's path in place of `/v1/chat/completions`.
 */
const openai: AudioAdapter = {
  wire: "openai",
  serves: new Set(["speech", "transcriptions", "translations", "moderations"]),
  target: (channel, key, operation) => {
    const chat = adapters.openai.target(channel, key, "openai-chat", "", false)
    return { url: channelUrl(channel, OPENAI_PATHS[operation]), headers: chat.headers }
  }
}

/**
 * Generate-content upstreams: speech is `:generateContent` with audio output
 * (`responseModalities: ["AUDIO"]`, `speechConfig.voiceConfig`;
 * ai.google.dev/gemini-api/docs/speech-generation), transcription is
 * `:generateContent` with the audio as inline data
 * (ai.google.dev/gemini-api/docs/audio); the URL is derived from the text
 * call so root, model encoding and headers stay one.
 */
const gemini: AudioAdapter = {
  wire: "gemini",
  serves: new Set(["speech", "transcriptions"]),
  target: (channel, key, _operation, model) => adapters.gemini.target(channel, key, "gemini", model, false)
}

/**
 * Azure OpenAI: OpenAI's audio wire at the deployment's `audio/speech`, `audio/transcriptions` and
 * `audio/translations` (dated API version) or `/openai/v1/audio/…` (v1), with the channel's `api-key` or Entra
 * token (`AzureTarget.ts`; learn.microsoft.com/azure/ai-foundry/openai/reference, "Speech to text", "Text to
 * speech"). Azure has no moderations endpoint (its content filter runs on every call).
 */
const azure: AudioAdapter = {
  wire: "openai",
  serves: new Set(["speech", "transcriptions", "translations"]),
  target: (channel, key, operation, model) => ({
    url: azureUrl(
      channel,
      model,
      operation === "speech"
        ? "audio/speech"
        : operation === "translations"
        ? "audio/translations"
        : "audio/transcriptions"
    ),
    headers: withExtraHeaders(channel, { "content-type": "application/json", ...azureAuthHeaders(key) })
  })
}

/**
 * The audio endpoints of each channel type; `undefined` for a type that
 * serves none of them (anthropic, ark, cohere, jina; deepseek, whose API has
 * chat and FIM completions only, api-docs.deepseek.com), which is never a
 * candidate for these routes.
 *
 * @category adapters
 */
export const audioAdapters: Record<ChannelType, AudioAdapter | undefined> = {
  openai,
  anthropic: undefined,
  gemini,
  ark: undefined,
  cohere: undefined,
  jina: undefined,
  midjourney: undefined,
  kling: undefined,
  deepseek: undefined,
  bedrock: undefined,
  azure,
  vertex: undefined
}
