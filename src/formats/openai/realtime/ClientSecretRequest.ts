/**
 * The body of `POST /v1/realtime/client_secrets` (`ClientSecretCreateParams` in the `openai` package 7.57.0,
 * `resources/realtime/client-secrets.ts`): `expires_after {anchor: "created_at", seconds: 10…7200}` (default 600 s)
 * and `session`, a Realtime session's settings (`RealtimeSessionCreateRequest`: `type: "realtime"`, `model`,
 * `instructions`, `audio`, `tools`, …). The gateway needs the model to route the sessions the secret opens; the
 * other settings are kept as given and sent upstream as the session's first `session.update` (without `model`,
 * which a session cannot change). Transcription sessions (`type: "transcription"`) are not offered.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { InvalidRequest } from "../../../errors/GatewayError.ts"

/** How an ephemeral key begins (OpenAI's are `ek_…`). @category constants */
export const CLIENT_SECRET_PREFIX = "ek_"

/** Seconds a secret lives when the body names none (the SDK's documented default). */
const DEFAULT_SECONDS = 600
/** The range of `expires_after.seconds` (`ClientSecretCreateParams.ExpiresAfter`). */
const MIN_SECONDS = 10
const MAX_SECONDS = 7200
/** Longest session settings kept, in JSON characters. */
const MAX_SESSION_CHARACTERS = 64 * 1024
/** Longest model name taken. */
const MAX_MODEL_CHARACTERS = 200

/** A decoded request. @category models */
export interface ClientSecretRequest {
  readonly model: string
  /** The session settings (with `type: "realtime"`, without `model`), as the session's first `session.update`. */
  readonly session: Record<string, unknown>
  /** The secret's life, in seconds. */
  readonly seconds: number
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const refuse = (message: string, param: string) => Effect.fail(new InvalidRequest({ message, param }))

/**
 * Decodes a client-secret body. Fails with `InvalidRequest` naming the field (`expires_after.anchor`,
 * `expires_after.seconds`, `session`, `session.type`, `session.model`).
 *
 * @category decoding
 */
export const decodeClientSecretRequest = (
  body: Record<string, unknown>
): Effect.Effect<ClientSecretRequest, InvalidRequest> => {
  const expiresAfter = body.expires_after
  let seconds = DEFAULT_SECONDS
  if (expiresAfter !== undefined && expiresAfter !== null) {
    if (!isObject(expiresAfter)) return refuse("`expires_after` must be an object.", "expires_after")
    if (expiresAfter.anchor !== undefined && expiresAfter.anchor !== "created_at") {
      return refuse('`expires_after.anchor` must be "created_at".', "expires_after.anchor")
    }
    if (expiresAfter.seconds !== undefined) {
      const given = expiresAfter.seconds
      if (typeof given !== "number" || !Number.isInteger(given) || given < MIN_SECONDS || given > MAX_SECONDS) {
        return refuse(
          `\`expires_after.seconds\` must be an integer from ${MIN_SECONDS} to ${MAX_SECONDS}.`,
          "expires_after.seconds"
        )
      }
      seconds = given
    }
  }
  const session = body.session
  if (!isObject(session)) return refuse("`session` must be an object naming the session's `model`.", "session")
  if (session.type !== undefined && session.type !== "realtime") {
    return refuse(
      session.type === "transcription"
        ? 'Transcription sessions are not offered; use `type: "realtime"`.'
        : '`session.type` must be "realtime".',
      "session.type"
    )
  }
  const model = session.model
  if (typeof model !== "string" || model === "" || model.length > MAX_MODEL_CHARACTERS) {
    return refuse("`session.model` must name the model the secret's sessions use.", "session.model")
  }
  const { model: _model, ...settings } = session
  const kept = { ...settings, type: "realtime" }
  if (JSON.stringify(kept).length > MAX_SESSION_CHARACTERS) {
    return refuse(`\`session\` is larger than ${MAX_SESSION_CHARACTERS} characters.`, "session")
  }
  return Effect.succeed({ model, session: kept, seconds })
}
