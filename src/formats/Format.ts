/**
 * The contract every wire format implements: translators to and from the
 * canonical representation, for requests, responses, stream events and errors,
 * in both directions (docs/ARCHITECTURE.md, "Formats and the canonical form"). Routes use
 * the inbound half, upstream adapters the outbound half, so no wire schema is
 * written twice. Translators are pure functions; the stream ones are `step`
 * functions driven by `Stream.mapAccumEffect` in `relay/pipeline/StreamBridge.ts`.
 *
 * @since 0.1.0
 */
import type { Sse } from "effect/encoding"
import type { Request } from "../canonical/Request.ts"
import type { Response } from "../canonical/Response.ts"
import type { StreamPart } from "../canonical/StreamPart.ts"
import type { Problem } from "../domain/Problem.ts"
import type { UpstreamFailed, UpstreamFailureKind, UpstreamRefusalCode } from "../errors/GatewayError.ts"
import type { Decoded } from "./shared/Decoded.ts"
import type { MediaParam } from "./shared/MediaLocation.ts"

/**
 * The wire formats Sluice speaks.
 *
 * @category models
 */
export type FormatName = "openai-chat" | "openai-responses" | "anthropic" | "gemini" | "completions"

/**
 * The wire formats Sluice speaks only to upstreams, never to callers: Bedrock's Converse API
 * (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html).
 *
 * @category models
 */
export type OutboundOnlyName = "bedrock-converse"

/**
 * Every wire format an upstream call can be made in: the inbound formats and the outbound-only ones.
 *
 * @category models
 */
export type WireName = FormatName | OutboundOnlyName

/**
 * How an upstream stream is framed: `sse` (server-sent events, every format but one) or `aws-event-stream`
 * (`application/vnd.amazon.eventstream` binary frames, Bedrock's ConverseStream and InvokeModelWithResponseStream;
 * read by `upstreams/transport/EventStreamEvents.ts` into the same event shape).
 *
 * @category models
 */
export type StreamFraming = "sse" | "aws-event-stream"

export type { Decoded } from "./shared/Decoded.ts"

/**
 * What an outbound request encoder produced: the JSON body for the upstream
 * and the names of the canonical fields the target format cannot express
 * (dropped deliberately, listed once per translator).
 *
 * @category models
 */
export interface EncodedRequest {
  readonly body: Record<string, unknown>
  readonly dropped: ReadonlyArray<string>
}

/**
 * What the inbound encoders need besides the canonical data: the model name
 * the caller asked for, the public id the gateway gives the answer, and the
 * creation time in epoch seconds.
 *
 * @category models
 */
export interface ResponseMeta {
  readonly id: string
  readonly model: string
  readonly created: number
  /** Chat completions: the caller asked for `stream_options.include_usage`. */
  readonly includeUsage?: boolean | undefined
  /** Rough prompt-token estimate, for formats that announce usage before the upstream reports it. */
  readonly promptTokensEstimate?: number | undefined
  /** The caller's JSON body, for formats whose answer repeats the request's settings (Responses). */
  readonly request?: Readonly<Record<string, unknown>> | undefined
  /**
   * Pad stream delta events with an `obfuscation` field (chat completions and Responses; on unless the caller
   * sent `stream_options.include_obfuscation: false`). Unset: no padding.
   */
  readonly obfuscate?: boolean | undefined
}

/** @category models */
export type { Problem } from "../domain/Problem.ts"

/**
 * One step of a stream decoder: the next state and the canonical parts the
 * upstream event produced, or a failure carried in-band by the upstream (an
 * `error` event).
 *
 * @category models
 */
export type DecodeStep<S> =
  | readonly [S, ReadonlyArray<StreamPart>]
  | UpstreamFailed

/**
 * Upstream stream events (SSE events, or event-stream messages in the same shape: `OutboundWire.framing`) →
 * canonical parts. `complete` tells whether the
 * upstream's end marker has been seen; a body that ends before it is a broken
 * stream (never presented as a complete answer).
 *
 * @category models
 */
export interface StreamDecoder<S> {
  readonly initial: () => S
  readonly step: (state: S, event: Sse.Event) => DecodeStep<S>
  /** Parts to flush when the body ends normally (e.g. a final `Finish`). */
  readonly flush: (state: S) => ReadonlyArray<StreamPart>
  readonly complete: (state: S) => boolean
}

