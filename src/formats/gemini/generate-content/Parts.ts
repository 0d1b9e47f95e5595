/**
 * Content parts of the generate-content format (`Part`, `Content`) and their
 * translation to and from canonical content parts, shared by requests,
 * responses and streams.
 *
 * Thought signatures. Gemini attaches an opaque `thoughtSignature` to the part
 * it belongs with (a thought part, a text part, or the first `functionCall` of a
 * turn) and requires it back on that same part
 * (ai.google.dev/gemini-api/docs/thought-signatures). Canonically:
 * - a thought part (`thought: true`) is a `reasoning` part; its signature is the
 *   reasoning part's `signature`. Consecutive thought parts without a signature
 *   are merged into one reasoning part, which a signed thought part ends (the
 *   shape a streamed turn has once a client concatenated its chunks);
 * - a signature on any other part becomes a reasoning part with empty text and
 *   that signature, placed immediately before the part it was attached to.
 * Encoding reverses this: a signature-only reasoning part's signature is put on
 * the following part; when no non-reasoning part follows, it is sent alone as
 * `{text: "", thought: true, thoughtSignature}`. Where a signature came from
 * (`origin`) is read by a `SignatureReader` on decoding; on encoding the
 * callers prepare the parts (`forClient`, `forUpstream` of `ReasoningOrigin.ts`).
 *
 * Source: @google/genai 3.1.0 `Part`, `Blob`, `FileData`, `FunctionCall`,
 * `FunctionResponse`, `FunctionResponsePart` (genai.d.ts).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type {
  ImagePart,
  MediaSource,
  Part,
  ReasoningOrigin,
  ReasoningPart,
  TextPart,
  ToolResultPart
} from "../../../canonical/Content.ts"
import { parseDataUri } from "../../../canonical/DataUri.ts"
import { textOf } from "../../../canonical/Content.ts"
import { parseJsonOrUndefined } from "../../../domain/JsonDepth.ts"
import { unwrapToken } from "../../shared/ReasoningOrigin.ts"

const Blob = Schema.Struct({ mimeType: Schema.String, data: Schema.String })
const FileData = Schema.Struct({ mimeType: Schema.optional(Schema.String), fileUri: Schema.String })
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * A `Part` as far as Sluice reads it: `text` (with `thought`), `inlineData`,
 * `fileData`, `functionCall`, `functionResponse` (with media `parts`), and
 * `thoughtSignature` on any of them. Unknown fields (`executableCode`,
 * `videoMetadata`, …) are ignored.
 *
 * @category schemas
 */
export const WirePart = Schema.Struct({
  text: Schema.optional(Schema.String),
  thought: Schema.optional(Schema.Boolean),
  thoughtSignature: Schema.optional(Schema.String),
  inlineData: Schema.optional(Blob),
  fileData: Schema.optional(FileData),
  functionCall: Schema.optional(Schema.Struct({
    name: Schema.String,
    args: Schema.optional(JsonObject),
    id: Schema.optional(Schema.String)
  })),
  functionResponse: Schema.optional(Schema.Struct({
    name: Schema.String,
    response: Schema.optional(JsonObject),
    id: Schema.optional(Schema.String),
    parts: Schema.optional(Schema.Array(Schema.Struct({
      inlineData: Schema.optional(Blob),
      fileData: Schema.optional(FileData)
    })))
  }))
})

/**
 * A decoded wire part (`WirePart.Type`).
 *
 * @category schemas
 */
export type WirePart = typeof WirePart.Type

/**
 * A JSON object as written to the wire (request or response body fragment).
 *
 * @category models
 */
export type WireJson = Record<string, unknown>

/**
 * The canonical id of a Gemini function call: the vendor's `id` when it sent
 * one, else `call_<name>_<n>` with `n` the 0-based ordinal of the call in the
 * request or response (deterministic, so a replayed body gives the same ids).
 *
 * @category decoding
 */
export const callIdFor = (id: string | undefined, name: string, ordinal: number): string =>
  id !== undefined && id !== "" ? id : `call_${name}_${ordinal}`

const audioFormats: Readonly<Record<string, string>> = { mpeg: "mp3", "x-wav": "wav", wave: "wav" }

const subtypeOf = (mimeType: string): string => mimeType.slice(mimeType.indexOf("/") + 1).split(";")[0]

/**
 * `inlineData` → canonical media part: `image/*` → image, `audio/*` → audio
 * whose `format` is the subtype (`audio/wav` → `wav`, `audio/mpeg` → `mp3`),
 * anything else → file.
 *
 * @category decoding
 */
export const decodeInlineData = (blob: { readonly mimeType: string; readonly data: string }): Part => {
  const mimeType = blob.mimeType.toLowerCase()
  if (mimeType.startsWith("image/")) {
    return { type: "image", source: { kind: "base64", mediaType: blob.mimeType, data: blob.data } }
  }
  if (mimeType.startsWith("audio/")) {
    const subtype = subtypeOf(mimeType)
    return { type: "audio", data: blob.data, format: audioFormats[subtype] ?? subtype }
  }
  return { type: "file", source: { kind: "base64", mediaType: blob.mimeType, data: blob.data } }
}

