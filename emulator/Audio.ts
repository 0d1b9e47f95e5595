/**
 * OpenAI's audio and moderation routes, as the emulator speaks them
 * (platform.openai.com/docs/api-reference/audio, …/moderations; request and
 * answer shapes checked against the `openai` SDK's `resources/audio/*.d.ts`
 * and `resources/moderations.d.ts`):
 *
 * - `POST /v1/audio/speech` (JSON): `model` (`tts-1`, `tts-1-hd`,
 *   `gpt-4o-mini-tts…`), `input` (1–4096 characters), `voice` (a built-in
 *   name or `{id}`), `instructions` (not on `tts-1*`), `response_format`
 *   (`mp3` default, `wav`, `pcm`, `flac`; `opus` and `aac` are refused as not
 *   emulated), `speed` (0.25–4), `stream_format` (`audio` default, `sse` not
 *   on `tts-1*`). The audio is silence of `speechMillis(input, speed)`:
 *   MPEG-1 Layer III frames (mp3), a RIFF/WAVE file or raw 24 kHz 16-bit mono
 *   PCM (OpenAI's PCM rate), or a FLAC stream header with that sample count.
 *   `sse` sends `speech.audio.delta` events (base64 audio) and a
 *   `speech.audio.done` event with token usage.
 * - `POST /v1/audio/transcriptions` and `/v1/audio/translations` (multipart,
 *   parsed by the emulator, which reads a WAV file's duration from its
 *   header and an MP3's by counting its frames: `mp3Seconds`): `file` (flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav, webm; at most
 *   25 MB), `model` (`whisper-1`; transcription also `gpt-4o-transcribe`,
 *   `gpt-4o-mini-transcribe`), `response_format` (json, text, srt, vtt,
 *   verbose_json; the gpt-4o models json and text only). One segment per
 *   started second; `whisper-1` reports `usage: {type: "duration", seconds}`,
 *   the gpt-4o models `usage: {type: "tokens", …}` (input = audio tokens); `stream=true` (gpt-4o
 *   models only) answers `transcript.text.delta` events and a `transcript.text.done` with the usage.
 * - `POST /v1/moderations` (JSON): `input` as a string, strings, or
 *   `text` / `image_url` parts (images only on `omni-moderation-*`); a text
 *   containing `EMULATOR-FLAG` is flagged for `violence`.
 *
 * @since 0.1.0
 */
import { vendorErrorBody } from "./Faults.ts"
import { bytesReply, dataFrame, jsonReply, type Reply, sseReply, streamedBytesReply } from "./Sse.ts"
import { arrayOr, isObject, type JsonObject, numberOr, type RouteContext, stringOr } from "./Wire.ts"

const bad = (message: string, param: string | null, status = 400): Reply =>
  jsonReply(vendorErrorBody("openai", status, message, param ?? undefined), status)

/** OpenAI's built-in voices (SDK `SpeechCreateParams.voice`). */
const VOICES = new Set([
  "alloy",
  "ash",
  "ballad",
  "coral",
  "echo",
  "fable",
  "onyx",
  "nova",
  "sage",
  "shimmer",
  "verse",
  "marin",
  "cedar"
])

const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"]

/** Content types of each speech format, as OpenAI answers them. @category audio */
export const SPEECH_CONTENT_TYPES: Record<string, string> = {
  mp3: "audio/mpeg",
  opus: "audio/ogg",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm"
}

/** OpenAI's PCM output: 24 kHz, 16-bit signed little-endian, mono. */
const PCM_RATE = 24_000

/**
 * The length of the emulated speech for `input` at `speed`: 60 ms per
 * character at speed 1 (at least 100 ms). @category audio
 */
export const speechMillis = (input: string, speed: number): number =>
  Math.max(100, Math.round(input.length * 60 / speed))

/** `millis` of silence as 16-bit mono PCM at 24 kHz. */
const pcmSilence = (millis: number): Uint8Array<ArrayBuffer> => new Uint8Array(Math.round(PCM_RATE * millis / 1000) * 2)