/**
 * Canonical parts → inbound SSE events. `end` writes the normal end marker
 * (`data: [DONE]`, …) after a `Finish`; `fail` writes a well-formed error
 * event in the format's own shape and never an end marker.
 *
 * @category models
 */
export interface StreamEncoder<S> {
  readonly initial: (meta: ResponseMeta) => S
  readonly step: (state: S, part: StreamPart) => readonly [S, ReadonlyArray<Sse.Event>]
  readonly end: (state: S) => ReadonlyArray<Sse.Event>
  readonly fail: (state: S, problem: Problem) => ReadonlyArray<Sse.Event>
}

/**
 * What the relay asks of a same-format body: the upstream's model name, whether
 * the call streams, the output cap to send when the caller named none (the
 * cap the quota hold was sized for; `undefined` to leave the body's as it is),
 * and whether the caller's `store` may reach the upstream (the channel's
 * `forward_store` setting; `undefined` is true).
 *
 * @category models
 */
export interface PassthroughTarget {
  readonly model: string
  readonly stream: boolean
  readonly outputCap: number | undefined
  readonly forwardStore?: boolean | undefined
  /**
   * The caller's headers a same-format channel gets (`RelayInput.forwardHeaders`, lower-case names: messages'
   * `anthropic-beta`), for a dialect that carries one in the body instead (Bedrock's `anthropic_beta`).
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * The passthrough half of a format (docs/ARCHITECTURE.md, "Formats and the canonical form"): a
 * same-format request is forwarded as the caller sent it but for what the
 * gateway needs, and a same-format stream is forwarded event by event but for
 * what the caller did not ask to see.
 *
 * @category models
 */
export interface Passthrough {
  /**
   * The caller's body ready for the upstream: the model mapped (where the
   * format carries it in the body), usage reporting switched on for streams
   * (where the format needs asking), `outputCap` in the format's own field
   * when the caller named no limit, and `store` left out when `forwardStore`
   * is false (formats that have it). A new object; `raw` is left as it is.
   */
  readonly body: (raw: Record<string, unknown>, target: PassthroughTarget) => Record<string, unknown>
  /**
   * The caller's body with the URL media that `inlined` (the canonical request
   * after the channel's downloads) holds inline rewritten in the format's own
   * inline form, everything else as sent (`InlineMedia.ts`). A new object;
   * `raw` is left as it is.
   */
  readonly inlineMedia: (raw: Record<string, unknown>, inlined: Request) => Record<string, unknown>
  /**
   * The caller's body, for upstream `model`, without the reasoning tokens another vendor minted
   * (`ReasoningOrigin.ts`), left out as the format's request encoder leaves them out, everything else as sent;
   * absent for a format that cannot do this in place (such a request is translated instead). A new object; `raw`
   * is left as it is.
   */
  readonly withoutForeignReasoning?:
    | ((raw: Record<string, unknown>, model: string) => Record<string, unknown>)
    | undefined
  /**
   * A same-format JSON answer as the caller gets it, for a dialect whose fields the format's clients do not read
   * (DeepSeek's cache hits also shown as `prompt_tokens_details.cached_tokens`): a new object, or `undefined` to pass
   * the upstream's body on as it came. Absent: always as it came.
   */
  readonly answer?: ((body: Record<string, unknown>) => Record<string, unknown> | undefined) | undefined
  /** A same-format stream event as the caller gets it (see `answer`), or `undefined` for as it came. */
  readonly event?: ((event: Sse.Event) => Sse.Event | undefined) | undefined
  /** Whether the caller asked to see usage in the stream (chat `stream_options.include_usage`). */
  readonly wantsStreamUsage: (raw: Record<string, unknown>) => boolean
  /**
   * Whether the caller asked, in its body, for the cost in its stream's final usage (chat and completions
   * `stream_options.include_cost`); every format also takes the `x-sluice-include-cost: 1` header. Absent: never.
   */
  readonly wantsStreamCost?: ((raw: Record<string, unknown>) => boolean) | undefined
  /**
   * Whether a passthrough stream event, decoded into `parts`, is kept from the
   * caller (a usage-only chunk the caller did not ask for, since the gateway
   * switched usage reporting on for its own billing).
   */
  readonly hides: (parts: ReadonlyArray<StreamPart>, meta: ResponseMeta) => boolean
}

/**
 * An upstream HTTP error as a format reads it: the failure kind, a message safe for the caller, and, for a refusal
 * of the request's content that the vendor names in a structured code, that code (`UpstreamRefusalCode`).
 *
 * @category models
 */
export interface ClassifiedError {
  readonly kind: UpstreamFailureKind
  readonly message: string
  readonly code?: UpstreamRefusalCode | undefined
}

/**
 * The outbound half of a wire format: what the gateway needs to call an upstream in it and read the answer.
 * Every `Format` is one; an outbound-only format (`OutboundOnlyWire`) is only this.
 *
 * @category models
 */
export interface OutboundWire<DS = unknown> {
  readonly name: WireName
  /** How the upstream frames a stream in this format; absent is `sse`. */
  readonly framing?: StreamFraming | undefined
  /** Canonical → the upstream's JSON body (model already mapped by the caller of this function). */
  readonly encodeRequest: (request: Request) => EncodedRequest
  /** The upstream's JSON answer → canonical; a body that is not an answer is a `bad-body` failure. */
  readonly decodeResponse: (body: unknown) => Response | UpstreamFailed
  readonly streamDecoder: StreamDecoder<DS>
  /**
   * An upstream HTTP error (status, body text, and the vendor's structured error type where it sends one in a
   * header: AWS's `x-amzn-ErrorType`) → failure kind and a message safe for the caller (the vendor's own error
   * message when the body has one).
   */
  readonly classifyError: (
    status: number,
    bodyText: string,
    errorType?: string | undefined
  ) => ClassifiedError
  /**
   * Whether URL files (PDFs and the like) sent in this format must be
   * downloaded and sent inline: `inlineImages` is the channel's
   * `inline_images` setting (its default applied).
   */
  readonly inlinesFiles: (inlineImages: boolean) => boolean
}

/**
 * An outbound-only wire format (no caller speaks it, so a request is never passed through to it).
 *
 * @category models
 */
export interface OutboundOnlyWire<DS = unknown> extends OutboundWire<DS> {
  readonly name: OutboundOnlyName
}

/**
 * What an upstream call is made in: a `Format` (both halves) or an outbound-only wire, told apart by `name`.
 *
 * @category models
 */
export type UpstreamWire = Format<unknown, unknown> | OutboundOnlyWire<unknown>

/**
 * Whether `wire` is a format a caller can speak (so it has a passthrough half), by its name.
 *
 * @category predicates
 */
export const isFormat = (wire: UpstreamWire): wire is Format<unknown, unknown> => wire.name !== "bedrock-converse"

/**
 * `wire` when a request that arrived in `inbound` format is passed through to it (the same format: its passthrough
 * half applies), else `undefined` (the request is translated; never for an outbound-only wire).
 *
 * @category predicates
 */
export const sameFormatWire = (wire: UpstreamWire, inbound: FormatName): Format<unknown, unknown> | undefined =>
  isFormat(wire) && wire.name === inbound ? wire : undefined

/**
 * A wire format: both halves.
 *
 * Inbound (caller → gateway): `decodeRequest`, `encodeResponse`,
 * `streamEncoder`, `encodeError`.
 * Outbound (gateway → upstream): `encodeRequest`, `decodeResponse`,
 * `streamDecoder`, `classifyError`.
 *
 * @category models
 */
export interface Format<DS = unknown, ES = unknown> extends OutboundWire<DS> {
  readonly name: FormatName
  /** Caller's JSON body → canonical. `context.model` is the model from the path (generate-content). */
  readonly decodeRequest: (
    body: unknown,
    context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
  ) => Decoded<Request>
  /** Canonical answer → the caller's JSON body. */
  readonly encodeResponse: (response: Response, meta: ResponseMeta) => unknown
  readonly streamEncoder: StreamEncoder<ES>
  /** A problem → the caller's error body in this format. */
  readonly encodeError: (problem: Problem) => unknown
  /** What a same-format request and stream need (see `Passthrough`). */
  readonly passthrough: Passthrough
  /**
   * The field of a caller's body in this format that holds a canonical media
   * item (`messages[3].content[1].image_url.url`), for errors that name it.
   */
  readonly mediaParam: MediaParam
  /**
   * A stream event of this format with `cost` (USD) written into its usage
   * when it is the event that carries the answer's final usage, else
   * `undefined` (see `StreamCost.ts`).
   */
  readonly withCost: (event: Sse.Event, cost: number) => Sse.Event | undefined
}
