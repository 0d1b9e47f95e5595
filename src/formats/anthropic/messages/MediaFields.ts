/**
 * Where a messages-format body holds media URLs: `source.url` of an `image`
 * or `document` block with a `url` source, also inside a `tool_result`'s
 * `content` (docs.anthropic.com/en/api/messages, content blocks).
 *
 * @since 0.1.0
 */
import type { Request } from "../../../canonical/Request.ts"
import { inlineInPlace } from "../../shared/InlineMedia.ts"
import {
  elementsOf,
  fieldOf,
  type MediaFields,
  type MediaParam,
  mediaParamFrom,
  type WirePath,
  withValueAt
} from "../../shared/MediaLocation.ts"
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

/**
 * The caller's messages body with each `url` source that `inlined` made
 * inline replaced by a `base64` source (`{type: "base64", media_type, data}`),
 * the block's other fields kept (see `InlineMedia.ts`).
 *
 * @category inlining
 */
export const anthropicInlineInPlace: (raw: Record<string, unknown>, inlined: Request) => Record<string, unknown> =
  inlineInPlace(
    anthropicMediaFields,
    decodeRequest,
    (body, path, item) =>
      withValueAt(body, path.slice(0, -1), { type: "base64", media_type: item.mediaType, data: item.data })
  )
