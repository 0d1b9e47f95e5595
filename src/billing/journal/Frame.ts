/**
 * The journal's framing: one frame per record or folded marker, laid end to end
 * in a segment file. Pure, no I/O.
 *
 * A frame is a 21-byte header followed by the payload. Integers are
 * little-endian.
 *
 * | offset | bytes | field                                                              |
 * | -----: | ----: | ------------------------------------------------------------------ |
 * |      0 |     4 | magic `SJNL` (`0x53 0x4a 0x4e 0x4c`)                               |
 * |      4 |     1 | kind: `1` record, `2` folded marker                                |
 * |      5 |     4 | payload length in bytes, u32, at most `MAX_PAYLOAD_BYTES` (64 MiB) |
 * |      9 |     8 | seq, u64, at most `Number.MAX_SAFE_INTEGER` (2^53 - 1)             |
 * |     17 |     4 | CRC-32 (zlib's) of bytes 4..17 (kind, length, seq), then payload   |
 * |     21 |     n | payload                                                            |
 *
 * A segment that ends inside a frame has a torn tail (a write cut short); a
 * frame whose magic, kind, length, seq or CRC is wrong is corrupt. Decoding
 * stops at the first of either, so what it returns is always a run of whole,
 * checked frames from the start.
 *
 * @since 0.1.0
 */
import { crc32 } from "node:zlib"

/**
 * What a frame holds: `record` (a payload the caller appended) or `folded`
 * (a marker: every record with seq up to the marker's seq is folded; its
 * payload is empty).
 *
 * @category models
 */
export type FrameKind = "record" | "folded"

/**
 * One decoded frame: its kind, its seq (a non-negative safe integer) and its
 * payload bytes.
 *
 * @category models
 */
export interface Frame {
  readonly kind: FrameKind
  readonly seq: number
  readonly payload: Uint8Array
}

/**
 * What `decodeFrames` found: the whole, checked frames from the start;
 * `goodLength`, the bytes from the start to the end of the last of them (a
 * frame boundary, `0` when there is none); `corrupt`, true when decoding
 * stopped at a corrupt frame, false when it reached the end or stopped at a
 * torn (incomplete) tail.
 *
 * @category models
 */
export interface Decoded {
  readonly frames: Array<Frame>
  readonly goodLength: number
  readonly corrupt: boolean
}

/**
 * Bytes of a frame header (magic, kind, length, seq, CRC): 21.
 *
 * @category constants
 */
export const HEADER_BYTES = 21

/**
 * The largest payload a frame may carry, in bytes (64 MiB). A header that
 * claims more is corrupt.
 *
 * @category constants
 */
export const MAX_PAYLOAD_BYTES = 64 * 1024 * 1024

const MAGIC = new Uint8Array([0x53, 0x4a, 0x4e, 0x4c])
const KIND_BYTE: Record<FrameKind, number> = { record: 1, folded: 2 }
const TWO_32 = 2 ** 32
/** The high 32 bits of `Number.MAX_SAFE_INTEGER`. */
const MAX_SEQ_HIGH = 0x1fffff

const checksum = (bytes: Uint8Array, offset: number, payloadLength: number): number =>
  crc32(
    bytes.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + payloadLength),
    crc32(bytes.subarray(offset + 4, offset + 17))
  )

/**
 * One frame of `kind` with `seq` and `payload`, as `HEADER_BYTES +
 * payload.byteLength` new bytes.
 *
 * Throws a `RangeError` when `seq` is not a non-negative safe integer or the
 * payload is larger than `MAX_PAYLOAD_BYTES`.
 *
 * @category encoding
 */
export const encodeFrame = (kind: FrameKind, seq: number, payload: Uint8Array): Uint8Array<ArrayBuffer> => {
  if (!Number.isSafeInteger(seq) || seq < 0) {
    throw new RangeError(`Could not encode a journal frame: seq ${seq} is not a non-negative safe integer`)
  }
  if (payload.byteLength > MAX_PAYLOAD_BYTES) {
    throw new RangeError(
      `Could not encode a journal frame: a payload of ${payload.byteLength} bytes is over the ${MAX_PAYLOAD_BYTES}-byte cap`
    )
  }
  const bytes = new Uint8Array(HEADER_BYTES + payload.byteLength)
  const view = new DataView(bytes.buffer)
  bytes.set(MAGIC, 0)
  view.setUint8(4, KIND_BYTE[kind])
  view.setUint32(5, payload.byteLength, true)
  view.setUint32(9, seq % TWO_32, true)
  view.setUint32(13, Math.floor(seq / TWO_32), true)
  bytes.set(payload, HEADER_BYTES)
  view.setUint32(17, checksum(bytes, 0, payload.byteLength), true)
  return bytes
}

/** Whether the bytes left at `offset` (fewer than a header) could still be the start of a frame. */
const magicPrefixMatches = (bytes: Uint8Array, offset: number): boolean => {
  const end = Math.min(bytes.byteLength, offset + MAGIC.byteLength)
  for (let index = offset; index < end; index++) {
    if (bytes[index] !== MAGIC[index - offset]) return false
  }
  return true
}

/**
 * The frames laid end to end in `bytes`, from the start up to the first torn
 * or corrupt frame (see the module doc). Payloads are views into `bytes`, not
 * copies. Never throws.
 *
 * @category decoding
 */
export const decodeFrames = (bytes: Uint8Array): Decoded => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const frames: Array<Frame> = []
  let offset = 0
  const stop = (corrupt: boolean): Decoded => ({ frames, goodLength: offset, corrupt })
  while (offset < bytes.byteLength) {
    if (bytes.byteLength - offset < HEADER_BYTES) return stop(!magicPrefixMatches(bytes, offset))
    if (!magicPrefixMatches(bytes, offset)) return stop(true)
    const kindByte = view.getUint8(offset + 4)
    const kind: FrameKind | undefined = kindByte === 1 ? "record" : kindByte === 2 ? "folded" : undefined
    const length = view.getUint32(offset + 5, true)
    const seqLow = view.getUint32(offset + 9, true)
    const seqHigh = view.getUint32(offset + 13, true)
    if (kind === undefined || length > MAX_PAYLOAD_BYTES || seqHigh > MAX_SEQ_HIGH) return stop(true)
    const end = offset + HEADER_BYTES + length
    if (end > bytes.byteLength) return stop(false)
    if (view.getUint32(offset + 17, true) !== checksum(bytes, offset, length)) return stop(true)
    frames.push({ kind, seq: seqHigh * TWO_32 + seqLow, payload: bytes.subarray(offset + HEADER_BYTES, end) })
    offset = end
  }
  return stop(false)
}