/**
 * A RIFF/WAVE file around 16-bit PCM `samples` (`rate` Hz, `channels`).
 *
 * @category audio
 */
export const wavFile = (samples: Uint8Array, rate = PCM_RATE, channels = 1): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(44 + samples.byteLength)
  const view = new DataView(bytes.buffer)
  const ascii = (offset: number, text: string) => {
    for (let i = 0; i < text.length; i++) bytes[offset + i] = text.charCodeAt(i)
  }
  ascii(0, "RIFF")
  view.setUint32(4, 36 + samples.byteLength, true)
  ascii(8, "WAVE")
  ascii(12, "fmt ")
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, channels, true)
  view.setUint32(24, rate, true)
  view.setUint32(28, rate * channels * 2, true)
  view.setUint16(32, channels * 2, true)
  view.setUint16(34, 16, true)
  ascii(36, "data")
  view.setUint32(40, samples.byteLength, true)
  bytes.set(samples, 44)
  return bytes
}

/** MPEG-1 Layer III, 128 kbit/s, 24 kHz is MPEG-2; use 44.1 kHz MPEG-1: 1152 samples a frame, 417 bytes. */
const MP3_FRAME_BYTES = 417
const MP3_FRAME_MILLIS = 1152 / 44.1

/** Silent MP3 frames (MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, mono, no padding) lasting at least `millis`. */
const mp3Silence = (millis: number): Uint8Array<ArrayBuffer> => {
  const frames = Math.max(1, Math.ceil(millis / MP3_FRAME_MILLIS))
  const bytes = new Uint8Array(frames * MP3_FRAME_BYTES)
  for (let frame = 0; frame < frames; frame++) {
    // 0xFFFB: sync, MPEG-1, Layer III, no CRC; 0x90: 128 kbit/s, 44.1 kHz, no padding; 0xC4: mono.
    bytes.set([0xff, 0xfb, 0x90, 0xc4], frame * MP3_FRAME_BYTES)
  }
  return bytes
}

/** Layer III bit rates (kbit/s) by index: MPEG-1, and MPEG-2 / 2.5 (ISO/IEC 11172-3 and 13818-3). */
const MP3_BITRATES = {
  mpeg1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  mpeg2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
}

/** Sample rates (Hz) by index: MPEG-1, MPEG-2, MPEG-2.5. */
const MP3_RATES = { mpeg1: [44_100, 48_000, 32_000], mpeg2: [22_050, 24_000, 16_000], mpeg25: [11_025, 12_000, 8_000] }

/**
 * The duration in seconds of an MPEG Layer III stream, as the emulator
 * "hears" an uploaded mp3: an ID3v2 tag skipped, then frame after frame
 * counted by its own header (length 144000 × kbit/s ÷ rate + padding, 1152
 * samples, for MPEG-1; 72000 × … and 576 samples for MPEG-2 and 2.5) until
 * the bytes stop being frames. `undefined` when no frame is found. The
 * gateway reads durations with a library of its own, so a billing test
 * compares two readings.
 *
 * @category audio
 */
export const mp3Seconds = (bytes: Uint8Array): number | undefined => {
  let offset = 0
  if (bytes.length >= 10 && bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33) {
    const size = ((bytes[6] & 0x7f) << 21) | ((bytes[7] & 0x7f) << 14) | ((bytes[8] & 0x7f) << 7) | (bytes[9] & 0x7f)
    offset = 10 + size + ((bytes[5] & 0x10) !== 0 ? 10 : 0)
  }
  let samples = 0
  let rate = 0
  while (offset + 4 <= bytes.length) {
    const [b0, b1, b2] = [bytes[offset], bytes[offset + 1], bytes[offset + 2]]
    if (b0 !== 0xff || (b1 & 0xe0) !== 0xe0 || ((b1 >> 1) & 3) !== 1) break
    const version = (b1 >> 3) & 3
    if (version === 1) break
    const mpeg1 = version === 3
    const kbits = (mpeg1 ? MP3_BITRATES.mpeg1 : MP3_BITRATES.mpeg2)[b2 >> 4]
    const frameRate = (mpeg1 ? MP3_RATES.mpeg1 : version === 2 ? MP3_RATES.mpeg2 : MP3_RATES.mpeg25)[(b2 >> 2) & 3]
    if (kbits === undefined || kbits === 0 || frameRate === undefined) break
    const length = Math.floor((mpeg1 ? 144_000 : 72_000) * kbits / frameRate) + ((b2 >> 1) & 1)
    samples += mpeg1 ? 1152 : 576
    rate = frameRate
    offset += length
  }
  return samples === 0 ? undefined : samples / rate
}

