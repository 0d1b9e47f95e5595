/**
 * The audio and moderation routes, in OpenAI's wire format (Bearer key,
 * errors in the gateway envelope with `param` naming the field):
 *
 * - `POST /v1/audio/speech` (JSON: `model`, `input` ≤ 4096 characters,
 *   `voice` a name or `{id}`, `instructions`, `response_format` mp3 | opus |
 *   aac | flac | wav | pcm, `speed` 0.25–4, `stream_format` sse | audio),
 *   answered as the upstream's audio (or SSE) streams in;
 * - `POST /v1/audio/transcriptions` and `POST /v1/audio/translations`
 *   (multipart: `file` at most 25 MB in an audio container that its bytes
 *   confirm, `model`, `language`, `prompt`, `response_format` json | text |
 *   srt | vtt | verbose_json, `timestamp_granularities[]` word | segment with
 *   verbose_json, `temperature`, `stream` for the models that stream);
 * - `POST /v1/moderations` (JSON: `input` as a string, strings, or `text` /
 *   `image_url` parts; `model`, default `omni-moderation-latest`).
 *
 * Field rules from platform.openai.com/docs/api-reference/audio and
 * …/moderations, as the `openai` SDK types them (`resources/audio/*.d.ts`).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { fileTypeFromBuffer } from "../domain/FileType.ts"
import { audioMillis, durationBoundMillis, wavMillis } from "../formats/audio/AudioFile.ts"
import { InvalidRequest } from "../errors/GatewayError.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { readFormData, readJsonObject } from "../http/Body.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { AudioRelay } from "../relay/audio/AudioRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"

/** OpenAI's limit on an uploaded audio file (25 MB). @category limits */
export const AUDIO_FILE_LIMIT_BYTES = 25 * 1024 * 1024

/** Room for the form's other fields and boundaries above the file limit. */
const FORM_OVERHEAD_BYTES = 1024 * 1024

/** OpenAI's longest speech input (characters). @category limits */
export const SPEECH_INPUT_LIMIT = 4096

/** Content types of the speech formats. @category formats */
export const SPEECH_FORMATS: Record<string, string> = {
  mp3: "audio/mpeg",
  opus: "audio/ogg",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm"
}

const TRANSCRIPT_FORMATS = ["json", "text", "srt", "vtt", "verbose_json"]
const GRANULARITIES = ["word", "segment"]

