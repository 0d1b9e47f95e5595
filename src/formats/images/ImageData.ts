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

/** Whether `value` is a JSON object (not null, not an array). @category parsing */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