/** A FLAC stream: `fLaC` and a last STREAMINFO block declaring `millis` of 24 kHz 16-bit mono (no frames). */
const flacHeader = (millis: number): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(42)
  bytes.set([0x66, 0x4c, 0x61, 0x43, 0x80, 0, 0, 34])
  const view = new DataView(bytes.buffer)
  view.setUint16(8, 4096)
  view.setUint16(10, 4096)
  const samples = BigInt(Math.round(PCM_RATE * millis / 1000))
  // 20 bits rate, 3 bits channels-1, 5 bits bits-per-sample-1, 36 bits total samples.
  const packed = (BigInt(PCM_RATE) << 44n) | (0n << 41n) | (15n << 36n) | samples
  view.setBigUint64(18, packed)
  return bytes
}

/** The audio of `millis` of speech in `format`. */
const speechBytes = (format: string, millis: number): Uint8Array<ArrayBuffer> =>
  format === "mp3"
    ? mp3Silence(millis)
    : format === "wav"
    ? wavFile(pcmSilence(millis))
    : format === "flac"
    ? flacHeader(millis)
    : pcmSilence(millis)

/** Base64 of `bytes`. */
const base64 = (bytes: Uint8Array): string => {
  let binary = ""
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

const isClassicTts = (model: string): boolean => model === "tts-1" || model === "tts-1-hd"

/** The token usage OpenAI's gpt-4o-mini-tts reports: input ≈ characters / 4, output = 12.5 audio tokens a second. */
const speechUsage = (input: string, millis: number) => {
  const inputTokens = Math.ceil(input.length / 4)
  const outputTokens = Math.ceil(millis / 80)
  return { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens }
}

/** `POST /v1/audio/speech`. @category routes */
export const openAiSpeech = (context: RouteContext): Reply => {
  const body = context.body
  const model = stringOr(body.model)
  if (model === undefined) return bad("Missing required parameter: 'model'.", "model")
  if (!isClassicTts(model) && !model.startsWith("gpt-4o-mini-tts")) {
    return bad(`Invalid model ${model}. The model must be a text-to-speech model.`, "model")
  }
  const input = body.input
  if (typeof input !== "string" || input.length === 0) return bad("Missing required parameter: 'input'.", "input")
  if (input.length > 4096) {
    return bad(`Invalid 'input': string too long. Expected a string with maximum length 4096.`, "input")
  }
  const voice = body.voice
  const voiceOk = typeof voice === "string" ? VOICES.has(voice) : isObject(voice) && typeof voice.id === "string"
  if (!voiceOk) return bad(`Invalid value for 'voice': ${JSON.stringify(voice ?? null)}.`, "voice")
  if (body.instructions !== undefined) {
    if (typeof body.instructions !== "string") return bad("Invalid type for 'instructions'.", "instructions")
    if (isClassicTts(model)) return bad(`Instructions are not supported for ${model}.`, "instructions")
  }
  const format = body.response_format ?? "mp3"
  if (typeof format !== "string" || !SPEECH_FORMATS.includes(format)) {
    return bad(
      `Invalid value: '${String(format)}'. Supported values are: ${SPEECH_FORMATS.map((f) => `'${f}'`).join(", ")}.`,
      "response_format"
    )
  }
  if (format === "opus" || format === "aac") {
    return bad(`The emulator does not make ${format} audio.`, "response_format")
  }
  const speed = body.speed ?? 1
  if (typeof speed !== "number" || !(speed >= 0.25 && speed <= 4)) {
    return bad(`Invalid 'speed': expected a number between 0.25 and 4.0, got ${JSON.stringify(speed)}.`, "speed")
  }
  const streamFormat = body.stream_format ?? "audio"
  if (streamFormat !== "audio" && streamFormat !== "sse") {
    return bad(`Invalid value: '${String(streamFormat)}'. Supported values are: 'sse' and 'audio'.`, "stream_format")
  }
  if (streamFormat === "sse" && isClassicTts(model)) {
    return bad(`stream_format 'sse' is not supported for ${model}.`, "stream_format")
  }
  const millis = speechMillis(input, speed)
  const bytes = speechBytes(format, millis)
  if (streamFormat === "sse") {
    const frames: Array<string> = []
    for (let offset = 0; offset < bytes.length; offset += 4096) {
      frames.push(dataFrame({ type: "speech.audio.delta", audio: base64(bytes.subarray(offset, offset + 4096)) }))
    }
    frames.push(dataFrame({ type: "speech.audio.done", usage: speechUsage(input, millis) }))
    return sseReply(frames)
  }
  return streamedBytesReply(bytes, SPEECH_CONTENT_TYPES[format])
}

/** The extensions OpenAI's transcription accepts. */
const AUDIO_EXTENSIONS = ["flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"]

/** OpenAI's upload limit for audio (25 MB). @category audio */
export const AUDIO_LIMIT_BYTES = 25 * 1024 * 1024

const TRANSCRIBE_MODELS = ["whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"]

/** `hh:mm:ss,mmm` (SRT) or `hh:mm:ss.mmm` (VTT). */
const timestamp = (seconds: number, separator: string): string => {
  const millis = Math.round(seconds * 1000)
  const pad = (value: number, width = 2) => String(value).padStart(width, "0")
  return `${pad(Math.floor(millis / 3_600_000))}:${pad(Math.floor(millis / 60_000) % 60)}:${
    pad(Math.floor(millis / 1000) % 60)
  }${separator}${pad(millis % 1000, 3)}`
}

/** The emulated words of second `index`. */
const segmentText = (index: number): string => `Emulated segment ${index + 1}.`

/**
 * The segments the emulator hears in `seconds` of audio: one per started
 * second, `{id, start, end, text}`.
 *
 * @category audio
 */
export const transcriptSegments = (seconds: number) =>
  Array.from({ length: Math.max(1, Math.ceil(seconds)) }, (_, index) => ({
    id: index,
    start: index,
    end: Math.min(seconds, index + 1),
    text: segmentText(index)
  }))

/** `POST /v1/audio/transcriptions` (`translate` false) or `/v1/audio/translations`. */
const transcribe = (context: RouteContext, translate: boolean): Reply => {
  const body = context.body
  const file = body.file
  if (!isObject(file) || typeof file.filename !== "string") return bad("Missing required parameter: 'file'.", "file")
  const size = numberOr(file.size) ?? 0
  if (size > AUDIO_LIMIT_BYTES) {
    return bad(`Maximum content size limit (${AUDIO_LIMIT_BYTES}) exceeded (${size} bytes read)`, "file", 413)
  }
  const extension = file.filename.split(".").pop()?.toLowerCase() ?? ""
  if (!AUDIO_EXTENSIONS.includes(extension)) {
    return bad(
      `Invalid file format. Supported formats: ${JSON.stringify(AUDIO_EXTENSIONS)}`,
      "file"
    )
  }
  const model = stringOr(body.model)
  if (model === undefined) return bad("Missing required parameter: 'model'.", "model")
  if (!(translate ? model === "whisper-1" : TRANSCRIBE_MODELS.includes(model))) {
    return bad(
      `Invalid model ${model}. The model must be a ${translate ? "translation" : "transcription"} model.`,
      "model"
    )
  }
  const whisper = model === "whisper-1"
  const format = body.response_format ?? "json"
  const formats = whisper ? ["json", "text", "srt", "vtt", "verbose_json"] : ["json", "text"]
  if (typeof format !== "string" || !formats.includes(format)) {
    return bad(`response_format '${String(format)}' is not compatible with model '${model}'.`, "response_format")
  }
  if (body.stream === "true" && whisper) return bad("Streaming is not supported for whisper-1.", "stream")
  const seconds = numberOr(file.seconds) ?? 1
  const segments = transcriptSegments(seconds)
  const text = segments.map((segment) => segment.text).join(" ")
  const usage = whisper ? { type: "duration", seconds: Math.ceil(seconds) } : {
    type: "tokens",
    input_tokens: Math.ceil(seconds * 10),
    output_tokens: Math.ceil(text.length / 4),
    total_tokens: Math.ceil(seconds * 10) + Math.ceil(text.length / 4),
    input_token_details: { audio_tokens: Math.ceil(seconds * 10), text_tokens: 0 }
  }
  if (body.stream === "true") {
    // gpt-4o transcription streams: a delta per segment, then the whole text with the usage (SDK `TranscriptionStreamEvent`).
    return sseReply([
      ...segments.map((segment, index) =>
        dataFrame({ type: "transcript.text.delta", delta: index === 0 ? segment.text : ` ${segment.text}` })
      ),
      dataFrame({ type: "transcript.text.done", text, usage })
    ])
  }
  switch (format) {
    case "text":
      return bytesReply(new TextEncoder().encode(`${text}\n`), "text/plain; charset=utf-8")
    case "srt":
      return bytesReply(
        new TextEncoder().encode(
          segments.map((segment) =>
            `${segment.id + 1}\n${timestamp(segment.start, ",")} --> ${timestamp(segment.end, ",")}\n${segment.text}\n`
          ).join("\n") + "\n"
        ),
        "text/plain; charset=utf-8"
      )
    case "vtt":
      return bytesReply(
        new TextEncoder().encode(
          "WEBVTT\n\n" +
            segments.map((segment) =>
              `${timestamp(segment.start, ".")} --> ${timestamp(segment.end, ".")}\n${segment.text}\n`
            ).join("\n") + "\n"
        ),
        "text/vtt; charset=utf-8"
      )
    case "verbose_json":
      return jsonReply({
        task: translate ? "translate" : "transcribe",
        language: translate ? "english" : stringOr(body.language) ?? "english",
        duration: seconds,
        text,
        segments: segments.map((segment) => ({
          ...segment,
          seek: 0,
          tokens: [],
          temperature: 0,
          avg_logprob: -0.1,
          compression_ratio: 1,
          no_speech_prob: 0
        })),
        usage
      })
    default:
      return jsonReply({ text, usage })
  }
}

/** `POST /v1/audio/transcriptions`. @category routes */
export const openAiTranscriptions = (context: RouteContext): Reply => transcribe(context, false)

/** `POST /v1/audio/translations`. @category routes */
export const openAiTranslations = (context: RouteContext): Reply => transcribe(context, true)

/** OpenAI's moderation categories (SDK `Moderation.Categories`). */
const CATEGORIES = [
  "harassment",
  "harassment/threatening",
  "hate",
  "hate/threatening",
  "illicit",
  "illicit/violent",
  "self-harm",
  "self-harm/instructions",
  "self-harm/intent",
  "sexual",
  "sexual/minors",
  "violence",
  "violence/graphic"
]

/** `POST /v1/moderations`. @category routes */
export const openAiModerations = (context: RouteContext): Reply => {
  const body = context.body
  const model = stringOr(body.model) ?? "omni-moderation-latest"
  const omni = model.startsWith("omni-moderation")
  if (!omni && !model.startsWith("text-moderation")) {
    return bad(`Invalid model ${model}. The model must be a moderation model.`, "model")
  }
  const input = body.input
  const items: Array<{ readonly text: string; readonly images: number }> = []
  if (typeof input === "string") items.push({ text: input, images: 0 })
  else if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === "string")) {
    for (const item of input) items.push({ text: item as string, images: 0 })
  } else if (Array.isArray(input) && input.length > 0 && input.every(isObject)) {
    let text = ""
    let images = 0
    for (const part of arrayOr(input) as ReadonlyArray<JsonObject>) {
      if (part.type === "text" && typeof part.text === "string") text += part.text
      else if (part.type === "image_url" && isObject(part.image_url) && typeof part.image_url.url === "string") {
        if (!omni) return bad(`Image inputs are not supported by ${model}.`, "input")
        images++
      } else return bad("Invalid content part in 'input'.", "input")
    }
    items.push({ text, images })
  } else return bad("Invalid type for 'input': expected a string, strings, or content parts.", "input")
  const results = items.map((item) => {
    const flagged = item.text.includes("EMULATOR-FLAG")
    const categories = Object.fromEntries(CATEGORIES.map((name) => [name, flagged && name === "violence"]))
    const scores = Object.fromEntries(
      CATEGORIES.map((name) => [name, flagged && name === "violence" ? 0.97 : 0.0001])
    )
    const applied = Object.fromEntries(
      CATEGORIES.map((
        name
      ) => [name, item.images > 0 && /^(violence|self-harm|sexual)/.test(name) ? ["text", "image"] : ["text"]])
    )
    return {
      flagged,
      categories,
      category_scores: scores,
      ...(omni ? { category_applied_input_types: applied } : {})
    }
  })
  return jsonReply({ id: context.ids.next("modr-"), model, results })
}