/** The containers OpenAI transcribes, by file extension. */
const AUDIO_EXTENSIONS = ["flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "oga", "wav", "webm"]

/** Declared MIME types an audio upload may carry (empty and `application/octet-stream` say nothing). */
const AUDIO_MIME = /^(audio\/[\w.+-]+|video\/(mp4|mpeg|webm|ogg)|application\/(octet-stream|ogg))$/i

/** Sniffed types (file-type) that are audio containers OpenAI takes. */
const SNIFFED_AUDIO =
  /^(audio\/(wav|vnd\.wave|x-wav|mpeg|mp4|x-m4a|ogg|opus|flac|x-flac|webm|aac)|video\/(mp4|webm|ogg|mpeg))$/

const invalid = (message: string, param: string) => new InvalidRequest({ message, param })

/** A JSON value as a short quoted string for an error message. */
const quoted = (value: unknown): string => JSON.stringify(value)?.slice(0, 60) ?? String(value)

/** Checks a speech body; the characters `input` bills and the answer's content type. */
const checkSpeech = (body: Record<string, unknown>) => {
  const model = body.model
  if (typeof model !== "string" || model.length === 0) return invalid("`model` must be a non-empty string.", "model")
  const input = body.input
  if (typeof input !== "string" || input.length === 0) return invalid("`input` must be a non-empty string.", "input")
  const characters = [...input].length
  if (characters > SPEECH_INPUT_LIMIT) {
    return invalid(`\`input\` has ${characters} characters; at most ${SPEECH_INPUT_LIMIT} are allowed.`, "input")
  }
  const voice = body.voice
  const voiceOk = (typeof voice === "string" && voice.length > 0 && voice.length <= 100) ||
    (typeof voice === "object" && voice !== null && typeof (voice as { id?: unknown }).id === "string")
  if (!voiceOk) return invalid("`voice` must be a voice name or an object with a string `id`.", "voice")
  if (body.instructions !== undefined && typeof body.instructions !== "string") {
    return invalid("`instructions` must be a string.", "instructions")
  }
  const format = body.response_format ?? "mp3"
  if (typeof format !== "string" || !Object.hasOwn(SPEECH_FORMATS, format)) {
    return invalid(
      `\`response_format\` ${quoted(format)} is not one of ${Object.keys(SPEECH_FORMATS).join(", ")}.`,
      "response_format"
    )
  }
  const speed = body.speed
  if (speed !== undefined && (typeof speed !== "number" || !(speed >= 0.25 && speed <= 4))) {
    return invalid(`\`speed\` must be a number from 0.25 to 4.0, got ${quoted(speed)}.`, "speed")
  }
  const streamFormat = body.stream_format ?? "audio"
  if (streamFormat !== "audio" && streamFormat !== "sse") {
    return invalid(`\`stream_format\` ${quoted(streamFormat)} is not one of sse, audio.`, "stream_format")
  }
  return {
    model,
    characters,
    contentType: streamFormat === "sse" ? "text/event-stream" : SPEECH_FORMATS[format]
  }
}

/** Checks a transcription or translation form; the model and the file's measured and bounded duration. */
const checkTranscription = (form: FormData, translate: boolean) =>
  Effect.gen(function* () {
    const file = form.get("file")
    if (!(file instanceof File)) return yield* invalid("`file` must be an uploaded audio file.", "file")
    if (file.size > AUDIO_FILE_LIMIT_BYTES) {
      return yield* invalid(
        `\`file\` is ${file.size} bytes; at most 25 MB (${AUDIO_FILE_LIMIT_BYTES}) are allowed.`,
        "file"
      )
    }
    if (file.size === 0) return yield* invalid("`file` is empty.", "file")
    const extension = file.name.includes(".") ? file.name.split(".").pop()!.toLowerCase() : ""
    if (!AUDIO_EXTENSIONS.includes(extension)) {
      return yield* invalid(`\`file\` must be one of ${AUDIO_EXTENSIONS.join(", ")} (by its name's extension).`, "file")
    }
    const declared = file.type.split(";")[0].trim()
    if (declared.length > 0 && !AUDIO_MIME.test(declared)) {
      return yield* invalid(`\`file\` has the MIME type ${quoted(declared)}, which is not audio.`, "file")
    }
    const bytes = new Uint8Array(yield* Effect.promise(() => file.arrayBuffer()))
    const sniffed = yield* Effect.promise(() => fileTypeFromBuffer(bytes).catch(() => undefined))
    if (sniffed === undefined || !SNIFFED_AUDIO.test(sniffed.mime)) {
      return yield* invalid("`file` is not in a supported audio container (its bytes do not say so).", "file")
    }
    const model = form.get("model")
    if (typeof model !== "string" || model.length === 0) {
      return yield* invalid("`model` must be a non-empty string.", "model")
    }
    const format = form.get("response_format") ?? "json"
    if (typeof format !== "string" || !TRANSCRIPT_FORMATS.includes(format)) {
      return yield* invalid(
        `\`response_format\` ${quoted(format)} is not one of ${TRANSCRIPT_FORMATS.join(", ")}.`,
        "response_format"
      )
    }
    const granularities = form.getAll("timestamp_granularities[]")
    for (const granularity of granularities) {
      if (typeof granularity !== "string" || !GRANULARITIES.includes(granularity)) {
        return yield* invalid(
          `\`timestamp_granularities[]\` ${quoted(granularity)} is not one of word, segment.`,
          "timestamp_granularities[]"
        )
      }
    }
    if (granularities.length > 0 && format !== "verbose_json") {
      return yield* invalid(
        "`timestamp_granularities[]` needs `response_format` verbose_json.",
        "timestamp_granularities[]"
      )
    }
    for (const name of translate ? ["prompt"] : ["language", "prompt"]) {
      const value = form.get(name)
      if (value !== null && typeof value !== "string") return yield* invalid(`\`${name}\` must be text.`, name)
    }
    if (translate && form.has("language")) {
      return yield* invalid("`language` is not a parameter of translations (the output is English).", "language")
    }
    const temperature = form.get("temperature")
    if (
      temperature !== null &&
      (typeof temperature !== "string" || !(Number(temperature) >= 0 && Number(temperature) <= 1))
    ) {
      return yield* invalid("`temperature` must be a number from 0 to 1.", "temperature")
    }
    const stream = form.get("stream")
    if (stream !== null && stream !== "false" && stream !== "true") {
      return yield* invalid("`stream` must be true or false.", "stream")
    }
    if (stream === "true" && translate) return yield* invalid("Translations do not stream.", "stream")
    // A WAV file's own header first (exact, and a `data` chunk cut short is measured as it is), else the library.
    const measuredMillis = (sniffed.mime.includes("wav") ? wavMillis(bytes) : undefined) ??
      (yield* Effect.promise(() => audioMillis(bytes, sniffed.mime)))
    return {
      model,
      measuredMillis,
      // Vendors report whole seconds (`usage.seconds`): the hold is the measured duration rounded up to one.
      boundMillis: measuredMillis === undefined
        ? durationBoundMillis(file.size)
        : Math.ceil(measuredMillis / 1000) * 1000,
      mimeType: sniffed.mime
    }
  })

/** Rough tokens of a moderation's text (the text routes' estimate: characters / 4), and checks `input`. */
const checkModeration = (body: Record<string, unknown>) => {
  const model = body.model ?? "omni-moderation-latest"
  if (typeof model !== "string" || model.length === 0) return invalid("`model` must be a non-empty string.", "model")
  const input = body.input
  let characters = 0
  if (typeof input === "string") characters = input.length
  else if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === "string")) {
    characters = input.reduce((sum: number, item: string) => sum + item.length, 0)
  } else if (Array.isArray(input) && input.length > 0) {
    for (const [index, part] of input.entries()) {
      const object = typeof part === "object" && part !== null ? part as Record<string, unknown> : {}
      if (object.type === "text" && typeof object.text === "string") characters += object.text.length
      else if (
        object.type === "image_url" && typeof object.image_url === "object" && object.image_url !== null &&
        typeof (object.image_url as { url?: unknown }).url === "string"
      ) continue
      else {
        return invalid(
          `\`input[${index}]\` must be {type: "text", text} or {type: "image_url", image_url: {url}}.`,
          `input[${index}]`
        )
      }
    }
  } else return invalid("`input` must be a string, a non-empty array of strings, or content parts.", "input")
  return { model, promptTokens: Math.ceil(characters / 4) }
}

