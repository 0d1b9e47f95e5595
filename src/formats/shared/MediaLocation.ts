/**
 * Naming the caller's field that holds a canonical media item. A download
 * made for an inline-only channel fails on a canonical image or file; the
 * caller's 400 must name that item's field in the caller's own wire shape
 * (`messages[3].content[1].image_url.url`, `input[0].content[2].file_url`,
 * `contents[0].parts[1].file_data.file_uri`). A download that succeeded for a
 * same-format channel is written back into that field (`InlineMedia.ts`).
 *
 * Each format lists where media URLs sit in its wire shape (`MediaFields`);
 * which canonical item each one becomes is left to the format's own request
 * decoder, so no format's grouping of messages (a messages-format
 * `tool_result` split into a `tool` message, Responses items merged into one
 * assistant turn, a generate-content `systemInstruction`) is written twice:
 * every listed field is given a distinct marker URL, the marked body is
 * decoded, and the marker found at the canonical location names the field.
 * This runs only when a download has failed, or when downloads are written
 * back into the caller's body.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { Request } from "../../canonical/Request.ts"
import type { Decoded } from "./Decoded.ts"

/**
 * Where a media item sits in a canonical request: `message` and `part` index
 * `request.messages[message].content[part]`; `inner` indexes the content of a
 * tool result at that place.
 *
 * @category models
 */
export interface MediaLocation {
  readonly message: number
  readonly part: number
  readonly inner?: number | undefined
}

/**
 * A path into a caller's JSON body: object keys and array indexes.
 *
 * @category models
 */
export type WirePath = ReadonlyArray<string | number>

/**
 * A format's list of the fields of `body` that may hold a media URL, in any
 * order; paths that do not lead to a string are ignored.
 *
 * @category models
 */
export type MediaFields = (body: unknown) => ReadonlyArray<WirePath>

/**
 * A format's namer: the path of the caller's field holding the canonical
 * media item at `location` (`undefined` when it cannot be told: the body does
 * not decode, or no listed field became that item).
 *
 * @category models
 */
export type MediaParam = (body: unknown, location: MediaLocation) => string | undefined

/**
 * A path as the gateway's error `param`s spell it: `messages[3].content[1].image_url.url`.
 *
 * @category naming
 */
export const pathText = (path: WirePath): string =>
  path.map((segment, index) => typeof segment === "number" ? `[${segment}]` : index === 0 ? segment : `.${segment}`)
    .join("")

/** The elements of `value` when it is an array, else none. */
export const elementsOf = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []

/** The own field `key` of `value` when it is a plain object, else `undefined`. */
export const fieldOf = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined

/**
 * The value at `path` in `body`, or `undefined` when the path leads nowhere.
 *
 * @category paths
 */
export const valueAt = (body: unknown, path: WirePath): unknown =>
  path.reduce<unknown>(
    (value, segment) => typeof segment === "number" ? elementsOf(value)[segment] : fieldOf(value, segment),
    body
  )

/**
 * `body` with `value` at `path`, copying only the objects and arrays along the
 * path (`body` itself is left as it is).
 *
 * @category paths
 */
export const withValueAt = (body: unknown, path: WirePath, value: unknown): unknown => {
  if (path.length === 0) return value
  const [head, ...rest] = path
  if (typeof head === "number") {
    const copy = [...elementsOf(body)]
    copy[head] = withValueAt(copy[head], rest, value)
    return copy
  }
  const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) }
  Object.defineProperty(copy, head, {
    value: withValueAt(fieldOf(body, head), rest, value),
    enumerable: true,
    writable: true,
    configurable: true
  })
  return copy
}

/**
 * The URL of the media item at `location`, when an image or file with a URL
 * source sits there.
 *
 * @category naming
 */
export const mediaUrlAt = (request: Request, location: MediaLocation): string | undefined => {
  const part = request.messages[location.message]?.content[location.part]
  const item = location.inner === undefined
    ? part
    : part?.type === "tool-result"
    ? part.content[location.inner]
    : undefined
  return (item?.type === "image" || item?.type === "file") && item.source.kind === "url" ? item.source.url : undefined
}

const MARKER = "https://media-field.invalid/"

/**
 * Each listed media field of `body` that holds a string, with the canonical
 * place of the item it becomes (see the module doc): every field is given a
 * distinct marker URL and the marked body decoded with the format's own
 * decoder. Empty when the marked body does not decode.
 *
 * @category naming
 */
export const mediaFieldLocations = (
  fields: MediaFields,
  decode: (body: unknown, context: { readonly model?: string | undefined }) => Decoded<Request>,
  body: unknown
): ReadonlyArray<{ readonly path: WirePath; readonly location: MediaLocation }> => {
  const paths = fields(body).filter((path) => typeof valueAt(body, path) === "string")
  if (paths.length === 0) return []
  const marked = paths.reduce<unknown>((value, path, index) => withValueAt(value, path, `${MARKER}${index}`), body)
  // The model from a generate-content path is not in the body; any name decodes the same messages.
  const decoded = decode(marked, { model: "media-field" })
  if (Result.isFailure(decoded)) return []
  const found: Array<{ readonly path: WirePath; readonly location: MediaLocation }> = []
  const visit = (url: string | undefined, location: MediaLocation) => {
    if (url === undefined || !url.startsWith(MARKER)) return
    const path = paths[Number(url.slice(MARKER.length))]
    if (path !== undefined) found.push({ path, location })
  }
  for (const [message, { content }] of decoded.success.messages.entries()) {
    for (const [part, item] of content.entries()) {
      visit(mediaUrlAt(decoded.success, { message, part }), { message, part })
      if (item.type === "tool-result") {
        for (const inner of item.content.keys()) {
          visit(mediaUrlAt(decoded.success, { message, part, inner }), { message, part, inner })
        }
      }
    }
  }
  return found
}

const sameLocation = (a: MediaLocation, b: MediaLocation): boolean =>
  a.message === b.message && a.part === b.part && a.inner === b.inner

/**
 * A format's `MediaParam` from where its wire shape holds media URLs and its
 * own request decoder (see the module doc).
 *
 * @category naming
 */
export const mediaParamFrom = (
  fields: MediaFields,
  decode: (body: unknown, context: { readonly model?: string | undefined }) => Decoded<Request>
): MediaParam =>
(body, location) => {
  const found = mediaFieldLocations(fields, decode, body).find((entry) => sameLocation(entry.location, location))
  return found === undefined ? undefined : pathText(found.path)
}
