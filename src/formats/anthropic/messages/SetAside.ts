/**
 * What a messages-format body holds that Sluice does not model, set aside
 * before decoding (content blocks, and new values of known fields: a role,
 * thinking type or display, effort, tool choice type, a `cache_control` type or ttl): a same-format channel gets them as sent (the body is
 * forwarded, not rebuilt), and a translation is refused naming them
 * (`Request.untranslatable`). They are blocks of a type the decoder does not
 * read (`server_tool_use`, `web_search_tool_result`, `search_result`,
 * `container_upload`, …; `@anthropic-ai/sdk` 1.12 `ContentBlockParam`) and
 * `image` or `document` blocks whose source is not one it reads (a Files-API
 * `{type: "file", file_id}` source, a `content` source).
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { Untranslatable } from "../../../canonical/Request.ts"
import { safeVendorText } from "../../../domain/Redact.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import type { Decoded } from "../../Format.ts"

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

/** Values of known fields the decoder reads, by field; any other string value is set aside (see `setAsideValues`). */
const knownRoles: ReadonlySet<string> = new Set(["user", "assistant", "system"])
const knownThinking: ReadonlySet<string> = new Set(["enabled", "adaptive", "between_tools", "disabled"])
const knownDisplay: ReadonlySet<string> = new Set(["summarized", "omitted"])
const knownEffort: ReadonlySet<string> = new Set(["low", "medium", "high", "xhigh", "max"])
const knownToolChoice: ReadonlySet<string> = new Set(["auto", "any", "tool", "none"])
const knownCacheTypes: ReadonlySet<string> = new Set(["ephemeral"])
const knownCacheTtls: ReadonlySet<string> = new Set(["5m", "1h"])

/** The note for a value of a known field that only a messages-format upstream can take. */
const newValue = (param: string, value: string): Untranslatable => ({
  param,
  message:
    `The value "${
      safeVendorText(value, 40)
    }" of ${param} reaches only a messages-format upstream; this model's channel would need a translation, ` +
    "which cannot carry it."
})

/** A string that is not in `known` (`undefined` for anything else: the decoder judges those). */
const unknownIn = (known: ReadonlySet<string>, value: unknown): string | undefined =>
  typeof value === "string" && !known.has(value) ? value : undefined

/**
 * `value` (a block or a tool at `at`) without a `cache_control` whose `type` or `ttl` is a string the decoder does not
 * model (a new cache type or lifetime), noted; the text and image blocks inside a `tool_result`'s `content` are judged
 * the same way. `value` itself when nothing is set aside.
 */
const withoutNewCacheValues = (value: unknown, at: string, notes: Array<Untranslatable>): unknown => {
  const object = objectOf(value)
  if (object === undefined) return value
  let copy: Record<string, unknown> | undefined
  const control = objectOf(object.cache_control)
  const type = unknownIn(knownCacheTypes, control?.type)
  const ttl = unknownIn(knownCacheTtls, control?.ttl)
  if (type !== undefined || ttl !== undefined) {
    notes.push(
      type !== undefined ? newValue(`${at}.cache_control.type`, type) : newValue(`${at}.cache_control.ttl`, ttl!)
    )
    const { cache_control: _control, ...rest } = object
    copy = rest
  }
  if (object.type === "tool_result" && Array.isArray(object.content)) {
    const inner: ReadonlyArray<unknown> = object.content
    const judged = inner.map((block, index) => withoutNewCacheValues(block, `${at}.content[${index}]`, notes))
    if (judged.some((block, index) => block !== inner[index])) copy = { ...(copy ?? object), content: judged }
  }
  return copy ?? value
}

/** `list` (the body's `system` or `tools`) with `withoutNewCacheValues` applied to each item; `list` when unchanged. */
const listWithoutNewCacheValues = (list: unknown, field: string, notes: Array<Untranslatable>): unknown => {
  if (!Array.isArray(list)) return list
  const items: ReadonlyArray<unknown> = list
  const judged = items.map((item, index) => {
    // A server tool's definition is kept whole (a builtin tool), `cache_control` and all.
    const type = objectOf(item)?.type
    if (field === "tools" && typeof type === "string" && type !== "custom") return item
    return withoutNewCacheValues(item, `${field}[${index}]`, notes)
  })
  return judged.some((item, index) => item !== items[index]) ? judged : list
}

/**
 * The top-level fields of `body` whose value the decoder does not model: `thinking.type`, `thinking.display`,
 * `output_config.effort`, `effort`, `tool_choice.type`, and a new `cache_control` type or ttl (top-level, on a
 * `system` block or on a custom tool). Each is left out of the copy (the whole `thinking`, `tool_choice` or `cache_control` for a new
 * type) and noted.
 */
