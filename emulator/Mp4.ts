/**
 * Deterministic video bytes for the emulator's video task APIs: an MP4-shaped
 * file of a fixed size (`MP4_BYTES`), an `ftyp` box (brand `isom`), a `moov`
 * box holding an `mvhd` movie header whose duration is the task's seconds,
 * then an `mdat` box filled with bytes derived from a seed, so one task's
 * download is byte-identical every time and two tasks differ. Box layout per
 * ISO/IEC 14496-12 (`ftyp`, `moov`/`mvhd` version 0, `mdat`). No playable
 * track: enough for a client to sniff `video/mp4` and for `Range` tests.
 *
 * @since 0.1.0
 */

/** The size of every emulated video file, in bytes. @category constants */
export const MP4_BYTES = 32_768

const ascii = (text: string): Array<number> => [...text].map((char) => char.charCodeAt(0))

const u32 = (value: number): Array<number> => [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff]

const box = (type: string, payload: ReadonlyArray<number>): Array<number> => [
  ...u32(8 + payload.length),
  ...ascii(type),
  ...payload
]

/** The unity matrix of a movie header (16.16 and 2.30 fixed point). */
const matrix = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].flatMap(u32)

/**
 * The bytes of the emulated video of `seed` lasting `seconds` (whole seconds,
 * at most 2^32 / 1000): always `MP4_BYTES` long.
 *
 * @category videos
 */
export const mp4For = (seed: number, seconds: number): Uint8Array<ArrayBuffer> => {
  const ftyp = box("ftyp", [...ascii("isom"), ...u32(0x200), ...ascii("isomiso2mp41")])
  const mvhd = box("mvhd", [
    ...u32(0), // version 0, flags 0
    ...u32(0), // creation time
    ...u32(0), // modification time
    ...u32(1000), // timescale: milliseconds
    ...u32(Math.max(0, Math.min(4_294_967, Math.floor(seconds))) * 1000), // duration
    ...u32(0x00010000), // rate 1.0
    0x01,
    0x00, // volume 1.0
    ...new Array(10).fill(0), // reserved
    ...matrix,
    ...new Array(24).fill(0), // pre-defined
    ...u32(2) // next track id
  ])
  const moov = box("moov", mvhd)
  const head = [...ftyp, ...moov, ...u32(MP4_BYTES - ftyp.length - moov.length), ...ascii("mdat")]
  const bytes = new Uint8Array(MP4_BYTES)
  bytes.set(head)
  // xorshift32 from the seed (never 0) fills the media data.
  let state = (seed >>> 0) || 0x9e3779b9
  for (let index = head.length; index < MP4_BYTES; index++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    bytes[index] = state & 0xff
  }
  return bytes
}