/** Gemini's prebuilt TTS voices (ai.google.dev/gemini-api/docs/speech-generation, "Voice options"). */
const GEMINI_VOICES = new Set([
  "Zephyr",
  "Puck",
  "Charon",
  "Kore",
  "Fenrir",
  "Leda",
  "Orus",
  "Aoede",
  "Callirrhoe",
  "Autonoe",
  "Enceladus",
  "Iapetus",
  "Umbriel",
  "Algieba",
  "Despina",
  "Erinome",
  "Algenib",
  "Rasalgethi",
  "Laomedeia",
  "Achernar",
  "Alnilam",
  "Schedar",
  "Gacrux",
  "Pulcherrima",
  "Achird",
  "Zubenelgenubi",
  "Vindemiatrix",
  "Sadachbia",
  "Sadaltager",
  "Sulafat"
])

const geminiBad = (message: string, status = 400): Reply =>
  jsonReply({ error: { code: status, message, status: "INVALID_ARGUMENT" } }, status)

/**
 * Generate-content with `responseModalities: ["AUDIO"]` on a `*-tts` model
 * (ai.google.dev/gemini-api/docs/speech-generation): the text of the
 * contents read aloud as 24 kHz 16-bit little-endian mono PCM
 * (`inlineData.mimeType` `audio/L16;codec=pcm;rate=24000`), `speechMillis`
 * of the text long, with the voice of
 * `speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName` (a Gemini voice;
 * default Kore); usage in `usageMetadata` (25 audio tokens a second).
 * Audio output on another model is refused.
 *
 * @category routes
 */
