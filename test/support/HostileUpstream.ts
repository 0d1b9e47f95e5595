/**
 * A hostile upstream for the media-hardening tests: one server on 127.0.0.1
 * that speaks just enough of several vendors' wires for a gateway channel to
 * use it, and answers with what a test sets — an "image" of any type and
 * bytes, video bytes of any `Content-Type`, media URLs pointing wherever the
 * test says (another host, an internal server):
 *
 * - Gemini images: `POST /v1beta/models/{model}:generateContent` → one
 *   `inlineData` part `{mimeType: imageMimeType, data: Base64 of imageBytes}`;
 * - OpenAI videos: `POST /v1/videos`, `GET /v1/videos/{id}` (completed at
 *   once), `GET /v1/videos/{id}/content` → `mediaBytes` as `mediaType`;
 * - Ark videos: `POST /api/v3/contents/generations/tasks`, `GET …/{id}`
 *   (succeeded at once, `content.video_url` = `mediaUrl`);
 * - Kling videos: `POST /v1/videos/text2video`, `GET …/{id}` (succeed at
 *   once, `task_result.videos[0].url` = `mediaUrl`);
 * - a Midjourney proxy: `POST /mj/submit/imagine`, `GET /mj/task/{id}/fetch`
 *   (SUCCESS at once, `imageUrl` = `mediaUrl`);
 * - `GET /media`: `mediaBytes` as `mediaType` (where `mediaUrl` points by
 *   default).
 *
 * A second server, `startInternalServer`, stands for a service of the
 * gateway's own network that no vendor URL may reach: it counts its hits.
 */

/** What the upstream answers; every field may be changed while it runs. */
export interface HostileBehaviour {
  /** The `inlineData.mimeType` of a Gemini image. */
  imageMimeType: string
  /** The bytes of a Gemini image. */
  imageBytes: Uint8Array
  /** The URL finished Ark, Kling and Midjourney tasks name. */
  mediaUrl: string
  /** The `Content-Type` of `GET /media` and of OpenAI's content call. */
  mediaType: string
  /** The bytes of `GET /media` and of OpenAI's content call. */
  mediaBytes: Uint8Array
}

/** The running upstream. */
export interface HostileUpstream {
  readonly url: string
  readonly behaviour: HostileBehaviour
  /** The paths requested, in order. */
  readonly paths: Array<string>
  readonly close: () => Promise<void>
}

/** A page whose script, if it ever ran on the gateway's origin, would read the session's user and mark the page. */
export const SCRIPT_PAGE = new TextEncoder().encode(
  "<!doctype html><html><head><title>media</title></head><body>" +
    "<script>document.title = 'pwned'; window.pwned = true; fetch('/api/user/self')</script></body></html>"
)

const base64 = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const json = (body: unknown): Response =>
  new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } })

/** Starts the upstream; `mediaUrl` defaults to its own `/media`. */
export const startHostileUpstream = (initial: Partial<HostileBehaviour> = {}): HostileUpstream => {
  const paths: Array<string> = []
  let port = 0
  const behaviour: HostileBehaviour = {
    imageMimeType: "text/html",
    imageBytes: SCRIPT_PAGE,
    mediaUrl: "",
    mediaType: "text/html",
    mediaBytes: SCRIPT_PAGE,
    ...initial
  }
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const url = new URL(request.url)
    const path = url.pathname
    paths.push(path)
    if (request.method === "POST") await request.body?.cancel()
    const mediaUrl = behaviour.mediaUrl === "" ? `http://127.0.0.1:${port}/media` : behaviour.mediaUrl
    if (/^\/v1beta\/models\/[^/]+:generateContent$/.test(path)) {
      return json({
        candidates: [{
          content: {
            role: "model",
            parts: [{ inlineData: { mimeType: behaviour.imageMimeType, data: base64(behaviour.imageBytes) } }]
          },
          finishReason: "STOP"
        }],
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 1290, totalTokenCount: 1294 }
      })
    }
    const openAiVideo = { id: "video_hostile1", object: "video", model: "sora-2", seconds: "4", size: "720x1280" }
    if (path === "/v1/videos") return json({ ...openAiVideo, status: "queued", progress: 0, created_at: 1 })
    if (path === "/v1/videos/video_hostile1") {
      return json({ ...openAiVideo, status: "completed", progress: 100, created_at: 1, completed_at: 2 })
    }
    if (path === "/v1/videos/video_hostile1/content" || path === "/media") {
      return new Response(behaviour.mediaBytes.slice(), { headers: { "content-type": behaviour.mediaType } })
    }
    if (path === "/api/v3/contents/generations/tasks") return json({ id: "cgt-hostile-1" })
    if (path === "/api/v3/contents/generations/tasks/cgt-hostile-1") {
      return json({ id: "cgt-hostile-1", status: "succeeded", content: { video_url: mediaUrl }, duration: 5 })
    }
    if (path === "/v1/videos/text2video") {
      return json({ code: 0, message: "SUCCEED", data: { task_id: "kling-hostile-1", task_status: "submitted" } })
    }
    if (path === "/v1/videos/text2video/kling-hostile-1") {
      return json({
        code: 0,
        message: "SUCCEED",
        data: {
          task_id: "kling-hostile-1",
          task_status: "succeed",
          task_result: { videos: [{ id: "v1", url: mediaUrl, duration: "5" }] }
        }
      })
    }
    if (path === "/mj/submit/imagine") return json({ code: 1, description: "Submit success", result: "1700000000001" })
    if (path === "/mj/task/1700000000001/fetch") {
      return json({
        id: "1700000000001",
        action: "IMAGINE",
        prompt: "a lamp",
        status: "SUCCESS",
        progress: "100%",
        imageUrl: mediaUrl,
        buttons: [],
        properties: {}
      })
    }
    if (path === "/mj/task/list-by-condition") return json([])
    return new Response("not found", { status: 404 })
  })
  port = server.addr.port
  return { url: `http://127.0.0.1:${port}`, behaviour, paths, close: () => server.shutdown() }
}

/** A server of the gateway's own network: its port and its hits. */
export interface InternalServer {
  readonly port: number
  readonly hits: Array<string>
  readonly close: () => Promise<void>
}

/** Starts the internal server on 127.0.0.1 (reachable as `localhost` too). */
export const startInternalServer = (): InternalServer => {
  const hits: Array<string> = []
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    hits.push(new URL(request.url).pathname)
    return new Response("internal secret", { headers: { "content-type": "text/plain" } })
  })
  return { port: server.addr.port, hits, close: () => server.shutdown() }
}
