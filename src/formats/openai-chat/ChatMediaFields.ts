/**
 * Where a chat completions body holds media URLs: `image_url.url` of a
 * content part (platform.openai.com/docs/api-reference/chat/create, content
 * part `image_url`). A chat `file` part holds `file_data` or a `file_id`,
 * never a URL.
 *
 * @since 0.1.0
 */
import { elementsOf, fieldOf, type MediaFields, type MediaParam, mediaParamFrom } from "../MediaLocation.ts"
import { decodeChatRequest } from "./ChatRequestDecode.ts"

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
