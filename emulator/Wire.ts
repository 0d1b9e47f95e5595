/**
 * Shared helpers of the vendor emulator routes: reading untrusted JSON without
 * throwing, the per-request context a route receives, and id generation.
 *
 * @since 0.1.0
 */
import type { ToolCallMode } from "./Answer.ts"
import type { Reply } from "./Sse.ts"
import type { MjTasks } from "./MidjourneyTasks.ts"
import type { VideoTasks } from "./VideoTasks.ts"

/** A JSON object (string keys, unknown values). @category models */
export type JsonObject = Record<string, unknown>

/** True for a non-array, non-null object. @category guards */
export const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `value` when it is an object, else an empty object. @category readers */
export const objectOr = (value: unknown): JsonObject => isObject(value) ? value : {}

/** `value` when it is an array, else an empty array. @category readers */
export const arrayOr = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []

/** `value` when it is a string, else `undefined`. @category readers */
export const stringOr = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** `value` when it is a finite number, else `undefined`. @category readers */
export const numberOr = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined

/** A `stop` field that is a string or an array of strings, as an array. @category readers */
export const stopList = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : arrayOr(value).filter((item): item is string => typeof item === "string")

/**
 * Image descriptor for a URL: the URL itself for http(s), the media type for a
 * `data:` URI (`data:image/png;base64,…` → `image/png`).
 *
 * @category readers
 */
export const describeImageUrl = (url: string): string => {
  if (url.startsWith("data:")) {
    const end = url.search(/[;,]/)
    return end > 5 ? url.slice(5, end) : "application/octet-stream"
  }
  return url
}

/** Deterministic id source: `prefix` + a per-emulator counter. @category models */
export interface Ids {
  readonly next: (prefix: string) => string
}

/** Makes a counter-backed id source (`chatcmpl-emu0000001`, …). @category constructors */
export const makeIds = (): Ids => {
  let counter = 0
  return { next: (prefix) => `${prefix}emu${(++counter).toString().padStart(7, "0")}` }
}

/**
 * The prompt prefixes a vendor with an automatic context cache has seen (DeepSeek's disk cache,
 * api-docs.deepseek.com/guides/kv_cache): keys of message prefixes, forgotten on reset and past `limit`.
 *
 * @category models
 */
export interface PromptCache {
  readonly seen: Set<string>
  readonly limit: number
}

/** An empty prompt cache holding at most `limit` prefixes (all forgotten when full). @category constructors */
export const makePromptCache = (limit = 10_000): PromptCache => ({ seen: new Set(), limit })

/** What a route handler receives for one request. @category models */
export interface RouteContext {
  readonly body: JsonObject
  readonly query: Record<string, string>
  readonly headers: Headers
  readonly path: string
  /** Model from the body, or from the path for Gemini. */
  readonly model: string
  readonly ids: Ids
  /** Epoch seconds of the request. */
  readonly created: number
  /** The emulator's video tasks (`VideoTasks.ts`), shared by the video task APIs. */
  readonly videos: VideoTasks
  /** The emulator's Midjourney tasks (`Midjourney.ts`). */
  readonly midjourney: MjTasks
  /** The prompt prefixes seen by the routes with a context cache (DeepSeek's); absent: nothing is cached. */
  readonly prompts?: PromptCache | undefined
  /** When offered tools get a call (`Answer.ts`, `ToolCallMode`); absent: `automatic`. */
  readonly toolCalls?: ToolCallMode | undefined
}

/**
 * A route handler: one request in, one reply out (a promise of it when the reply needs a library loaded on first use,
 * as Bedrock's event-stream codec). Pure apart from ids and the task stores. @category models
 */
export type Handler = (context: RouteContext) => Reply | Promise<Reply>

/** A field read in camelCase (what SDKs send) with its snake_case spelling as fallback. @category readers */
export const field = (object: JsonObject, camel: string, snake: string): unknown => object[camel] ?? object[snake]
