/**
 * Reasoning signatures across format crossings (issue 3). A signature is an
 * opaque integrity token that only the vendor family that minted it accepts
 * back: Anthropic `thinking.signature` and `redacted_thinking.data`, Gemini
 * `thoughtSignature`, OpenAI Responses `reasoning.encrypted_content`. The real
 * APIs answer 400 to a foreign one (messages: "Invalid `signature` in
 * `thinking` block"; generate-content: "Corrupted thought signature."), so a
 * canonical reasoning part carries the `origin` of its token and every
 * translator follows four rules:
 *
 * - upstream decoders (answers and streams) set `origin` to their own family;
 * - client encoders of family W write a token of origin W (or of unknown
 *   origin) as is, and any other as `sluice.<origin>.<token>`, so it comes back
 *   through the client's next turn still naming its vendor; the value stays
 *   opaque to the client;
 * - client request decoders of family W read `sluice.<origin>.<token>` back
 *   into origin and token, and a plain token as origin W;
 * - upstream request encoders of family V send a token only when its origin is
 *   V (or unknown); otherwise the token is left out, and what that means for
 *   the reasoning part is the format's choice, listed in its dropped fields.
 *
 * The marker cannot be mistaken for a vendor token: those are Base64 or
 * URL-safe Base64, and `.` belongs to neither alphabet.
 *
 * @since 0.1.0
 */
import type { Part, ReasoningOrigin, ReasoningPart } from "../../canonical/Content.ts"
import type { Request } from "../../canonical/Request.ts"
import type { StreamPart } from "../../canonical/StreamPart.ts"
import type { FormatName } from "../Format.ts"

/**
 * The first label of a wrapped token: `sluice.<origin>.<token>`.
 *
 * @category constants
 */
export const SIGNATURE_MARKER = "sluice"

/**
 * The family whose tokens a wire format carries; undefined for formats with
 * no field for a reasoning token (chat completions, completions).
 *
 * @category models
 */
export const familyOfFormat: Readonly<Record<FormatName, ReasoningOrigin | undefined>> = {
  "anthropic": "anthropic",
  "gemini": "gemini",
  "openai-responses": "openai",
  "openai-chat": undefined,
  "completions": undefined
}

const WRAPPED = /^sluice\.(anthropic|gemini|openai)\.([\s\S]*)$/

/**
 * A token as a client of `family` receives it: unchanged when `origin` is
 * `family` or unknown, else `sluice.<origin>.<token>`.
 *
 * @category encoding
 */
export const wrapToken = (token: string, origin: ReasoningOrigin | undefined, family: ReasoningOrigin): string =>
  origin === undefined || origin === family ? token : `${SIGNATURE_MARKER}.${origin}.${token}`

/**
 * A token a client of `family` sent back: a wrapped one gives the origin and
 * token it names, a plain one is `family`'s own.
 *
 * @category decoding
 */
export const unwrapToken = (
  token: string,
  family: ReasoningOrigin
): { readonly origin: ReasoningOrigin; readonly token: string } => {
  const match = WRAPPED.exec(token)
  return match === null ? { origin: family, token } : { origin: match[1] as ReasoningOrigin, token: match[2] }
}

/**
 * True when the part holds a signature or redacted data that a vendor other
 * than `family` minted (a part of unknown origin is never foreign).
 *
 * @category models
 */
export const isForeignReasoning = (part: Part, family: ReasoningOrigin): boolean =>
  part.type === "reasoning" && part.origin !== undefined && part.origin !== family &&
  (part.signature !== undefined || part.redacted !== undefined)

/**
 * A reasoning part ready for a client of `family`: its signature and redacted
 * data wrapped when foreign (see `wrapToken`). Other parts are returned as is.
 *
 * @category encoding
 */
export const forClient = <P extends Part>(part: P, family: ReasoningOrigin): P => {
  if (part.type !== "reasoning" || !isForeignReasoning(part, family)) return part
  const reasoning: ReasoningPart = part
  return {
    ...reasoning,
    ...(reasoning.signature === undefined ? {} : { signature: wrapToken(reasoning.signature, part.origin, family) }),
    ...(reasoning.redacted === undefined ? {} : { redacted: wrapToken(reasoning.redacted, part.origin, family) })
  } as P
}

