/**
 * Where a Responses body holds media URLs: `image_url` of an `input_image`
 * and `file_url` of an `input_file`, in a message item's `content` and in a
 * `function_call_output`'s `output` list
 * (platform.openai.com/docs/api-reference/responses/create, input items).
 *
 * @since 0.1.0
 */
import type { Request } from "../../../canonical/Request.ts"
import { dataUriOf, inlineInPlace, type MediaPatch } from "../../shared/InlineMedia.ts"
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
import { decodeResponsesRequest } from "./RequestDecoder.ts"

/**
 * `input[i].content[j].image_url`, `….file_url`, and the same under `input[i].output[k]`.
 *
 * @category naming
 */
export const responsesMediaFields: MediaFields = (body) =>
  elementsOf(fieldOf(body, "input")).flatMap((item, index) =>
    (["content", "output"] as const).flatMap((list) =>
      elementsOf(fieldOf(item, list)).flatMap((_, position): ReadonlyArray<WirePath> => [
        ["input", index, list, position, "image_url"],
        ["input", index, list, position, "file_url"]
      ])
    )
  )

/**
 * The Responses field of a canonical media item (`input[0].content[2].file_url`),
 * see `MediaLocation.ts`.
 *
 * @category naming
 */
export const responsesMediaParam: MediaParam = mediaParamFrom(responsesMediaFields, decodeResponsesRequest)

/**
 * An `input_image`'s `image_url` becomes the `data:` URI; an `input_file`'s
 * `file_url` becomes `file_data` (a `data:` URI) with a `filename` (the API
 * wants one with `file_data`).
 */
const patchResponsesMedia: MediaPatch = (body, path, item) => {
  if (path.at(-1) === "image_url") return withValueAt(body, path, dataUriOf(item))
  const partPath = path.slice(0, -1)
  const { file_url: _url, ...part } = valueAt(body, partPath) as Record<string, unknown>
  const filename = typeof part.filename === "string" ? part.filename : item.filename ?? "file"
  return withValueAt(body, partPath, { ...part, file_data: dataUriOf(item), filename })
}

/**
 * The caller's Responses body with each media URL that `inlined` made inline
 * rewritten in place (see `patchResponsesMedia` and `InlineMedia.ts`).
 *
 * @category inlining
 */
export const responsesInlineInPlace: (raw: Record<string, unknown>, inlined: Request) => Record<string, unknown> =
  inlineInPlace(responsesMediaFields, decodeResponsesRequest, patchResponsesMedia)
