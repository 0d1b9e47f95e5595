/**
 * A local media server on 127.0.0.1 for asset tests: images, a video that
 * honours `Range`, one that ignores it, a web page, a 404, a slow answer, a
 * redirect to the cloud metadata address and one to `localhost`. Tests let
 * its loopback address through the SSRF guard with `media_allow_hosts:
 * ["127.0.0.1"]` (as `test/integration/ImageDownload.test.ts` does).
 */

/** A 1×1 PNG. */
export const PNG = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
  (c) => c.charCodeAt(0)
)

/** The first bytes of an MP4 (an `ftyp` box, brand `isom`) and then zeros: 300 KB in all. */
export const MP4 = (() => {
  const bytes = new Uint8Array(300_000)
  bytes.set([0, 0, 0, 0x20, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 0x69, 0x73, 0x6f, 0x6d])
  return bytes
})()

/** The server: its base URL, the `Range` headers it saw by path, and `close`. */
export interface MediaServer {
  readonly base: string
  readonly ranges: Map<string, Array<string | null>>
  readonly close: () => Promise<void>
}

/** Starts the server. */
export const startMediaServer = (): MediaServer => {
  const ranges = new Map<string, Array<string | null>>()
  let port = 0
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request): Response => {
    const url = new URL(request.url)
    ranges.set(url.pathname, [...(ranges.get(url.pathname) ?? []), request.headers.get("range")])
    switch (url.pathname) {
      case "/pixel.png":
        return new Response(PNG, { headers: { "content-type": "image/png" } })
      case "/octet": // a PNG without its type: sniffed from its bytes
        return new Response(PNG, { headers: { "content-type": "application/octet-stream" } })
      case "/clip.mp4": {
        const match = /^bytes=0-(\d+)$/.exec(request.headers.get("range") ?? "")
        if (match === null) return new Response(MP4, { headers: { "content-type": "video/mp4" } })
        const end = Math.min(Number(match[1]), MP4.length - 1)
        return new Response(MP4.slice(0, end + 1), {
          status: 206,
          headers: { "content-type": "video/mp4", "content-range": `bytes 0-${end}/${MP4.length}` }
        })
      }
      case "/whole.mp4": // ignores Range: the whole body
        return new Response(MP4, { headers: { "content-type": "video/mp4" } })
      case "/page.html":
        return new Response("<html><body>not media</body></html>", { headers: { "content-type": "text/html" } })
      case "/slow.mp4": {
        // Eight bytes, then nothing: only the time limit ends this check.
        const body = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(MP4.slice(0, 8)) })
        return new Response(body, { headers: { "content-type": "video/mp4" } })
      }
      case "/to-meta":
        return Response.redirect("http://169.254.169.254/latest/meta-data/", 302)
      case "/to-localhost":
        return Response.redirect(`http://localhost:${port}/pixel.png`, 302)
      default:
        return new Response("not found", { status: 404 })
    }
  })
  port = server.addr.port
  return { base: `http://127.0.0.1:${port}`, ranges, close: () => server.shutdown() }
}