/**
 * A stream part ready for a client of `family`: the token of a
 * `ReasoningSignature` or `RedactedReasoning` wrapped when foreign.
 *
 * @category encoding
 */
export const streamPartForClient = (part: StreamPart, family: ReasoningOrigin): StreamPart => {
  switch (part._tag) {
    case "ReasoningSignature":
      return { ...part, signature: wrapToken(part.signature, part.origin, family) }
    case "RedactedReasoning":
      return { ...part, data: wrapToken(part.data, part.origin, family) }
    default:
      return part
  }
}

/**
 * A reasoning part read from a client of `family`, with its token unwrapped
 * and its origin set (`signature` or `redacted`, whichever the wire block
 * held; an empty signature counts as none).
 *
 * @category decoding
 */
export const reasoningFromClient = (
  text: string,
  token: { readonly signature?: string | undefined; readonly redacted?: string | undefined },
  family: ReasoningOrigin
): ReasoningPart => {
  if (token.redacted !== undefined) {
    const read = unwrapToken(token.redacted, family)
    return { type: "reasoning", text, redacted: read.token, origin: read.origin }
  }
  if (token.signature === undefined || token.signature === "") return { type: "reasoning", text }
  const read = unwrapToken(token.signature, family)
  return { type: "reasoning", text, signature: read.token, origin: read.origin }
}

/**
 * The label that marks redacted data in a format whose reasoning has one
 * opaque field (Responses `encrypted_content`): `sluice.<origin>.redacted.<data>`.
 * No vendor token contains a `.`, so a signature never reads as redacted data.
 *
 * @category constants
 */
export const REDACTED_LABEL = "redacted"

/**
 * Redacted reasoning data (Anthropic `redacted_thinking.data`) as a client of a
 * format with one opaque field receives it: always marked, as
 * `sluice.<origin>.redacted.<data>`, since no other vendor has redacted blocks.
 *
 * @category encoding
 */
export const redactedToken = (data: string, origin: ReasoningOrigin | undefined): string =>
  `${SIGNATURE_MARKER}.${origin ?? "anthropic"}.${REDACTED_LABEL}.${data}`

const REDACTED = new RegExp(`^${SIGNATURE_MARKER}\\.(anthropic|gemini|openai)\\.${REDACTED_LABEL}\\.([\\s\\S]*)$`)

/**
 * A reasoning part read from a client of `family` whose format has one opaque
 * field for it: redacted data when the token is `redactedToken`'s, else as
 * `reasoningFromClient` reads a signature.
 *
 * @category decoding
 */
export const reasoningFromOpaqueToken = (
  text: string,
  token: string | undefined,
  family: ReasoningOrigin
): ReasoningPart => {
  const redacted = token === undefined ? null : REDACTED.exec(token)
  if (redacted !== null) {
    return { type: "reasoning", text, redacted: redacted[2], origin: redacted[1] as ReasoningOrigin }
  }
  return reasoningFromClient(text, { signature: token }, family)
}

/**
 * A part on its way to an upstream of `family`: a foreign reasoning part loses
 * its signature, redacted data and origin (keeping its text); any other part
 * is returned as is.
 *
 * @category encoding
 */
export const forUpstream = <P extends Part>(part: P, family: ReasoningOrigin): P =>
  part.type === "reasoning" && isForeignReasoning(part, family) ? { type: "reasoning", text: part.text } as P : part

/**
 * True when a request holds reasoning whose token a vendor other than the
 * family of `format` minted. A request decoded from a client of that same
 * format then holds `sluice.<origin>.…` values no vendor accepts, so it is
 * never forwarded as the client wrote it: the format's passthrough leaves the
 * foreign tokens out in place (`Passthrough.withoutForeignReasoning`), or the
 * request is translated (the encoder leaves them out). False for formats
 * without reasoning tokens.
 *
 * @category models
 */
export const hasForeignReasoning = (request: Request, format: FormatName): boolean => {
  const family = familyOfFormat[format]
  if (family === undefined) return false
  return request.messages.some((message) => message.content.some((part) => isForeignReasoning(part, family)))
}