/**
 * `fileData` → canonical image (`image/*`) or file, with a URL source. The
 * media type of a URL source is not canonical; encoding guesses it again from
 * the URL's extension.
 *
 * @category decoding
 */
export const decodeFileData = (file: { readonly mimeType?: string | undefined; readonly fileUri: string }): Part =>
  (file.mimeType ?? "").toLowerCase().startsWith("image/")
    ? { type: "image", source: { kind: "url", url: file.fileUri } }
    : { type: "file", source: { kind: "url", url: file.fileUri } }

/**
 * Reads a `thoughtSignature`: the token to keep and the vendor family that
 * minted it.
 *
 * @category decoding
 */
export type SignatureReader = (value: string) => { readonly origin: ReasoningOrigin; readonly token: string }

/**
 * A signature in an upstream's answer: Gemini's own.
 *
 * @category decoding
 */
export const upstreamSignature: SignatureReader = (value) => ({ origin: "gemini", token: value })

/**
 * A signature a caller sent back: `sluice.<origin>.<token>` names another
 * vendor's token, anything else is Gemini's (`ReasoningOrigin.ts`).
 *
 * @category decoding
 */
export const clientSignature: SignatureReader = (value) => unwrapToken(value, "gemini")

/**
 * Wire parts → canonical parts, following the signature convention of this
 * module; each signature is read by `readSignature` (token and origin).
 * `functionResponse` parts are skipped (the request decoder turns them into
 * `tool` messages). `firstCall` is the ordinal given to the first function
 * call without an id; the result says the next one.
 *
 * @category decoding
 */
export const decodeParts = (
  wireParts: ReadonlyArray<WirePart>,
  firstCall: number,
  readSignature: SignatureReader
): { readonly parts: ReadonlyArray<Part>; readonly nextCall: number } => {
  const withSignature = (
    part: { readonly type: "reasoning"; readonly text: string },
    signature: string | undefined
  ): ReasoningPart => {
    if (signature === undefined) return part
    const read = readSignature(signature)
    return { ...part, signature: read.token, origin: read.origin }
  }
  const parts: Array<Part> = []
  let nextCall = firstCall
  // true while the last canonical part is an unsigned reasoning part built from thought parts
  let openThought = false
  for (const wire of wireParts) {
    if (wire.thought === true && wire.functionCall === undefined) {
      const text = wire.text ?? ""
      const last = parts[parts.length - 1]
      if (openThought && last !== undefined && last.type === "reasoning") {
        parts[parts.length - 1] = withSignature({ type: "reasoning", text: last.text + text }, wire.thoughtSignature)
      } else {
        parts.push(withSignature({ type: "reasoning", text }, wire.thoughtSignature))
      }
      openThought = wire.thoughtSignature === undefined
      continue
    }
    openThought = false
    const part = decodeDataPart(wire, nextCall)
    if (part === undefined) continue
    if (part.type === "tool-call") nextCall += 1
    if (wire.thoughtSignature !== undefined) {
      parts.push(withSignature({ type: "reasoning", text: "" }, wire.thoughtSignature))
    }
    parts.push(part)
  }
  return { parts, nextCall }
}

const decodeDataPart = (wire: WirePart, ordinal: number): Part | undefined => {
  if (wire.functionCall !== undefined) {
    const call = wire.functionCall
    return {
      type: "tool-call",
      callId: callIdFor(call.id, call.name, ordinal),
      name: call.name,
      arguments: JSON.stringify(call.args ?? {})
    }
  }
  if (wire.inlineData !== undefined) return decodeInlineData(wire.inlineData)
  if (wire.fileData !== undefined) return decodeFileData(wire.fileData)
  if (wire.text !== undefined) return { type: "text", text: wire.text }
  return undefined
}

const mimeByExtension: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
  txt: "text/plain",
  html: "text/html",
  csv: "text/csv",
  md: "text/markdown",
  json: "application/json",
  mp3: "audio/mp3",
  wav: "audio/wav",
  ogg: "audio/ogg",
  flac: "audio/flac",
  aac: "audio/aac",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/mov"
}

/**
 * Guesses a URL's media type from its path extension (`…/cat.PNG?x=1` →
 * `image/png`), or returns `fallback`.
 *
 * @category encoding
 */
