/**
 * The emulator's Realtime socket (`GET /v1/realtime?model=…` with `Upgrade: websocket`), speaking the GA event
 * names of the `openai` package's `resources/realtime/realtime.ts` (7.57.0): `session.created` on open,
 * `session.update` → `session.updated`, `conversation.item.create` → `conversation.item.added` and
 * `conversation.item.done`, `input_audio_buffer.append` / `commit` (→ `input_audio_buffer.committed` and the user's
 * audio item), `response.create` → `response.created`, `response.output_item.added`, `response.content_part.added`,
 * text deltas (`response.output_text.delta` / `.done`) or audio deltas (`response.output_audio.delta`, base64 PCM16
 * at 24 kHz, with `response.output_audio_transcript.delta` / `.done`), `response.output_item.done` and
 * `response.done` with `usage` (text, audio and cached input tokens, text and audio output tokens). With
 * `turn_detection` set in the session (`session.audio.input.turn_detection`, GA, or `session.turn_detection`, beta) a
 * committed audio buffer starts a response by itself, as OpenAI's server VAD does. Unlike OpenAI (whose sessions
 * start with `server_vad`), a session here starts with turn detection off, so a test decides when a turn ends.
 *
 * Token counts are deterministic: text input ⌈characters / 4⌉ per text item, audio input one token per 1,600 bytes of
 * PCM16 (≈ 33 ms at 24 kHz), every input token of the conversation before the previous response's end counted as
 * cached (by kind); text output one token per delta, audio output one token per 1,600 bytes sent. Every
 * `response.done` sent is recorded (`RealtimeRecord`), with the `usage` object sent, for billing tests; deltas are
 * paced by the emulator's `tokensPerSecond` (default 1 ms apart).
 *
 * @since 0.3.0
 */
import { isObject, type JsonObject, stringOr } from "./Wire.ts"

/** One response the emulator finished on a Realtime socket. @category models */
export interface RealtimeRecord {
  /** The emulator's session id (`sess_…`). */
  readonly sessionId: string
  readonly responseId: string
  /** `client`: a `response.create`; `vad`: a committed buffer with turn detection on. */
  readonly trigger: "client" | "vad"
  /** The `usage` object of its `response.done`, as sent. */
  readonly usage: JsonObject
  /** The model the socket was opened for (`?model=`). */
  readonly model: string
}

/** The answer text of a text response, one delta per word. */
const ANSWER_WORDS = ["Hello", " from", " the", " realtime", " emulator."]
/** Bytes of PCM16 per audio delta (50 ms at 24 kHz mono). */
const AUDIO_CHUNK_BYTES = 2400
/** Audio deltas per audio response. */
const AUDIO_CHUNKS = 4
/** Bytes of PCM16 per audio token, both directions. */
const AUDIO_BYTES_PER_TOKEN = 1600
/** Most bytes of appended audio a buffer keeps counting (OpenAI bounds a buffer at 15 MiB). */
const MAX_BUFFER_BYTES = 15 * 1024 * 1024

const base64Pcm = (seed: number): string => {
  const samples = new Int16Array(AUDIO_CHUNK_BYTES / 2)
  for (let index = 0; index < samples.length; index++) {
    samples[index] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (index + seed * samples.length)) / 24_000))
  }
  const bytes = new Uint8Array(samples.buffer)
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const decodedLength = (base64: string): number => {
  const trimmed = base64.replace(/=+$/, "")
  return Math.floor((trimmed.length * 3) / 4)
}

/** What a handshake needs from the emulator's server. */
export interface RealtimeHost {
  readonly nextId: (prefix: string) => string
  readonly recordResponse: (record: RealtimeRecord) => void
  /** Resolves when the emulator closes; open sockets are closed with 1001 then. */
  readonly closing: AbortSignal
  /** Milliseconds between two deltas of a response (the emulator's `tokensPerSecond` pacing; at least 1). */
  readonly pacingMs: number
}

const text = (value: unknown): string => typeof value === "string" ? value : ""

/**
 * Serves one upgraded Realtime socket for `model`. `socket` is the server side from `Deno.upgradeWebSocket`.
 *
 * @category handlers
 */
