/**
 * Media bytes are served as the types their bytes are, never as the type an
 * upstream named, with the headers that keep a browser from running them as
 * a page of the gateway's origin (`src/http/SafeMedia.ts`).
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import {
  declaredMediaType,
  OCTET_STREAM,
  safeMediaHeaders,
  SNIFF_BYTES,
  sniffMediaType,
  sniffRead
} from "../../src/http/SafeMedia.ts"
import { MP4, PNG } from "../support/MediaServer.ts"

const SCRIPT = new TextEncoder().encode("<html><script>document.title = 'pwned'</script></html>")
const GIF = new TextEncoder().encode("GIF89a\x01\x00\x01\x00\x00\x00\x00;")

Deno.test("sniffMediaType: the bytes decide, within the kind's types; anything else is octet-stream", async () => {
  const sniff = (kind: "image" | "video", bytes: Uint8Array) => Effect.runPromise(sniffMediaType(kind, bytes))
  strictEqual(await sniff("image", PNG), "image/png")
  strictEqual(await sniff("image", GIF), "image/gif")
  strictEqual(await sniff("video", MP4), "video/mp4")
  strictEqual(await sniff("image", SCRIPT), OCTET_STREAM)
  strictEqual(await sniff("video", SCRIPT), OCTET_STREAM)
  strictEqual(await sniff("image", MP4), OCTET_STREAM, "a video is not served where an image is")
  strictEqual(await sniff("video", PNG), OCTET_STREAM)
  strictEqual(await sniff("image", new Uint8Array(0)), OCTET_STREAM)
})

Deno.test("declaredMediaType: a declared type is kept only when it is one of the kind's", () => {
  strictEqual(declaredMediaType("video", "video/webm; codecs=vp9"), "video/webm")
  strictEqual(declaredMediaType("video", "VIDEO/MP4"), "video/mp4")
  strictEqual(declaredMediaType("video", "text/html"), OCTET_STREAM)
  strictEqual(declaredMediaType("video", "image/svg+xml"), OCTET_STREAM)
  strictEqual(declaredMediaType("video", undefined), OCTET_STREAM)
})

Deno.test("safeMediaHeaders: nosniff and a sandboxing CSP always; anything but a served type is an attachment", () => {
  deepStrictEqual(safeMediaHeaders("image", "image/png"), {
    "content-type": "image/png",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox"
  })
  for (const type of ["text/html", "image/svg+xml", "application/xhtml+xml", "video/mp4", OCTET_STREAM]) {
    deepStrictEqual(safeMediaHeaders("image", type), {
      "content-type": OCTET_STREAM,
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
      "content-disposition": "attachment"
    }, type)
  }
})

Deno.test("sniffRead: the head is read and sniffed before anything is sent, then the body replays whole", async () => {
  const chunks = [MP4.subarray(0, 10), MP4.subarray(10, 3000), MP4.subarray(3000, 5000), MP4.subarray(5000)]
  let pulled = 0
  const read = Effect.sync(() => chunks[pulled++])
  const { mediaType, read: replay } = await Effect.runPromise(sniffRead("video", read))
  strictEqual(mediaType, "video/mp4")
  strictEqual(pulled, 3, `only up to ${SNIFF_BYTES} bytes were read ahead`)
  const out: Array<Uint8Array> = []
  while (true) {
    const chunk = await Effect.runPromise(replay)
    if (chunk === undefined) break
    out.push(chunk)
  }
  deepStrictEqual(out, chunks)

  const short = [SCRIPT]
  const sniffedShort = await Effect.runPromise(sniffRead("video", Effect.sync(() => short.shift())))
  strictEqual(sniffedShort.mediaType, OCTET_STREAM)
  deepStrictEqual(await Effect.runPromise(sniffedShort.read), SCRIPT)
  strictEqual(await Effect.runPromise(sniffedShort.read), undefined)
})
