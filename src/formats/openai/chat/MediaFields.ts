/**
 * Where a chat completions body holds media URLs: `image_url.url` of a
 * content part (platform.openai.com/docs/api-reference/chat/create, content
 * part `image_url`). A chat `file` part holds `file_data` or a `file_id`,
 * never a URL.
 *
 * @since 0.1.0
 */
import type { Request } from "../../../canonical/Request.ts"
import { dataUriOf, inlineInPlace } from "../../shared/InlineMedia.ts"
import {
  elementsOf,
  fieldOf,
  type MediaFields,
  type MediaParam,
  mediaParamFrom,
  withValueAt
} from "../../shared/MediaLocation.ts"
import { decodeChatRequest } from "./RequestDecoder.ts"

/**
 * `messages[i].content[j].image_url.url` for every content part.
 *
 * @category naming
 */
export const chatMediaFields: MediaFields = (body) =>
  elementsOf(fieldOf(body, "messages")).flatMap((message, index) =>
    elementsOf(fieldOf(message, "content")).map((_, position) => [
      "messages",
      index,
      "content",
      position,
      "image_url",
      "url"
    ])
  )

/**
 * The chat completions field of a canonical media item
 * (`messages[3].content[1].image_url.url`), see `MediaLocation.ts`.
 *
 * @category naming
 */
export const chatMediaParam: MediaParam = mediaParamFrom(chatMediaFields, decodeChatRequest)

/**
 * The caller's chat body with each `image_url.url` that `inlined` made inline
 * replaced by its `data:` URI (`detail` and every other field kept), see
 * `InlineMedia.ts`.
 *
 * @category inlining
 */
export const chatInlineInPlace: (raw: Record<string, unknown>, inlined: Request) => Record<string, unknown> =
  inlineInPlace(chatMediaFields, decodeChatRequest, (body, path, item) => withValueAt(body, path, dataUriOf(item)))
