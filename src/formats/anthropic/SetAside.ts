/**
 * Content blocks of a messages-format body that Sluice does not model, set
 * aside before decoding: a same-format channel gets them as sent (the body is
 * forwarded, not rebuilt), and a translation is refused naming them
 * (`Request.untranslatable`). They are blocks of a type the decoder does not
 * read (`server_tool_use`, `web_search_tool_result`, `search_result`,
 * `container_upload`, …; `@anthropic-ai/sdk` 1.12 `ContentBlockParam`) and
 * `image` or `document` blocks whose source is not one it reads (a Files-API
 * `{type: "file", file_id}` source, a `content` source).
 *
 * @since 0.1.0
 */
import type { Untranslatable } from "../../canonical/Request.ts"
import { safeVendorText } from "../../domain/Redact.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../Format.ts"

/** Block types `RequestSchema.ContentBlock` reads. */
const readBlocks: ReadonlySet<string> = new Set([
  "text",
  "image",
  "document",
  "thinking",
  "redacted_thinking",
  "tool_use",
  "tool_result"
])

/** Source types `RequestSchema` reads, per block type. */
const readSources: Readonly<Record<string, ReadonlySet<string>>> = {
  image: new Set(["base64", "url"]),
  document: new Set(["base64", "url", "text"])
}

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined

/** Why `block` is set aside (and the field to name), or `undefined` when the decoder reads it. */
const asideReason = (block: unknown, at: string): Untranslatable | undefined => {
  const type = objectOf(block)?.type
  if (typeof type !== "string") return undefined
  if (!readBlocks.has(type)) {
    return {
      param: at,
      message:
        `Content blocks of type "${
          safeVendorText(type, 40)
        }" reach only a messages-format upstream; this model's channel ` +
        "would need a translation, which cannot carry them."
    }
  }
  const sourceType = objectOf(objectOf(block)?.source)?.type
  const sources = readSources[type]
  if (sources === undefined || typeof sourceType !== "string" || sources.has(sourceType)) return undefined
  return {
    param: `${at}.source`,
    message:
      `${type} sources of type "${
        safeVendorText(sourceType, 40)
      }" (stored at the vendor or vendor-specific) reach only a ` +
      "messages-format upstream; this model's channel would need a translation, which cannot carry them."
  }
}

/**
 * `body` without the blocks Sluice does not model (a copy; `body` itself is
 * left as it is, and returned as is when nothing is set aside), what was set
 * aside, and a `restore` that gives a decoding failure of the copy the
 * caller's block indexes back.
 *
 * @category decoding
 */
export const setAside = (body: unknown): {
  readonly body: unknown
  readonly notes: ReadonlyArray<Untranslatable>
  readonly restore: <A>(decoded: Decoded<A>) => Decoded<A>
} => {
  const notes: Array<Untranslatable> = []
  const messages = objectOf(body)?.messages
  if (!Array.isArray(messages)) return { body, notes, restore: (decoded) => decoded }
  /** Per message, the caller's index of each kept block (only for messages that lost some). */
  const kept = new Map<number, ReadonlyArray<number>>()
  const copied = messages.map((message, index) => {
    const content = objectOf(message)?.content
    if (!Array.isArray(content)) return message
    const keep: Array<number> = []
    content.forEach((block, position) => {
      const reason = asideReason(block, `messages[${index}].content[${position}]`)
      if (reason === undefined) keep.push(position)
      else notes.push(reason)
    })
    if (keep.length === content.length) return message
    kept.set(index, keep)
    return { ...objectOf(message), content: keep.map((position) => content[position]) }
  })
  if (notes.length === 0) return { body, notes, restore: (decoded) => decoded }
  const renumber = (text: string) =>
    text.replace(/messages\[(\d+)\]\.content\[(\d+)\]/g, (whole, message: string, block: string) => {
      const original = kept.get(Number(message))?.[Number(block)]
      return original === undefined ? whole : `messages[${message}].content[${original}]`
    })
  return {
    body: { ...objectOf(body), messages: copied },
    notes,
    restore: <A>(decoded: Decoded<A>): Decoded<A> => {
      if (decoded.ok) return decoded
      const { message, param, code } = decoded.error
      return {
        ok: false,
        error: new InvalidRequest({
          message: renumber(message),
          ...(param === undefined ? {} : { param: renumber(param) }),
          ...(code === undefined ? {} : { code })
        })
      }
    }
  }
}
