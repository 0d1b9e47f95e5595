/**
 * Base64 data URIs (`data:<media type>[;<parameter>…];base64,<data>`, RFC 2397),
 * the inline form every format accepts for images and files: the one parser
 * and builder the translators share.
 *
 * @since 0.1.0
 */

const dataUriPattern = /^data:([^;,]*)((?:;[^;,]*)*);base64,(.*)$/s

/**
 * Splits a Base64 data URI into its media type and data. A URI that names no
 * media type (`data:;base64,…`) takes `fallbackMediaType`, or is not accepted
 * when none is given. Anything else (an http(s) URL, a data URI that is not
 * Base64) gives `undefined`.
 *
 * @category decoding
 */
export const parseDataUri = (
  uri: string,
  fallbackMediaType?: string
): { readonly mediaType: string; readonly data: string } | undefined => {
  const match = dataUriPattern.exec(uri)
  if (match === null) return undefined
  const mediaType = match[1] === "" ? fallbackMediaType : match[1]
  return mediaType === undefined ? undefined : { mediaType, data: match[3] }
}

/**
 * Builds `data:<media type>;base64,<data>`.
 *
 * @category encoding
 */
export const toDataUri = (mediaType: string, data: string): string => `data:${mediaType};base64,${data}`
