/**
 * Deterministic tiny images for the emulator's image APIs: a valid 2×2 RGB
 * PNG (signature, IHDR, one stored-deflate IDAT, IEND, each chunk with its
 * CRC-32) whose colours derive from a seed text, so the same prompt gives the
 * same bytes and different prompts differ.
 *
 * @since 0.1.0
 */

const crcTable = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

const crc32 = (bytes: Uint8Array): number => {
  let crc = 0xffffffff
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff] ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const adler32 = (bytes: Uint8Array): number => {
  let a = 1
  let b = 0
  for (const byte of bytes) {
    a = (a + byte) % 65521
    b = (b + a) % 65521
  }
  return ((b << 16) | a) >>> 0
}

const u32 = (value: number): Array<number> => [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff]

const chunk = (type: string, data: ReadonlyArray<number>): Array<number> => {
  const typed = new Uint8Array([...type].map((char) => char.charCodeAt(0)).concat(data))
  return [...u32(data.length), ...typed, ...u32(crc32(typed))]
}

/** FNV-1a over the UTF-16 code units of `text` (lone surrogates included). @category hashing */
export const seedOf = (text: string): number => {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash
}

/**
 * The PNG bytes for `seed` (a 2×2 RGB image; colours from the seed).
 *
 * @category images
 */
export const pngFor = (seed: number): Uint8Array<ArrayBuffer> => {
  const [r, g, b] = [(seed >>> 16) & 0xff, (seed >>> 8) & 0xff, seed & 0xff]
  // Two scanlines, each: filter byte 0 then two RGB pixels.
  const raw = new Uint8Array([0, r, g, b, b, r, g, 0, g, b, r, r, g, b])
  const stored = [0x78, 0x01, 0x01, raw.length & 0xff, raw.length >>> 8, ~raw.length & 0xff, (~raw.length >>> 8) & 0xff]
  const idat = [...stored, ...raw, ...u32(adler32(raw))]
  const header = [...u32(2), ...u32(2), 8, 2, 0, 0, 0]
  return new Uint8Array([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    ...chunk("IHDR", header),
    ...chunk("IDAT", idat),
    ...chunk("IEND", [])
  ])
}

/** `pngFor(seed)` in Base64. @category images */
export const pngBase64For = (seed: number): string => btoa(String.fromCharCode(...pngFor(seed)))