export const guessMimeType = (url: string, fallback: string): string => {
  const path = url.split(/[?#]/)[0]
  const dot = path.lastIndexOf(".")
  if (dot < 0 || dot < path.lastIndexOf("/")) return fallback
  return mimeByExtension[path.slice(dot + 1).toLowerCase()] ?? fallback
}

/**
 * A media source → `{inlineData: {mimeType, data}}` (Base64 or a Base64 data
 * URI) or `{fileData: {mimeType, fileUri}}` (any other URL; media type guessed
 * from the extension, else `fallbackMime`).
 *
 * @category encoding
 */
export const encodeMedia = (source: MediaSource, fallbackMime: string): WireJson => {
  if (source.kind === "base64") return { inlineData: { mimeType: source.mediaType, data: source.data } }
  const inline = parseDataUri(source.url)
  if (inline !== undefined) {
    return { inlineData: { mimeType: inline.mediaType, data: inline.data } }
  }
  return { fileData: { mimeType: guessMimeType(source.url, fallbackMime), fileUri: source.url } }
}

/**
 * Arguments JSON text → the `args` object of a `functionCall` (`{}` when the
 * text is not a JSON object, or nests deeper than `MAX_JSON_DEPTH`: it is a
 * caller's or an upstream's text, checked before it is parsed).
 *
 * @category encoding
 */
export const parseArguments = (text: string): WireJson => parseJsonObject(text) ?? {}

/**
 * Finds a tool's name for a tool result without one: `callId` → name of the
 * matching earlier tool call.
 *
 * @category models
 */
export type ToolNameLookup = (callId: string) => string | undefined

const encodeToolResult = (part: ToolResultPart, lookup: ToolNameLookup): WireJson => {
  const text = textOf(part.content)
  const parsed = parseJsonObject(text)
  const value: unknown = parsed ?? text
  const response = part.isError === true ? { error: value } : parsed ?? { result: text }
  const media = part.content
    .filter((item): item is ImagePart => item.type === "image")
    .map((image) => encodeMedia(image.source, "image/jpeg"))
  return {
    functionResponse: {
      name: part.name ?? lookup(part.callId) ?? "",
      response,
      id: part.callId,
      ...(media.length > 0 ? { parts: media } : {})
    }
  }
}

/** The JSON object of `text`; `undefined` when it is none or nests deeper than `MAX_JSON_DEPTH`. */
const parseJsonObject = (text: string): WireJson | undefined => {
  const parsed = parseJsonOrUndefined(text)
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as WireJson : undefined
}

/**
 * A `functionResponse` → canonical tool result: `content` is the JSON text of
 * `response` followed by the images among its media `parts`; `isError` is true
 * when `response` holds only an `error` key (the vendor's convention for a
 * failed call, ai.google.dev/gemini-api/docs/function-calling).
 *
 * @category decoding
 */
export const decodeFunctionResponse = (
  response: NonNullable<WirePart["functionResponse"]>,
  callId: string
): ToolResultPart => {
  const value = response.response ?? {}
  const media: Array<TextPart | ImagePart> = []
  for (const item of response.parts ?? []) {
    const part = item.inlineData !== undefined
      ? decodeInlineData(item.inlineData)
      : item.fileData !== undefined
      ? decodeFileData(item.fileData)
      : undefined
    if (part?.type === "image") media.push(part)
  }
  const keys = Object.keys(value)
  return {
    type: "tool-result",
    callId,
    name: response.name,
    content: [{ type: "text", text: JSON.stringify(value) }, ...media],
    ...(keys.length === 1 && keys[0] === "error" ? { isError: true } : {})
  }
}

/**
 * One canonical part → one wire part, or `undefined` for what the format
 * cannot carry (a redacted reasoning block without text). Signatures are
 * handled by `encodeParts`.
 *
 * @category encoding
 */
export const encodePart = (part: Part, lookup: ToolNameLookup): WireJson | undefined => {
  switch (part.type) {
    case "text":
      return { text: part.text }
    case "reasoning":
      return part.text === "" && part.redacted !== undefined && part.signature === undefined ? undefined : {
        text: part.text,
        thought: true,
        ...(part.signature !== undefined ? { thoughtSignature: part.signature } : {})
      }
    case "image":
      return encodeMedia(part.source, "image/jpeg")
    case "audio":
      return { inlineData: { mimeType: `audio/${part.format}`, data: part.data } }
    case "file":
      return encodeMedia(part.source, "application/octet-stream")
    case "tool-call":
      return { functionCall: { name: part.name, args: parseArguments(part.arguments), id: part.callId } }
    case "tool-result":
      return encodeToolResult(part, lookup)
  }
}

const isSignatureOnly = (part: Part): part is Part & { readonly type: "reasoning"; readonly signature: string } =>
  part.type === "reasoning" && part.text === "" && part.signature !== undefined

/**
 * Canonical parts → wire parts, re-attaching each signature-only reasoning
 * part's signature to the following non-reasoning part (see the module doc).
 *
 * @category encoding
 */
export const encodeParts = (parts: ReadonlyArray<Part>, lookup: ToolNameLookup): Array<WireJson> => {
  const out: Array<WireJson> = []
  let pending: string | undefined
  const flush = () => {
    if (pending !== undefined) out.push({ text: "", thought: true, thoughtSignature: pending })
    pending = undefined
  }
  for (const part of parts) {
    if (isSignatureOnly(part)) {
      flush()
      pending = part.signature
      continue
    }
    if (part.type === "reasoning") flush()
    const wire = encodePart(part, lookup)
    if (wire === undefined) continue
    if (pending !== undefined) {
      out.push({ ...wire, thoughtSignature: pending })
      pending = undefined
    } else {
      out.push(wire)
    }
  }
  flush()
  return out
}
