/**
 * Where a messages-format body holds media URLs: `source.url` of an `image`
 * or `document` block with a `url` source, also inside a `tool_result`'s
 * `content` (docs.anthropic.com/en/api/messages, content blocks).
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
import { decodeRequest } from "./RequestDecoder.ts"

/**
 * `messages[i].content[j].source.url` and `messages[i].content[j].content[k].source.url`.
 *
 * @category naming
 */
export const anthropicMediaFields: MediaFields = (body) =>
  elementsOf(fieldOf(body, "messages")).flatMap((message, index) =>
    elementsOf(fieldOf(message, "content")).flatMap((block, position): ReadonlyArray<WirePath> => [
      ["messages", index, "content", position, "source", "url"],
      ...elementsOf(fieldOf(block, "content")).map((_, inner) => [
        "messages",
        index,
        "content",
        position,
        "content",
        inner,
        "source",
        "url"
      ])
    ])
  )

/**
 * The messages-format field of a canonical media item
 * (`messages[2].content[0].content[1].source.url`), see `MediaLocation.ts`.
 *
 * @category naming
 */
export const anthropicMediaParam: MediaParam = mediaParamFrom(anthropicMediaFields, decodeRequest)