const setAsideValues = (body: Record<string, unknown>, notes: Array<Untranslatable>): Record<string, unknown> => {
  const copy = { ...body }
  const thinking = objectOf(body.thinking)
  const thinkingType = unknownIn(knownThinking, thinking?.type)
  if (thinkingType !== undefined) {
    notes.push(newValue("thinking.type", thinkingType))
    delete copy.thinking
  } else if (thinking !== undefined) {
    const display = unknownIn(knownDisplay, thinking.display)
    if (display !== undefined) {
      notes.push(newValue("thinking.display", display))
      const { display: _display, ...rest } = thinking
      copy.thinking = rest
    }
  }
  const outputConfig = objectOf(body.output_config)
  const configEffort = unknownIn(knownEffort, outputConfig?.effort)
  if (outputConfig !== undefined && configEffort !== undefined) {
    notes.push(newValue("output_config.effort", configEffort))
    const { effort: _effort, ...rest } = outputConfig
    copy.output_config = rest
  }
  const effort = unknownIn(knownEffort, body.effort)
  if (effort !== undefined) {
    notes.push(newValue("effort", effort))
    delete copy.effort
  }
  const choice = unknownIn(knownToolChoice, objectOf(body.tool_choice)?.type)
  if (choice !== undefined) {
    notes.push(newValue("tool_choice.type", choice))
    delete copy.tool_choice
  }
  const control = objectOf(body.cache_control)
  const controlType = unknownIn(knownCacheTypes, control?.type)
  const controlTtl = unknownIn(knownCacheTtls, control?.ttl)
  if (controlType !== undefined || controlTtl !== undefined) {
    notes.push(
      controlType !== undefined
        ? newValue("cache_control.type", controlType)
        : newValue("cache_control.ttl", controlTtl!)
    )
    delete copy.cache_control
  }
  for (const field of ["system", "tools"] as const) {
    const judged = listWithoutNewCacheValues(body[field], field, notes)
    if (judged !== body[field]) copy[field] = judged
  }
  return copy
}

/**
 * `body` without what Sluice does not model (a copy; `body` itself is left as it is, and returned as is when
 * nothing is set aside), what was set aside, and a `restore` that gives a decoding failure of the copy the
 * caller's message and block indexes back. Set aside: blocks of a type the decoder does not read (or with a
 * source it does not read), messages of a role other than `user`, `assistant` and `system`, the new values
 * of known top-level fields (`setAsideValues`), and a `cache_control` of a new type or ttl on a block.
 *
 * @category decoding
 */
export const setAside = (body: unknown): {
  readonly body: unknown
  readonly notes: ReadonlyArray<Untranslatable>
  readonly restore: <A>(decoded: Decoded<A>) => Decoded<A>
} => {
  const notes: Array<Untranslatable> = []
  const object = objectOf(body)
  if (object === undefined) return { body, notes, restore: (decoded) => decoded }
  const top = setAsideValues(object, notes)
  const messages = object.messages
  if (!Array.isArray(messages)) {
    return notes.length === 0
      ? { body, notes, restore: (decoded) => decoded }
      : { body: top, notes, restore: (decoded) => decoded }
  }
  /** Per message, the caller's index of each kept block (only for messages that lost some). */
  const kept = new Map<number, ReadonlyArray<number>>()
  /** The caller's index of each kept message. */
  const keptMessages: Array<number> = []
  const copied: Array<unknown> = []
  messages.forEach((message, index) => {
    const role = unknownIn(knownRoles, objectOf(message)?.role)
    if (role !== undefined) {
      notes.push(newValue(`messages[${index}].role`, role))
      return
    }
    const at = copied.length
    keptMessages.push(index)
    const content = objectOf(message)?.content
    if (!Array.isArray(content)) {
      copied.push(message)
      return
    }
    const keep: Array<number> = []
    const blocks: Array<unknown> = []
    content.forEach((block, position) => {
      const reason = asideReason(block, `messages[${index}].content[${position}]`)
      if (reason !== undefined) {
        notes.push(reason)
        return
      }
      keep.push(position)
      blocks.push(withoutNewCacheValues(block, `messages[${index}].content[${position}]`, notes))
    })
    if (keep.length === content.length && blocks.every((block, position) => block === content[position])) {
      copied.push(message)
      return
    }
    kept.set(at, keep)
    copied.push({ ...objectOf(message), content: blocks })
  })
  if (notes.length === 0) return { body, notes, restore: (decoded) => decoded }
  const renumber = (text: string) =>
    text.replace(/messages\[(\d+)\](?:\.content\[(\d+)\])?/g, (whole, message: string, block?: string) => {
      const originalMessage = keptMessages[Number(message)]
      if (originalMessage === undefined) return whole
      if (block === undefined) return `messages[${originalMessage}]`
      const original = kept.get(Number(message))?.[Number(block)] ?? Number(block)
      return `messages[${originalMessage}].content[${original}]`
    })
  return {
    body: { ...top, messages: copied },
    notes,
    restore: <A>(decoded: Decoded<A>): Decoded<A> => {
      if (Result.isSuccess(decoded)) return decoded
      const { message, param, code } = decoded.failure
      return Result.fail(
        new InvalidRequest({
          message: renumber(message),
          ...(param === undefined ? {} : { param: renumber(param) }),
          ...(code === undefined ? {} : { code })
        })
      )
    }
  }
}
