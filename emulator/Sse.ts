/**
 * Replies of the vendor emulator and how they go on the wire: a JSON body, or a
 * list of pre-framed events (SSE frames, or pieces of a streamed JSON array)
 * delivered with optional pacing and an optional break after N events.
 *
 * @since 0.1.0
 */

/** A complete JSON answer. @category models */
export interface JsonReply {
  readonly _tag: "Json"
  readonly status: number
  readonly body: unknown
  /** Extra response headers the vendor sends with this answer (Bedrock's error type, token counts). */
  readonly headers?: Record<string, string>
}

/**
 * A streamed answer: each frame is one event, already framed for the wire (SSE text, or a binary
 * `application/vnd.amazon.eventstream` message). @category models
 */
export interface EventsReply {
  readonly _tag: "Events"
  readonly contentType: string
  readonly frames: ReadonlyArray<string | Uint8Array<ArrayBuffer>>
  /** Extra response headers the vendor sends with this stream. */
  readonly headers?: Record<string, string>
}

/** A binary answer (video bytes), with its own status and extra headers (`Content-Range`…). @category models */
export interface BytesReply {
  readonly _tag: "Bytes"
  readonly status: number
  readonly contentType: string
  readonly bytes: Uint8Array<ArrayBuffer>
  readonly headers: Record<string, string>
  /** Made as it is sent (speech audio): under pacing, sent in pieces with a pause between them. */
  readonly streamed?: boolean
}

/** What a route answers. @category models */
export type Reply = JsonReply | EventsReply | BytesReply

/** A JSON reply with `status` (default 200) and optional extra `headers`. @category constructors */
export const jsonReply = (body: unknown, status = 200, headers?: Record<string, string>): Reply =>
  headers === undefined ? { _tag: "Json", status, body } : { _tag: "Json", status, body, headers }

/** A binary reply of `contentType` with `status` (default 200) and extra `headers`. @category constructors */
export const bytesReply = (
  bytes: Uint8Array<ArrayBuffer>,
  contentType: string,
  status = 200,
  headers: Record<string, string> = {}
): BytesReply => ({ _tag: "Bytes", status, contentType, bytes, headers })

/** A binary reply the vendor streams as it makes it (speech audio): paced in pieces. @category constructors */
export const streamedBytesReply = (bytes: Uint8Array<ArrayBuffer>, contentType: string): BytesReply => ({
  ...bytesReply(bytes, contentType),
  streamed: true
})

/** An SSE reply from frames built with `dataFrame` / `eventFrame`. @category constructors */
export const sseReply = (frames: ReadonlyArray<string>): Reply => ({
  _tag: "Events",
  contentType: "text/event-stream; charset=utf-8",
  frames
})

/** An SSE frame with only a `data:` line (OpenAI chat/completions, Gemini `alt=sse`). @category framing */
export const dataFrame = (data: unknown): string =>
  `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`

/** An SSE frame with an `event:` line and a JSON `data:` line (Anthropic, OpenAI Responses). @category framing */
export const eventFrame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/** How to deliver a reply: pacing, faults, headers, and the hooks that track completion. @category models */
export interface Delivery {
  /** Pause between frames in milliseconds (0 = all frames at once). */
  readonly pacingMs: number
  /** Send this many frames, then break the connection. */
  readonly breakAfterEvents: number | undefined
  /** Send this many frames, then end the body cleanly (no end marker: the stream is cut short). */
  readonly endAfterEvents?: number | undefined
  /** Send this many frames, then stay silent with the connection open until `signal` aborts. */
  readonly stallAfterEvents?: number | undefined
  /** Aborts when the client goes away or the emulator closes. */
  readonly signal: AbortSignal
  readonly headers: Record<string, string>
  /** Called once the whole body has been handed to the connection. */
  readonly onComplete: () => void
  /** Called when the client cancels the body before the end. */
  readonly onCancel: () => void
}

const encoder = new TextEncoder()

/** Frames as one body: joined text when every frame is text, else their bytes end to end. */
const joinFrames = (frames: ReadonlyArray<string | Uint8Array<ArrayBuffer>>): string | Uint8Array<ArrayBuffer> => {
  if (frames.every((frame) => typeof frame === "string")) return frames.join("")
  const parts = frames.map((frame) => typeof frame === "string" ? encoder.encode(frame) : frame)
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    bytes.set(part, offset)
    offset += part.length
  }
  return bytes
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. Timers never outlive the signal. @category utils */
export const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener("abort", done, { once: true })
  })

