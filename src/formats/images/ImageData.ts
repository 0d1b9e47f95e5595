/**
 * Small helpers on image data shared by the image wire formats: URLs, a
 * media type guessed from Base64 magic bytes, JSON objects (data URIs are
 * `canonical/DataUri.ts`).
 *
 * @since 0.1.0
 */

/** Whether `value` is an `http(s)` URL. @category parsing */
export const isHttpUrl = (value: string): boolean => /^https?:\/\//i.test(value)

/**
 * The media type of Base64 image bytes from their first bytes (PNG, JPEG,
 * GIF, WebP), `image/png` when unknown.
 *
 * @category parsing
 */
export const sniffMediaType = (base64: string): string =>
  base64.startsWith("iVBOR")
    ? "image/png"
    : base64.startsWith("/9j/")
    ? "image/jpeg"
    : base64.startsWith("R0lGOD")
    ? "image/gif"
    : base64.startsWith("UklGR")
    ? "image/webp"
    : "image/png"

/**
 * The image type of bare Base64 bytes read from their magic numbers (PNG,
 * JPEG, GIF, WebP, BMP, TIFF: the formats Ark's image generation takes as
 * references, docs.byteplus.com/en/docs/ModelArk/1541523), or `undefined`
 * when the text is not Base64 or its bytes are no such image.
 *
 * @category parsing
 */
export const imageTypeOfBase64 = (text: string): string | undefined => {
  if (text.length < 16 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined
  let head: Uint8Array
  try {
    head = Uint8Array.from(atob(text.slice(0, 24)), (char) => char.charCodeAt(0))
  } catch {
    return undefined
  }
  const starts = (...bytes: ReadonlyArray<number>) => bytes.every((byte, index) => head[index] === byte)
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png"
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg"
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif"
  if (
    starts(0x52, 0x49, 0x46, 0x46) && head[8] === 0x57 && head[9] === 0x45 && head[10] === 0x42 && head[11] === 0x50
  ) {
    return "image/webp"
  }
  if (starts(0x42, 0x4d)) return "image/bmp"
  if (starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return "image/tiff"
  return undefined
}

/** Whether `value` is a JSON object (not null, not an array). @category parsing */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
