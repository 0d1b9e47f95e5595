/**
 * What an audio wire format offers the audio relays (`relay/audio/`): how a
 * speech request and a transcription are sent on it, how its answer is read,
 * and how its error answers are classified. The caller speaks OpenAI's audio
 * API (platform.openai.com/docs/api-reference/audio); a wire either passes
 * that request on (`stream`, `form`: the upstream speaks it too) or makes a
 * whole request of its own and answers whole (`whole`: generate-content).
 * URL and headers (key) come from the channel type's `AudioAdapter`
 * (`upstreams/AudioAdapter.ts`), which names the wire it speaks.
 *
 * @since 0.1.0
 */
import type { Usage } from "../../canonical/Usage.ts"
import type { InvalidRequest, UpstreamFailed, UpstreamFailureKind } from "../../errors/GatewayError.ts"

/** The audio wire formats: OpenAI's audio API, or generate-content with audio. @category models */
export type AudioFormatName = "openai" | "gemini"

/** Speech made whole from a wire's answer: the bytes in the asked container and the tokens it reported. @category models */
export interface SpeechAudio {
  readonly bytes: Uint8Array
  readonly contentType: string
  /** The answer's reported tokens, when it reported them. */
  readonly usage: Usage | undefined
}

/** The usage a transcription answer reports: its seconds (`duration`), or its tokens. @category models */
export interface ReportedUsage {
  readonly seconds?: number
  readonly tokens?: Usage
}

/** A transcript read from a wire's whole answer, and its reported tokens. @category models */
export interface HeardText {
  readonly text: string
  readonly usage: Usage | undefined
}

/**
 * How a wire sends a speech request (the caller's JSON body, `POST /v1/audio/speech`): passed on with its
 * model mapped and its answer streamed as it arrives (`stream`), or a request of the wire's own answered whole
 * (`whole`: the speech decoded from its JSON answer).
 *
 * @category models
 */
export type SpeechWire =
  | {
    readonly _tag: "stream"
    /** The body sent: the caller's, `model` set to the upstream's, the channel's `strip_params` removed. */
    readonly body: (
      body: Readonly<Record<string, unknown>>,
      model: string,
      strip: ReadonlyArray<string>
    ) => Record<string, unknown>
  }
  | {
    readonly _tag: "whole"
    /** Why the caller's request cannot be made on this wire, by field; `undefined` when it can. */
    readonly refusal: (body: Readonly<Record<string, unknown>>) => InvalidRequest | undefined
    /** The wire's body for the caller's request. */
    readonly body: (body: Readonly<Record<string, unknown>>) => Record<string, unknown>
    /** The speech in a 2xx JSON answer, in the asked `response_format`, or `UpstreamFailed` (`bad-body`). */
    readonly decode: (
      json: unknown,
      body: Readonly<Record<string, unknown>>,
      channelId: number
    ) => SpeechAudio | UpstreamFailed
  }

/**
 * How a wire sends a transcription or translation (the caller's multipart form): passed on with its model
 * mapped (`form`, the answer passed on as it comes), or a JSON request of the wire's own answered whole
 * (`whole`: the transcript decoded from its JSON answer).
 *
 * @category models
 */
export type TranscriptionWire =
  | {
    readonly _tag: "form"
    /** The form sent: the caller's fields but `model` (set to the upstream's) and the channel's `strip_params`. */
    readonly form: (form: FormData, model: string, strip: ReadonlyArray<string>) => FormData
    /** The usage an answer's text reports (a whole answer, or a stream's `done` event), `{}` when none. */
    readonly usage: (text: string) => ReportedUsage
  }
  | {
    readonly _tag: "whole"
    /** Why the caller's form cannot be sent on this wire, by field; `undefined` when it can. */
    readonly refusal: (form: FormData) => InvalidRequest | undefined
    /** The wire's JSON body for the caller's form (its file of media type `mimeType` inline). */
    readonly body: (form: FormData, mimeType: string) => Promise<Record<string, unknown>>
    /** The transcript of a 2xx JSON answer, or `UpstreamFailed` (`bad-body`) when it has none. */
    readonly decode: (json: unknown, channelId: number) => HeardText | UpstreamFailed
  }

/** One audio wire format, as the audio relays use it on an upstream. @category models */
export interface AudioWire {
  readonly name: AudioFormatName
  readonly speech: SpeechWire
  readonly transcription: TranscriptionWire
  /** The failure kind and caller-safe message of an upstream error answer. */
  readonly classifyError: (
    status: number,
    text: string
  ) => { readonly kind: UpstreamFailureKind; readonly message: string }
}
