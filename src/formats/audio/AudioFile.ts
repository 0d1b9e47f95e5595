/**
 * What the audio routes read from an uploaded file before sending it on: its
 * duration, read from its bytes by `music-metadata` for every container a
 * transcription takes (mp3, m4a/mp4, ogg/opus, flac, webm, wav: the codec
 * headers, frame counts and sample tables, as that library reads them), and a
 * duration bound for a file whose duration cannot be read, so a
 * transcription's quota hold can be sized from the request alone. Also the
 * duration of a RIFF/WAVE file from its header by hand (the `fmt ` chunk's
 * byte rate and the `data` chunk's size; Microsoft's RIFF/WAVE layout as
 * documented by the Library of Congress format description "WAVE Audio File
 * Format" and McGill's "Audio File Format Specifications"), and a WAV file
 * around PCM.
 *
 * @since 0.1.0
 */

const ascii = (bytes: Uint8Array, start: number): string =>
  String.fromCharCode(bytes[start], bytes[start + 1], bytes[start + 2], bytes[start + 3])

/**
 * The duration in milliseconds of a RIFF/WAVE file, read by walking its
 * chunks (`fmt ` for the byte rate, `data` for the size; a `data` size past
 * the end of the file is cut to what is there). `undefined` when `bytes` is
 * not a WAVE file or has no usable `fmt `/`data` chunk.
 *
 * @category audio
 */
export const wavMillis = (bytes: Uint8Array): number | undefined => {
  if (bytes.length < 12 || ascii(bytes, 0) !== "RIFF" || ascii(bytes, 8) !== "WAVE") return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let byteRate: number | undefined
  let offset = 12
  while (offset + 8 <= bytes.length) {
    const id = ascii(bytes, offset)
    const size = view.getUint32(offset + 4, true)
    const body = offset + 8
    if (id === "fmt " && size >= 16 && body + 16 <= bytes.length) byteRate = view.getUint32(body + 8, true)
    if (id === "data") {
      if (byteRate === undefined || byteRate === 0) return undefined
      const present = Math.min(size, bytes.length - body)
      return Math.ceil(present * 1000 / byteRate)
    }
    // Chunks are padded to an even size.
    offset = body + size + (size % 2)
  }
  return undefined
}

/**
 * The lowest bit rate a compressed upload is assumed to have (8 kbit/s, the
 * lowest MPEG-2.5 Layer III rate): a file of `n` bytes lasts at most
 * `n × 8 / 8000` seconds at it.
 */
const LOWEST_BITS_PER_SECOND = 8_000

/**
 * A duration no upload of `size` bytes exceeds unless its bit rate is below
 * 8 kbit/s (milliseconds): the quota hold of a file whose header does not
 * tell its duration.
 *
 * @category audio
 */
export const durationBoundMillis = (size: number): number => Math.ceil(size * 8 * 1000 / LOWEST_BITS_PER_SECOND)

/**
 * The lowest bit rate a duration read from a file's headers may imply (2
 * kbit/s, below any speech codec's: Opus goes down to 6 kbit/s, AMR-NB to
 * 4.75): a longer duration for the file's size is a header that lies, and is
 * not believed.
 */
const LOWEST_BELIEVED_BITS_PER_SECOND = 2_000

/**
 * The duration in milliseconds (rounded up) of an uploaded audio file of
 * media type `mimeType` (as its bytes show it), read by `music-metadata`
 * with a full scan where the headers do not tell (`duration: true`: an MP3
 * without a Xing/VBRI header has its frames counted). `undefined` when the
 * bytes cannot be parsed, tell no positive duration, or tell one longer than
 * the file's size allows at 2 kbit/s. The bytes are in memory and at most
 * the route's 25 MB; a 25 MB file of noise behind an MP3 frame header, the
 * slowest case measured, takes under half a second.
 *
 * @category audio
 */
export const audioMillis = async (bytes: Uint8Array, mimeType: string): Promise<number | undefined> => {
  if (bytes.length === 0) return undefined
  // Loaded on first use: about 3 MiB of modules a gateway that serves no audio does not hold.
  const { parseBuffer } = await import("music-metadata")
  try {
    const metadata = await parseBuffer(bytes, { mimeType, size: bytes.length }, {
      duration: true,
      skipCovers: true,
      skipPostHeaders: true
    })
    const seconds = metadata.format.duration
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds <= 0) return undefined
    if (seconds > bytes.length * 8 / LOWEST_BELIEVED_BITS_PER_SECOND) return undefined
    return Math.ceil(seconds * 1000)
  } catch {
    return undefined
  }
}

/**
 * A RIFF/WAVE file around 16-bit little-endian mono PCM at `rate` Hz (the
 * 44-byte canonical header: `fmt ` PCM, then `data`). Wrapping PCM so is
 * lossless.
 *
 * @category audio
 */
export const wavOf = (pcm: Uint8Array, rate: number): Uint8Array => {
  const bytes = new Uint8Array(44 + pcm.byteLength)
  const view = new DataView(bytes.buffer)
  const ascii = (offset: number, text: string) => {
    for (let index = 0; index < text.length; index++) bytes[offset + index] = text.charCodeAt(index)
  }
  ascii(0, "RIFF")
  view.setUint32(4, 36 + pcm.byteLength, true)
  ascii(8, "WAVE")
  ascii(12, "fmt ")
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, 1, true)
  view.setUint32(24, rate, true)
  view.setUint32(28, rate * 2, true)
  view.setUint16(32, 2, true)
  view.setUint16(34, 16, true)
  ascii(36, "data")
  view.setUint32(40, pcm.byteLength, true)
  bytes.set(pcm, 44)
  return bytes
}
