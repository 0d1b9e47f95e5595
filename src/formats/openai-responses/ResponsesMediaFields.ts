/**
 * Where a Responses body holds media URLs: `image_url` of an `input_image`
 * and `file_url` of an `input_file`, in a message item's `content` and in a
 * `function_call_output`'s `output` list
 * (platform.openai.com/docs/api-reference/responses/create, input items).
 *
 * @since 0.1.0
 */
import {
  elementsOf,
  fieldOf,
  type MediaFields,
  type MediaParam,
  mediaParamFrom,
  type WirePath
} from "../MediaLocation.ts"
import { decodeResponsesRequest } from "./ResponsesRequestDecoder.ts"

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
