/**
 * Prompt-cache breakpoints of a canonical request (`CacheBreakpoint` in `canonical/Content.ts`), in the order the
 * vendors read the prompt (tools, then system, then messages; docs.anthropic.com/en/docs/build-with-claude/
 * prompt-caching, "cache prefixes are created in the following order: tools, system, then messages"), and the rule
 * for how many an encoder sends: at most `MAX_CACHE_BREAKPOINTS`, the last ones kept.
 *
 * @since 0.1.0
 */
import type { CacheBreakpoint, Part } from "../../canonical/Content.ts"
import type { Request } from "../../canonical/Request.ts"

/**
 * The most breakpoints one request may carry: Anthropic refuses more (prompt-caching docs: up to 4 cache breakpoints;
 * the API answers 400 "A maximum of 4 blocks with cache_control may be provided. Found 5."), and Bedrock's Converse
 * allows four `cachePoint` checkpoints a request as well (docs.aws.amazon.com/bedrock/latest/userguide/
 * prompt-caching.html, the supported-models table).
 *
 * @category constants
 */
export const MAX_CACHE_BREAKPOINTS = 4

/** Something that may carry a breakpoint: a content part (nested tool-result parts included) or a function tool. */
type Marked = { readonly cache?: CacheBreakpoint | undefined }

/**
 * The breakpoint `part` carries, if any (audio and reasoning parts carry none: Anthropic takes no `cache_control` on
 * thinking blocks).
 *
 * @category accessors
 */
export const cacheOfPart = (part: Part): CacheBreakpoint | undefined => "cache" in part ? part.cache : undefined

/** Every marked element of `request`, in prompt order: tools, then system messages' parts, then the other messages'. */
const markedInOrder = (request: Request): ReadonlyArray<Marked> => {
  const tools: ReadonlyArray<Marked> = (request.tools ?? []).flatMap((tool) =>
    tool.type === "function" && tool.cache !== undefined ? [tool] : []
  )
  const partsOf = (parts: ReadonlyArray<Part>): ReadonlyArray<Marked> =>
    parts.flatMap((part): ReadonlyArray<Marked> => [
      ...(cacheOfPart(part) !== undefined ? [part as Marked] : []),
      ...(part.type === "tool-result" ? part.content.filter((inner) => inner.cache !== undefined) : [])
    ])
  const system = request.messages.filter((message) => message.role === "system")
  const rest = request.messages.filter((message) => message.role !== "system")
  return [
    ...tools,
    ...system.flatMap((message) => partsOf(message.content)),
    ...rest.flatMap((message) => partsOf(message.content))
  ]
}

/**
 * Whether `request` carries any prompt-cache breakpoint (what an encoder without breakpoints lists as the dropped
 * field `cache`).
 *
 * @category predicates
 */
export const hasCacheBreakpoints = (request: Request): boolean => markedInOrder(request).length > 0

/**
 * The breakpoints an encoder sends and how many it leaves out: the last `MAX_CACHE_BREAKPOINTS` marked elements in
 * prompt order (the later a breakpoint, the longer the prefix it caches, and the last one covers everything before
 * it), compared by identity with the request's own parts and tools; `overLimit` counts the earlier ones left out
 * (listed as the dropped field `cache.overLimit`).
 *
 * @category encoding
 */
export const keptCacheBreakpoints = (
  request: Request
): { readonly kept: ReadonlySet<object>; readonly overLimit: number } => {
  const marked = markedInOrder(request)
  const overLimit = Math.max(0, marked.length - MAX_CACHE_BREAKPOINTS)
  return { kept: new Set(marked.slice(overLimit)), overLimit }
}

/**
 * The TTL field of a kept breakpoint in the vendors' spelling (`ttl`, the same key in Anthropic's `cache_control` and
 * Converse's `CachePointBlock`): present only when the caller named one.
 *
 * @category encoding
 */
export const ttlField = (cache: CacheBreakpoint): { readonly ttl?: "5m" | "1h" } =>
  cache.ttl === undefined ? {} : { ttl: cache.ttl }
