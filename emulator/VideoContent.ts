/**
 * Serving a video's bytes as the vendors do: the whole file, or one byte range
 * when the request carries `Range: bytes=…` (RFC 9110 §14: `a-b`, `a-`, `-n`;
 * `206` with `Content-Range`, `416` with `Content-Range` naming only the size
 * when the range cannot be satisfied; a header naming several ranges, or one this
 * parser does not read, is ignored and the whole file sent, as §14.2 allows).
 *
 * @since 0.1.0
 */
import { type BytesReply, bytesReply } from "./Sse.ts"

/** A byte range, both ends inclusive. @category models */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/**
 * The range a `Range` header asks of a file of `size` bytes: `undefined` for
 * no header (or one to ignore), `"unsatisfiable"` for a range past the end.
 *
 * @category ranges
 */
export const rangeOf = (header: string | null, size: number): ByteRange | "unsatisfiable" | undefined => {
  if (header === null) return undefined
  const match = /^bytes=(\d{0,15})-(\d{0,15})$/.exec(header.trim())
  if (match === null || (match[1] === "" && match[2] === "")) return undefined
  if (match[1] === "") {
    const suffix = Number(match[2])
    if (suffix === 0) return "unsatisfiable"
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(match[1])
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1)
  if (start >= size || end < start) return "unsatisfiable"
  return { start, end }
}

/**
 * The reply carrying `bytes` of `contentType`, cut to the request's `Range`
 * header when it asks for one; always with `Accept-Ranges: bytes`.
 *
 * @category replies
 */
export const bytesWithRange = (
  bytes: Uint8Array<ArrayBuffer>,
  contentType: string,
  rangeHeader: string | null
): BytesReply => {
  const range = rangeOf(rangeHeader, bytes.length)
  if (range === undefined) return bytesReply(bytes, contentType, 200, { "accept-ranges": "bytes" })
  if (range === "unsatisfiable") {
    return bytesReply(new Uint8Array(0), contentType, 416, {
      "accept-ranges": "bytes",
      "content-range": `bytes */${bytes.length}`
    })
  }
  return bytesReply(bytes.slice(range.start, range.end + 1), contentType, 206, {
    "accept-ranges": "bytes",
    "content-range": `bytes ${range.start}-${range.end}/${bytes.length}`
  })
}