export const geminiSpeechAnswer = (context: RouteContext, config: JsonObject): Reply => {
  if (!context.model.includes("tts")) {
    return geminiBad("The requested combination of response modalities (AUDIO) is not supported by the model.")
  }
  const speech = isObject(config.speechConfig) ? config.speechConfig : {}
  const voiceConfig = isObject(speech.voiceConfig) ? speech.voiceConfig : {}
  const prebuilt = isObject(voiceConfig.prebuiltVoiceConfig) ? voiceConfig.prebuiltVoiceConfig : {}
  const voice = prebuilt.voiceName ?? "Kore"
  if (typeof voice !== "string" || !GEMINI_VOICES.has(voice)) {
    return geminiBad(`Voice name ${String(voice)} is not supported.`)
  }
  let text = ""
  for (const content of arrayOr(context.body.contents)) {
    for (const part of arrayOr(isObject(content) ? content.parts : undefined)) {
      if (isObject(part) && typeof part.text === "string") text += part.text
    }
  }
  if (text.length === 0) return geminiBad("Model tried to generate text, but it should only be used for TTS.")
  const millis = speechMillis(text, 1)
  const audio = pcmSilence(millis)
  const promptTokens = Math.ceil(text.length / 4)
  const audioTokens = Math.ceil(millis / 40)
  return jsonReply({
    candidates: [{
      content: {
        role: "model",
        parts: [{ inlineData: { mimeType: `audio/L16;codec=pcm;rate=${PCM_RATE}`, data: base64(audio) } }]
      },
      finishReason: "STOP",
      index: 0
    }],
    usageMetadata: {
      promptTokenCount: promptTokens,
      candidatesTokenCount: audioTokens,
      totalTokenCount: promptTokens + audioTokens,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
      candidatesTokensDetails: [{ modality: "AUDIO", tokenCount: audioTokens }]
    },
    modelVersion: context.model,
    responseId: context.ids.next("resp-")
  })
}

