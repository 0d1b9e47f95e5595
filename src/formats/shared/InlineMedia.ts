/**
 * URL media made inline in the caller's own body, for a same-format channel
 * that takes only inline data (a gemini channel with `inline_images`): the
 * downloads are made on the canonical request, and each media field of the
 * caller's body whose item was made inline is rewritten in the format's own
 * inline form, so every other field of the body reaches the upstream exactly
 * as the caller sent it (a rebuild through the canonical form would keep only
 * what the canonical form models).
 *
 * @since 0.1.0
 */
import type { FilePart, ImagePart } from "../../canonical/Content.ts"
import type { Request } from "../../canonical/Request.ts"
import type { Decoded } from "../Format.ts"
import { mediaFieldLocations, type MediaFields, valueAt, type WirePath } from "./MediaLocation.ts"

/**
 * An image or file made inline: its Base64 source, and a file's name when it
 * has one (the caller's, or the last segment of its URL).
 *
 * @category models
 */
export interface InlinedItem {
  readonly mediaType: string
  readonly data: string
  readonly filename?: string | undefined
}

/**
 * A format's rewrite of one media field: `body` with the URL at `path` (one of
 * the format's `MediaFields`) replaced by `item` in the format's inline form.
 * Returns a new body; `body` is left as it is.
 *
 * @category models
 */
export type MediaPatch = (body: unknown, path: WirePath, item: InlinedItem) => unknown

/** The inlined item at the canonical place, when a URL there was made inline. */
const inlinedAt = (
  request: Request,
  location: { readonly message: number; readonly part: number; readonly inner?: number | undefined }
): InlinedItem | undefined => {
  const part = request.messages[location.message]?.content[location.part]
  const item: ImagePart | FilePart | undefined = location.inner === undefined
    ? (part?.type === "image" || part?.type === "file" ? part : undefined)
    : part?.type === "tool-result"
    ? (part.content[location.inner]?.type === "image" ? part.content[location.inner] as ImagePart : undefined)
    : undefined
  if (item === undefined || item.source.kind !== "base64") return undefined
  return {
    mediaType: item.source.mediaType,
    data: item.source.data,
    ...(item.type === "file" && item.filename !== undefined ? { filename: item.filename } : {})
  }
}

/**
 * A format's in-place inliner: `raw` (the caller's body, which `decode`
 * decoded) with each media field whose URL `inlined` (the canonical request
 * after the downloads) holds as Base64 rewritten by `patch`. Fields that held
 * a `data:` URI, and URLs left as they are (Gemini file references), are not
 * touched; nor is anything else in the body.
 *
 * @category inlining
 */
export const inlineInPlace = (
  fields: MediaFields,
  decode: (body: unknown, context: { readonly model?: string | undefined }) => Decoded<Request>,
  patch: MediaPatch
) =>
(raw: Record<string, unknown>, inlined: Request): Record<string, unknown> => {
  let body: unknown = raw
  for (const { path, location } of mediaFieldLocations(fields, decode, raw)) {
    const url = valueAt(raw, path)
    if (typeof url !== "string" || url.startsWith("data:")) continue
    const item = inlinedAt(inlined, location)
    if (item !== undefined) body = patch(body, path, item)
  }
  return body as Record<string, unknown>
}

/**
 * A `data:` URI of an inlined item (`data:image/png;base64,…`).
 *
 * @category inlining
 */
export const dataUriOf = (item: InlinedItem): string => `data:${item.mediaType};base64,${item.data}`
