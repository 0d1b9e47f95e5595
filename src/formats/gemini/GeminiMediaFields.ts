/**
 * Where a generate-content body holds media URLs: `fileData.fileUri` of a
 * part, also in a `functionResponse`'s `parts`
 * (ai.google.dev/api/caching#Part, #FileData, #FunctionResponse), in either
 * spelling the decoder reads (`file_data.file_uri` too), so the field is
 * named as the caller wrote it.
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
import { decodeGeminiRequest } from "./GeminiRequest.ts"

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