/** The duration of a WAV file from the first bytes of its base64, or `undefined`. */
const wavSecondsOfBase64 = (data: string): number | undefined => {
  let head: Uint8Array
  try {
    head = Uint8Array.from(atob(data.slice(0, 88)), (char) => char.charCodeAt(0))
  } catch {
    return undefined
  }
  const text = (start: number, end: number) => String.fromCharCode(...head.subarray(start, end))
  if (head.length < 44 || text(0, 4) !== "RIFF" || text(8, 12) !== "WAVE" || text(36, 40) !== "data") return undefined
  const view = new DataView(head.buffer)
  const byteRate = view.getUint32(28, true)
  return byteRate === 0 ? undefined : view.getUint32(40, true) / byteRate
}

/** The duration of an MP3 file given as base64 (`mp3Seconds`), or `undefined`. */
const mp3SecondsOfBase64 = (data: string): number | undefined => {
  try {
    return mp3Seconds(Uint8Array.from(atob(data), (char) => char.charCodeAt(0)))
  } catch {
    return undefined
  }
}

/**
 * Generate-content with audio as inline data in the last user turn (not a
 * TTS model): the emulator "hears" the audio and answers the transcript
 * `transcriptSegments` gives for its duration (a WAV header's, or an MP3's
 * frames counted by `mp3Seconds`; 1 second for other containers), as Gemini answers a transcription prompt
 * (ai.google.dev/gemini-api/docs/audio). Usage: 32 tokens a second of audio
 * (Gemini's published rate) plus the text's, output ceil(text / 4).
 * `undefined` when the request carries no audio or streams.
 *
 * @category routes
 */
