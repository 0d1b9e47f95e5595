/**
 * Where a generate-content body holds media URLs: `fileData.fileUri` of a
 * part, also in a `functionResponse`'s `parts`
 * (ai.google.dev/api/caching#Part, #FileData, #FunctionResponse), in either
 * spelling the decoder reads (`file_data.file_uri` too), so the field is
 * named as the caller wrote it.
 *
 * @since 0.1.0
 */
import type { Request } from "../../../canonical/Request.ts"
import { inlineInPlace, type MediaPatch } from "../../shared/InlineMedia.ts"
import {
  elementsOf,
  fieldOf,
  type MediaFields,
  type MediaParam,
  mediaParamFrom,
  valueAt,
  type WirePath,
  withValueAt
} from "../../shared/MediaLocation.ts"
import { decodeGeminiRequest } from "./RequestCodec.ts"

const fileDataKeys = ["fileData", "file_data"] as const
const fileUriKeys = ["fileUri", "file_uri"] as const
const responseKeys = ["functionResponse", "function_response"] as const

/** The URI fields of one part at `path`, in both spellings. */
const uriFields = (path: WirePath): ReadonlyArray<WirePath> =>
  fileDataKeys.flatMap((data) => fileUriKeys.map((uri) => [...path, data, uri]))

/**
 * `contents[i].parts[j].fileData.fileUri` and
 * `contents[i].parts[j].functionResponse.parts[k].fileData.fileUri`, each in
 * both spellings.
 *
 * @category naming
 */
export const geminiMediaFields: MediaFields = (body) =>
  elementsOf(fieldOf(body, "contents")).flatMap((content, index) =>
    elementsOf(fieldOf(content, "parts")).flatMap((part, position): ReadonlyArray<WirePath> => {
      const at: WirePath = ["contents", index, "parts", position]
      return [
        ...uriFields(at),
        ...responseKeys.flatMap((key) =>
          elementsOf(fieldOf(fieldOf(part, key), "parts")).flatMap((_, inner) =>
            uriFields([...at, key, "parts", inner])
          )
        )
      ]
    })
  )

/**
 * The generate-content field of a canonical media item
 * (`contents[0].parts[1].fileData.fileUri`), see `MediaLocation.ts`.
 *
 * @category naming
 */
export const geminiMediaParam: MediaParam = mediaParamFrom(geminiMediaFields, decodeGeminiRequest)

/**
 * A part's `fileData` becomes `inlineData {mimeType, data}` (`file_data`
 * becomes `inline_data {mime_type, data}`, the spelling the caller used); the
 * part's other fields (`thoughtSignature`, `videoMetadata`, …) are kept.
 */
const patchGeminiMedia: MediaPatch = (body, path, item) => {
  const dataKey = path.at(-2)
  const partPath = path.slice(0, -2)
  const part: Record<string, unknown> = { ...(valueAt(body, partPath) as Record<string, unknown>) }
  delete part[String(dataKey)]
  if (dataKey === "file_data") part.inline_data = { mime_type: item.mediaType, data: item.data }
  else part.inlineData = { mimeType: item.mediaType, data: item.data }
  return withValueAt(body, partPath, part)
}

/**
 * The caller's generate-content body with each `fileData` URL that `inlined`
 * made inline rewritten as `inlineData` in place (see `InlineMedia.ts`):
 * `safetySettings`, `cachedContent`, `generationConfig` and every other field
 * reach the upstream as sent.
 *
 * @category inlining
 */
export const geminiInlineInPlace: (raw: Record<string, unknown>, inlined: Request) => Record<string, unknown> =
  inlineInPlace(geminiMediaFields, decodeGeminiRequest, patchGeminiMedia)