export const serveRealtime = (socket: WebSocket, model: string, host: RealtimeHost): void => {
  const sessionId = host.nextId("sess_")
  let session: JsonObject = {
    id: sessionId,
    object: "realtime.session",
    type: "realtime",
    model,
    output_modalities: ["audio"],
    instructions: "",
    audio: {
      input: { format: { type: "audio/pcm", rate: 24000 }, turn_detection: null },
      output: { format: { type: "audio/pcm", rate: 24000 }, voice: "alloy" }
    }
  }
  /** Input tokens per kind in the conversation so far, and the part already seen by a response (cached). */
  const conversation = { text: 0, audio: 0 }
  const cached = { text: 0, audio: 0 }
  let buffered = 0
  let previousItem: string | null = null
  let responding = false
  const queue: Array<"client" | "vad"> = []
  const queuedModalities: Array<ReadonlyArray<string> | undefined> = []

  const send = (event: JsonObject) => {
    if (socket.readyState !== WebSocket.OPEN) return
    socket.send(JSON.stringify({ event_id: host.nextId("event_"), ...event }))
  }
  const fail = (message: string, param: string | undefined, clientEventId: unknown, code = "invalid_value") =>
    send({
      type: "error",
      error: {
        type: "invalid_request_error",
        code,
        message,
        param: param ?? null,
        event_id: typeof clientEventId === "string" ? clientEventId : null
      }
    })
  const turnDetection = (): unknown => {
    const audio = isObject(session.audio) ? session.audio : {}
    const input = isObject(audio.input) ? audio.input : {}
    return input.turn_detection ?? session.turn_detection ?? null
  }
  const addItem = (item: JsonObject) => {
    send({ type: "conversation.item.added", previous_item_id: previousItem, item: { ...item, status: "in_progress" } })
    send({ type: "conversation.item.done", previous_item_id: previousItem, item: { ...item, status: "completed" } })
    previousItem = stringOr(item.id) ?? previousItem
  }
  const pause = () => new Promise((resolve) => setTimeout(resolve, Math.max(1, host.pacingMs)))

  const respond = async (trigger: "client" | "vad", modalities: ReadonlyArray<string> | undefined) => {
    const responseId = host.nextId("resp_")
    const itemId = host.nextId("item_")
    const audio = (modalities ?? (Array.isArray(session.output_modalities) ? session.output_modalities : []))
      .includes("audio")
    send({
      type: "response.created",
      response: { id: responseId, object: "realtime.response", status: "in_progress", output: [], usage: null }
    })
    const item = { id: itemId, type: "message", object: "realtime.item", role: "assistant", content: [] }
    send({ type: "response.output_item.added", response_id: responseId, output_index: 0, item })
    const part = audio ? { type: "output_audio", transcript: "" } : { type: "output_text", text: "" }
    send({
      type: "response.content_part.added",
      response_id: responseId,
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part
    })
    const where = { response_id: responseId, item_id: itemId, output_index: 0, content_index: 0 }
    let textOut = 0
    let audioBytes = 0
    for (const [index, word] of ANSWER_WORDS.entries()) {
      await pause()
      if (audio) {
        send({ type: "response.output_audio.delta", ...where, delta: base64Pcm(index) })
        audioBytes += index < AUDIO_CHUNKS ? AUDIO_CHUNK_BYTES : 0
        send({ type: "response.output_audio_transcript.delta", ...where, delta: word })
      } else {
        send({ type: "response.output_text.delta", ...where, delta: word })
      }
      textOut++
    }
    const answer = ANSWER_WORDS.join("")
    const content = audio
      ? { type: "output_audio", transcript: answer, format: { type: "audio/pcm", rate: 24000 } }
      : { type: "output_text", text: answer }
    if (audio) {
      send({ type: "response.output_audio.done", ...where })
      send({ type: "response.output_audio_transcript.done", ...where, transcript: answer })
    } else {
      send({ type: "response.output_text.done", ...where, text: answer })
    }
    send({ type: "response.content_part.done", ...where, part: content })
    const done = { ...item, status: "completed", content: [content] }
    send({ type: "response.output_item.done", response_id: responseId, output_index: 0, item: done })
    const audioOut = Math.ceil(audioBytes / AUDIO_BYTES_PER_TOKEN)
    const inputTokens = conversation.text + conversation.audio
    const cachedTokens = cached.text + cached.audio
    const usage: JsonObject = {
      total_tokens: inputTokens + textOut + audioOut,
      input_tokens: inputTokens,
      output_tokens: textOut + audioOut,
      input_token_details: {
        text_tokens: conversation.text,
        audio_tokens: conversation.audio,
        image_tokens: 0,
        cached_tokens: cachedTokens,
        cached_tokens_details: { text_tokens: cached.text, audio_tokens: cached.audio, image_tokens: 0 }
      },
      output_token_details: { text_tokens: textOut, audio_tokens: audioOut }
    }
    // The answer joins the conversation; everything before it is in the cache for the next response.
    conversation.text += Math.ceil(answer.length / 4)
    cached.text = conversation.text
    cached.audio = conversation.audio
    previousItem = itemId
    send({
      type: "response.done",
      response: {
        id: responseId,
        object: "realtime.response",
        status: "completed",
        output: [done],
        output_modalities: audio ? ["audio"] : ["text"],
        usage
      }
    })
    // Only a response whose `response.done` was sent reported its usage.
    if (socket.readyState === WebSocket.OPEN) host.recordResponse({ sessionId, responseId, trigger, usage, model })
  }

  const drain = async () => {
    if (responding) return
    responding = true
    try {
      while (queue.length > 0) await respond(queue.shift()!, queuedModalities.shift())
    } finally {
      responding = false
    }
  }
  const enqueue = (trigger: "client" | "vad", modalities: ReadonlyArray<string> | undefined) => {
    queue.push(trigger)
    queuedModalities.push(modalities)
    void drain()
  }

  const onEvent = (event: JsonObject) => {
    const eventId = event.event_id
    switch (event.type) {
      case "session.update": {
        if (!isObject(event.session)) return fail("Missing session.", "session", eventId, "missing_required_parameter")
        const given = event.session
        const audio = isObject(session.audio) ? session.audio : {}
        const givenAudio = isObject(given.audio) ? given.audio : {}
        session = {
          ...session,
          ...given,
          audio: {
            input: {
              ...(isObject(audio.input) ? audio.input : {}),
              ...(isObject(givenAudio.input) ? givenAudio.input : {})
            },
            output: {
              ...(isObject(audio.output) ? audio.output : {}),
              ...(isObject(givenAudio.output) ? givenAudio.output : {})
            }
          },
          id: sessionId,
          model
        }
        return send({ type: "session.updated", session })
      }
      case "conversation.item.create": {
        if (!isObject(event.item)) return fail("Missing item.", "item", eventId, "missing_required_parameter")
        const content = Array.isArray(event.item.content) ? event.item.content : []
        for (const part of content) {
          if (isObject(part)) conversation.text += Math.ceil((text(part.text) + text(part.transcript)).length / 4)
        }
        return addItem({ id: stringOr(event.item.id) ?? host.nextId("item_"), ...event.item })
      }
      case "input_audio_buffer.append": {
        if (typeof event.audio !== "string") {
          return fail("Missing audio.", "audio", eventId, "missing_required_parameter")
        }
        buffered = Math.min(MAX_BUFFER_BYTES, buffered + decodedLength(event.audio))
        return
      }
      case "input_audio_buffer.clear":
        buffered = 0
        return send({ type: "input_audio_buffer.cleared" })
      case "input_audio_buffer.commit": {
        if (buffered === 0) {
          return fail(
            "Error committing input audio buffer: the buffer is empty.",
            undefined,
            eventId,
            "input_audio_buffer_commit_empty"
          )
        }
        const itemId = host.nextId("item_")
        send({ type: "input_audio_buffer.committed", previous_item_id: previousItem, item_id: itemId })
        conversation.audio += Math.ceil(buffered / AUDIO_BYTES_PER_TOKEN)
        buffered = 0
        addItem({
          id: itemId,
          type: "message",
          object: "realtime.item",
          role: "user",
          content: [{ type: "input_audio" }]
        })
        if (turnDetection() !== null) enqueue("vad", undefined)
        return
      }
      case "response.create": {
        const response = isObject(event.response) ? event.response : {}
        const modalities = Array.isArray(response.output_modalities)
          ? response.output_modalities.filter((value): value is string => typeof value === "string")
          : undefined
        return enqueue("client", modalities)
      }
      case "response.cancel":
        return
      default:
        return fail(`Invalid value: '${String(event.type).slice(0, 100)}'.`, "type", eventId, "invalid_value")
    }
  }

  socket.addEventListener("open", () => send({ type: "session.created", session }))
  socket.addEventListener("message", (message) => {
    if (typeof message.data !== "string") return fail("Binary frames are not supported.", undefined, undefined)
    let parsed: unknown
    try {
      parsed = JSON.parse(message.data)
    } catch {
      return fail("The event is not valid JSON.", undefined, undefined, "invalid_json")
    }
    if (!isObject(parsed) || typeof parsed.type !== "string") {
      return fail("The event has no type.", "type", undefined, "missing_required_parameter")
    }
    onEvent(parsed)
  })
  const onClosing = () => {
    if (socket.readyState === WebSocket.OPEN) socket.close(1001, "Going away")
  }
  host.closing.addEventListener("abort", onClosing, { once: true })
  socket.addEventListener("close", () => host.closing.removeEventListener("abort", onClosing))
}