export const geminiTranscriptAnswer = (context: RouteContext): Reply | undefined => {
  if (!context.path.endsWith(":generateContent")) return undefined
  const contents = arrayOr(context.body.contents).filter(isObject)
  const last = contents.at(-1)
  if (last === undefined || (last.role !== undefined && last.role !== "user")) return undefined
  let audio: string | undefined
  let mimeType = ""
  let textLength = 0
  for (const part of arrayOr(last.parts)) {
    if (!isObject(part)) continue
    if (typeof part.text === "string") textLength += part.text.length
    const inline = isObject(part.inlineData) ? part.inlineData : isObject(part.inline_data) ? part.inline_data : {}
    const type = stringOr(inline.mimeType) ?? stringOr(inline.mime_type) ?? ""
    if (type.startsWith("audio/") && typeof inline.data === "string") {
      audio = inline.data
      mimeType = type
    }
  }
  if (audio === undefined) return undefined
  const seconds =
    (mimeType.includes("wav")
      ? wavSecondsOfBase64(audio)
      : /mpeg|mp3/.test(mimeType)
      ? mp3SecondsOfBase64(audio)
      : undefined) ?? 1
  const text = transcriptSegments(seconds).map((segment) => segment.text).join(" ")
  const promptTokens = Math.ceil(seconds * 32) + Math.ceil(textLength / 4)
  const outputTokens = Math.ceil(text.length / 4)
  return jsonReply({
    candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: {
      promptTokenCount: promptTokens,
      candidatesTokenCount: outputTokens,
      totalTokenCount: promptTokens + outputTokens
    },
    modelVersion: context.model,
    responseId: context.ids.next("resp-")
  })
}