/** Turns a reply into a web `Response` following `delivery`. @category delivery */
export const deliver = (reply: Reply, given: Delivery): Response => {
  if (reply._tag === "Bytes") return deliverBytes(reply, given)
  const delivery = reply.headers === undefined ? given : { ...given, headers: { ...given.headers, ...reply.headers } }
  if (reply._tag === "Json") {
    const text = JSON.stringify(reply.body)
    if (delivery.breakAfterEvents === undefined) {
      delivery.onComplete()
      return new Response(text, {
        status: reply.status,
        headers: { ...delivery.headers, "content-type": "application/json" }
      })
    }
    // A non-stream body under `breakAfterEvents`: half of the JSON, then a broken connection.
    return streamed([text.slice(0, Math.floor(text.length / 2))], "application/json", reply.status, {
      ...delivery,
      breakAfterEvents: 1
    })
  }
  if (delivery.endAfterEvents !== undefined) {
    return streamed(reply.frames.slice(0, delivery.endAfterEvents), reply.contentType, 200, {
      ...delivery,
      endAfterEvents: undefined
    })
  }
  if (delivery.pacingMs <= 0 && delivery.breakAfterEvents === undefined && delivery.stallAfterEvents === undefined) {
    delivery.onComplete()
    return new Response(joinFrames(reply.frames), {
      headers: { ...delivery.headers, "content-type": reply.contentType, "cache-control": "no-cache" }
    })
  }
  return streamed(reply.frames, reply.contentType, 200, delivery)
}

/** The piece of a paced binary reply sent per pause (as an audio stream comes, a few KB at a time). */
const PACED_BYTES_CHUNK = 4096

/**
 * A binary reply: whole; under `breakAfterEvents` the first half of the
 * bytes (none with `breakAfterEvents: 0`) and then a broken connection (a
 * download cut short); a `streamed` reply under pacing (`pacingMs`) in
 * pieces of 4096 bytes with a pause between them, as speech audio comes.
 */
const deliverBytes = (reply: BytesReply, delivery: Delivery): Response => {
  const headers = { ...delivery.headers, ...reply.headers, "content-type": reply.contentType }
  if (reply.streamed === true && delivery.pacingMs > 0 && delivery.breakAfterEvents === undefined) {
    const frames: Array<Uint8Array<ArrayBuffer>> = []
    for (let offset = 0; offset < reply.bytes.length; offset += PACED_BYTES_CHUNK) {
      frames.push(reply.bytes.slice(offset, offset + PACED_BYTES_CHUNK))
    }
    return streamed(frames, reply.contentType, reply.status, {
      ...delivery,
      headers: { ...delivery.headers, ...reply.headers }
    })
  }
  if (delivery.breakAfterEvents === undefined) {
    delivery.onComplete()
    return new Response(reply.bytes, { status: reply.status, headers })
  }
  let sent = delivery.breakAfterEvents === 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) {
        controller.error(new Error("The emulator broke the connection (fault breakAfterEvents)."))
        return
      }
      sent = true
      controller.enqueue(reply.bytes.slice(0, Math.floor(reply.bytes.length / 2)))
    },
    cancel() {
      delivery.onCancel()
    }
  }, { highWaterMark: 0 })
  return new Response(body, { status: reply.status, headers })
}

/**
 * A paced body. Its `abort` listener on `delivery.signal` is removed on every ending (read to the end, broken,
 * cancelled): the signal is `AbortSignal.any([request.signal, closing.signal])`, and Deno keeps such a dependent
 * signal alive from the emulator's long-lived `closing` signal while it has a listener, which would keep every
 * finished answer in memory until the emulator closes.
 */
const streamed = (
  frames: ReadonlyArray<string | Uint8Array<ArrayBuffer>>,
  contentType: string,
  status: number,
  delivery: Delivery
): Response => {
  const limit = delivery.breakAfterEvents ?? Infinity
  let index = 0
  let onAbort: (() => void) | undefined
  const release = () => {
    if (onAbort !== undefined) delivery.signal.removeEventListener("abort", onAbort)
    onAbort = undefined
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      // Client gone or emulator closing: end quietly (Deno logs every errored response body).
      onAbort = () => {
        onAbort = undefined
        try {
          controller.close()
        } catch {
          // Already closed, errored or cancelled.
        }
      }
      delivery.signal.addEventListener("abort", onAbort, { once: true })
    },
    async pull(controller) {
      if (index > 0) await sleep(delivery.pacingMs, delivery.signal)
      if (delivery.signal.aborted) return
      if (index >= (delivery.stallAfterEvents ?? Infinity)) {
        await sleep(2_147_483_647, delivery.signal)
        return
      }
      if (index >= limit) {
        release()
        // Erroring the body makes Deno drop the connection mid-transfer (and log this error once).
        controller.error(new Error("The emulator broke the connection (fault breakAfterEvents)."))
        return
      }
      if (index >= frames.length) {
        release()
        delivery.onComplete()
        controller.close()
        return
      }
      const frame = frames[index++]
      controller.enqueue(typeof frame === "string" ? encoder.encode(frame) : frame)
    },
    cancel() {
      release()
      delivery.onCancel()
    }
  }, { highWaterMark: 0 })
  return new Response(body, {
    status,
    headers: { ...delivery.headers, "content-type": contentType, "cache-control": "no-cache" }
  })
}