/** @category services */
export class Audio extends Context.Service<Audio, {
  /** `POST /v1/audio/speech`. Never fails: errors are rendered in the gateway envelope. */
  readonly speech: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `POST /v1/audio/transcriptions` (`translate` false) or `/v1/audio/translations`. Never fails. */
  readonly transcribe: (
    httpRequest: HttpServerRequest.HttpServerRequest,
    translate: boolean
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `POST /v1/moderations`. Never fails. */
  readonly moderate: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/AudioRoutes/Audio") {
  /** Needs `Auth`, `GatewaySettings` and `AudioRelay`. */
  static readonly layer = Layer.effect(
    Audio,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const relay = yield* AudioRelay

      const authenticate = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))

      const speech = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* authenticate(httpRequest)
          const body = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const checked = checkSpeech(body)
          if (checked instanceof InvalidRequest) return yield* checked
          return yield* relay.run({ operation: "speech", principal, body, ...checked })
        }).pipe(respondWith(encodeOpenAiError))

      const transcribe = (httpRequest: HttpServerRequest.HttpServerRequest, translate: boolean) =>
        Effect.gen(function* () {
          const principal = yield* authenticate(httpRequest)
          const form = yield* readFormData(httpRequest, AUDIO_FILE_LIMIT_BYTES + FORM_OVERHEAD_BYTES).pipe(
            Effect.catchTag(
              "PayloadTooLarge",
              () => Effect.fail(invalid(`\`file\` is larger than 25 MB (${AUDIO_FILE_LIMIT_BYTES} bytes).`, "file"))
            )
          )
          const checked = yield* checkTranscription(form, translate)
          return yield* relay.run({
            operation: translate ? "translations" : "transcriptions",
            principal,
            form,
            ...checked
          })
        }).pipe(respondWith(encodeOpenAiError))

      const moderate = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* authenticate(httpRequest)
          const body = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const checked = checkModeration(body)
          if (checked instanceof InvalidRequest) return yield* checked
          return yield* relay.run({ operation: "moderations", principal, body, ...checked })
        }).pipe(respondWith(encodeOpenAiError))

      return Audio.of({ speech, transcribe, moderate })
    })
  )
}

/**
 * `POST /v1/audio/speech`, `/v1/audio/transcriptions`, `/v1/audio/translations` and `/v1/moderations`.
 *
 * @category routes
 */
export const AudioRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const audio = yield* Audio
  yield* router.add("POST", "/v1/audio/speech", audio.speech)
  yield* router.add("POST", "/v1/audio/transcriptions", (request) => audio.transcribe(request, false))
  yield* router.add("POST", "/v1/audio/translations", (request) => audio.transcribe(request, true))
  yield* router.add("POST", "/v1/moderations", audio.moderate)
}))
