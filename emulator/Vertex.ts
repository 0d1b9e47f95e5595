/**
 * Google Vertex AI in the emulator, under the path prefix `/vertex` (a channel's `base_url` is
 * `{emulator}/vertex`, so the prefix rule of `BaseUrl.ts` is exercised too):
 *
 * - `POST /vertex/token`: Google's OAuth 2.0 token endpoint for service accounts
 *   (developers.google.com/identity/protocols/oauth2/service-account, "Making the access token request"): a form
 *   with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and `assertion`, an RS256 JWT verified with
 *   `jose` against the public key of the service-account key the emulator issued (`serviceAccountKey`; its RSA key
 *   pair is made when the emulator starts). `iss` must be the key's `client_email`, `aud` its `token_uri` (or
 *   Google's own `https://oauth2.googleapis.com/token`, which `google-auth-library` always writes), `scope`
 *   present, `iat`/`exp` at most an hour apart and `exp` not past. A refusal is Google's
 *   `{"error": "invalid_grant" | "invalid_scope" | "unsupported_grant_type", "error_description": …}` with 400; an
 *   answer is `{access_token, expires_in: 3599, token_type: "Bearer"}`.
 * - Model calls (under `/vertex/v1` or `/vertex/v1beta1`), which take `Authorization: Bearer <a token it issued>` or `x-goog-api-key: <a test API key>`
 *   (`VERTEX_TEST_API_KEY`), else 401 `UNAUTHENTICATED`; the project must be the emulator's (`VERTEX_TEST_PROJECT`,
 *   else 403 `PERMISSION_DENIED`) and the location one of `VERTEX_LOCATIONS` (else 400):
 *   - `POST /vertex/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent` and
 *     `:streamGenerateContent` (`?alt=sse` for SSE), the Gemini emulator's answers, with Vertex AI's stricter
 *     request: every content needs its `role`, and the Gemini API's `store` is an unknown field. With an API key
 *     the express-mode path without project and location (`/vertex/v1/publishers/google/models/…`) is served too.
 *   - `…/publishers/anthropic/models/{model}:rawPredict` and `:streamRawPredict`: the Anthropic emulator's
 *     Messages answers for a body with `anthropic_version` and without `model`
 *     (docs.anthropic.com/en/api/claude-on-vertex-ai); `stream` must agree with the method.
 *   - `…/publishers/google/models/{model}:predict`: text embeddings, `{instances: [{content, task_type?, title?}],
 *     parameters: {outputDimensionality?}}` → `{predictions: [{embeddings: {values, statistics: {truncated,
 *     token_count}}}]}` (cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api).
 *
 * The recorded key of a call is the service account's `client_email` (token calls) or the API key.
 *
 * @since 0.1.0
 */
import { decodeJwt, decodeProtectedHeader, exportPKCS8, exportSPKI, generateKeyPair, importSPKI, jwtVerify } from "jose"
import { anthropicMessages } from "./Anthropic.ts"
import { defaultDimensions, embeddingVector } from "./Embeddings.ts"
import { geminiGenerate } from "./Gemini.ts"
import { jsonReply, type Reply } from "./Sse.ts"
import { arrayOr, type Handler, isObject, type JsonObject, numberOr, objectOr, type RouteContext } from "./Wire.ts"

/** The emulator's path prefix for Vertex AI. @category constants */
export const VERTEX_PREFIX = "/vertex"

/** The one Google Cloud project the emulator serves. @category constants */
export const VERTEX_TEST_PROJECT = "sluice-test-project"

/** The Vertex AI API key (express mode) the emulator takes. @category constants */
export const VERTEX_TEST_API_KEY = "sk-test-vertex-express-key"

/** The service account's email in the keys the emulator issues. @category constants */
export const VERTEX_TEST_CLIENT_EMAIL = `sluice-emulator@${VERTEX_TEST_PROJECT}.iam.gserviceaccount.com`

/** Google's token endpoint, the `aud` `google-auth-library` writes whatever the key's `token_uri`. */
const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"

/** The locations the emulator serves (a few of Vertex AI's regions, the multi-regions and `global`). */
export const VERTEX_LOCATIONS: ReadonlySet<string> = new Set([
  "global",
  "us",
  "eu",
  "us-central1",
  "us-east5",
  "europe-west1",
  "europe-west4",
  "asia-southeast1"
])

/** Seconds a token the emulator issues lasts (Google's: 3599). */
const TOKEN_SECONDS = 3599

/** The most tokens remembered (the oldest forgotten beyond it). */
const MAX_TOKENS = 10_000

/** The most instances of one `:predict` call. */
const MAX_INSTANCES = 250

/** A token endpoint answer: status and JSON body. @category models */
export interface TokenAnswer {
  readonly status: number
  readonly body: JsonObject
}

/** Who a model call authenticated as. @category models */
export type VertexCaller =
  | { readonly ok: true; readonly key: string; readonly via: "token" | "api-key" }
  | { readonly ok: false }

/** The emulator's Vertex AI credentials: the key it issues, its token endpoint and the check of model calls. */
export interface VertexAuthority {
  /**
   * A service-account key JSON (as text) whose `token_uri` is this emulator's token endpoint, signed by the key
   * pair made at start (`private_key_id` names it).
   */
  readonly serviceAccountKey: () => Promise<string>
  /** Answers a token request's form body (`application/x-www-form-urlencoded`). */
  readonly token: (form: string) => Promise<TokenAnswer>
  /** Who a model call with `headers` is: a live token it issued, or a test API key. */
  readonly caller: (headers: Headers) => VertexCaller
}

const grantError = (error: string, description: string): TokenAnswer => ({
  status: 400,
  body: { error, error_description: description }
})

/**
 * The emulator's Vertex AI credentials for an emulator at `baseUrl` (token endpoint `{baseUrl}/vertex/token`);
 * `apiKeys` are the API keys model calls may carry instead of a token.
 *
 * @category auth
 */
export const makeVertexAuthority = (baseUrl: () => string, apiKeys: ReadonlyArray<string>): VertexAuthority => {
  const keyId = `emu-${crypto.randomUUID().replaceAll("-", "")}`
  const pair = generateKeyPair("RS256", { extractable: true })
  const tokens = new Map<string, { readonly email: string; readonly expiresAt: number }>()
  const tokenUri = () => `${baseUrl()}${VERTEX_PREFIX}/token`

  const serviceAccountKey = async () => {
    const { privateKey } = await pair
    return JSON.stringify({
      type: "service_account",
      project_id: VERTEX_TEST_PROJECT,
      private_key_id: keyId,
      private_key: await exportPKCS8(privateKey),
      client_email: VERTEX_TEST_CLIENT_EMAIL,
      client_id: "100000000000000000001",
      token_uri: tokenUri()
    })
  }

  const token = async (form: string): Promise<TokenAnswer> => {
    const fields = new URLSearchParams(form)
    if (fields.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
      return grantError("unsupported_grant_type", "Invalid grant_type: " + (fields.get("grant_type") ?? ""))
    }
    const assertion = fields.get("assertion") ?? ""
    let issuer: unknown
    let kid: unknown
    try {
      issuer = decodeJwt(assertion).iss
      kid = decodeProtectedHeader(assertion).kid
    } catch {
      return grantError("invalid_grant", "Invalid JWT: the assertion is not a JWT.")
    }
    if (issuer !== VERTEX_TEST_CLIENT_EMAIL) return grantError("invalid_grant", "Invalid grant: account not found")
    if (kid !== undefined && kid !== keyId) return grantError("invalid_grant", "Invalid JWT Signature.")
    const { publicKey } = await pair
    const verifier = await importSPKI(await exportSPKI(publicKey), "RS256")
    let claims: JsonObject
    try {
      claims = (await jwtVerify(assertion, verifier, { algorithms: ["RS256"] })).payload as JsonObject
    } catch (error) {
      const expired = error instanceof Error && "code" in error && error.code === "ERR_JWT_EXPIRED"
      return grantError(
        "invalid_grant",
        expired
          ? "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your " +
            "iat and exp values in the JWT claim."
          : "Invalid JWT Signature."
      )
    }
    const iat = numberOr(claims.iat)
    const exp = numberOr(claims.exp)
    const now = Math.floor(Date.now() / 1000)
    if (iat === undefined || exp === undefined || exp - iat > 3600 || exp <= now || iat > now + 300) {
      return grantError(
        "invalid_grant",
        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat " +
          "and exp values in the JWT claim."
      )
    }
    if (claims.aud !== tokenUri() && claims.aud !== GOOGLE_TOKEN_URL) {
      return grantError("invalid_grant", "Invalid JWT: Failed audience check.")
    }
    if (typeof claims.scope !== "string" || claims.scope.trim() === "") {
      return grantError("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
    }
    if (tokens.size >= MAX_TOKENS) tokens.delete(tokens.keys().next().value!)
    const accessToken = `ya29.emu-${crypto.randomUUID().replaceAll("-", "")}`
    tokens.set(accessToken, { email: VERTEX_TEST_CLIENT_EMAIL, expiresAt: Date.now() + TOKEN_SECONDS * 1000 })
    return { status: 200, body: { access_token: accessToken, expires_in: TOKEN_SECONDS, token_type: "Bearer" } }
  }

  const caller = (headers: Headers): VertexCaller => {
    const bearer = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1]
    if (bearer !== undefined) {
      const issued = tokens.get(bearer)
      return issued !== undefined && issued.expiresAt > Date.now()
        ? { ok: true, key: issued.email, via: "token" }
        : { ok: false }
    }
    const apiKey = headers.get("x-goog-api-key")
    return apiKey !== null && apiKeys.includes(apiKey) ? { ok: true, key: apiKey, via: "api-key" } : { ok: false }
  }

  return { serviceAccountKey, token, caller }
}

/**
 * The 401 Google answers a call without valid credentials.
 *
 * @category auth
 */
export const vertexUnauthenticated = {
  error: {
    code: 401,
    message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other " +
      "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
    status: "UNAUTHENTICATED"
  }
}

const googleError = (status: number, code: string, message: string): Reply =>
  jsonReply({ error: { code: status, message, status: code } }, status)

/**
 * A model call's path (API version `v1`, or `v1beta1`, `@google/genai`'s default): project and location (absent on
 * the express-mode path), publisher, model, method.
 */
const modelPath =
  /^\/vertex\/v1(?:beta1)?\/(?:projects\/([^/]+)\/locations\/([^/]+)\/)?publishers\/(google|anthropic)\/models\/([^/:]+):([A-Za-z]+)$/

/** A model call's place, read from its path. @category models */
export interface VertexCall {
  readonly project: string | undefined
  readonly location: string | undefined
  readonly publisher: "google" | "anthropic"
  readonly model: string
  readonly method: string
}

/**
 * The model call at `path`, or `undefined` when it is not one.
 *
 * @category routing
 */
export const vertexCallOf = (path: string): VertexCall | undefined => {
  const match = modelPath.exec(path)
  if (match === null) return undefined
  return {
    project: match[1] === undefined ? undefined : decodeURIComponent(match[1]),
    location: match[2] === undefined ? undefined : decodeURIComponent(match[2]),
    publisher: match[3] as "google" | "anthropic",
    model: decodeURIComponent(match[4]),
    method: match[5]
  }
}

/**
 * Why the call's place is refused (an unknown project, location, or the express path reached with a token), or
 * `undefined`. Express mode (no project in the path) takes API keys only.
 *
 * @category routing
 */
export const placeError = (call: VertexCall, via: "token" | "api-key"): Reply | undefined => {
  if (call.project === undefined) {
    return via === "api-key" ? undefined : googleError(
      403,
      "PERMISSION_DENIED",
      "Express mode takes an API key; a call with an access token names its project and location."
    )
  }
  if (call.project !== VERTEX_TEST_PROJECT) {
    return googleError(
      403,
      "PERMISSION_DENIED",
      `Permission denied on resource project ${call.project}.`
    )
  }
  if (call.location === undefined || !VERTEX_LOCATIONS.has(call.location)) {
    return googleError(400, "INVALID_ARGUMENT", `Location ${call.location ?? ""} is not supported.`)
  }
  return undefined
}

/** `generateContent` / `streamGenerateContent`: Vertex AI's stricter request, then the Gemini emulator's answer. */
const vertexGenerate: Handler = (context) => {
  if (context.body.store !== undefined) {
    return googleError(
      400,
      "INVALID_ARGUMENT",
      'Invalid JSON payload received. Unknown name "store": Cannot find field.'
    )
  }
  for (const [index, content] of arrayOr(context.body.contents).entries()) {
    const role = objectOr(content).role
    if (role !== "user" && role !== "model") {
      return googleError(
        400,
        "INVALID_ARGUMENT",
        `Please use a valid role: user, model. (contents[${index}].role)`
      )
    }
  }
  return geminiGenerate(context)
}

const anthropicInvalid = (message: string): Reply =>
  jsonReply({ type: "error", error: { type: "invalid_request_error", message } }, 400)

/** `rawPredict` / `streamRawPredict`: the Vertex body checked, then the Anthropic emulator's Messages answer. */
const vertexRawPredict = (stream: boolean): Handler => (context) => {
  const { anthropic_version: version, ...body } = context.body
  if (body.model !== undefined) return anthropicInvalid("model: Extra inputs are not permitted")
  if (typeof version !== "string" || !/^(vertex-2023-10-16|\d{4}-\d{2}-\d{2})$/.test(version)) {
    return anthropicInvalid("anthropic_version: Field required (vertex-2023-10-16)")
  }
  if ((body.stream === true) !== stream) {
    return anthropicInvalid(
      stream
        ? "stream: streamRawPredict takes stream: true"
        : "stream: rawPredict takes no stream (use streamRawPredict)"
    )
  }
  const headers = new Headers(context.headers)
  headers.set("anthropic-version", "2023-06-01")
  return anthropicMessages({ ...context, headers, body: { ...body, model: context.model } })
}

/** `:predict` of a text-embedding model. */
const vertexPredict: Handler = (context: RouteContext) => {
  const instances = context.body.instances
  if (!Array.isArray(instances) || instances.length === 0) {
    return googleError(400, "INVALID_ARGUMENT", "instances: at least one instance is required.")
  }
  if (instances.length > MAX_INSTANCES) {
    return googleError(400, "INVALID_ARGUMENT", `instances: at most ${MAX_INSTANCES} instances in one request.`)
  }
  const parameters = objectOr(context.body.parameters)
  const asked = numberOr(parameters.outputDimensionality)
  if (asked !== undefined && (!Number.isInteger(asked) || asked < 1)) {
    return googleError(400, "INVALID_ARGUMENT", "parameters.outputDimensionality: expected a positive integer.")
  }
  const dimensions = asked ?? defaultDimensions("gemini", context.model)
  const predictions: Array<JsonObject> = []
  let characters = 0
  for (const [index, instance] of instances.entries()) {
    const content = isObject(instance) ? instance.content : undefined
    if (typeof content !== "string" || content.length === 0) {
      return googleError(400, "INVALID_ARGUMENT", `instances[${index}].content: expected a non-empty string.`)
    }
    characters += content.length
    predictions.push({
      embeddings: {
        values: embeddingVector(context.model, content, dimensions),
        statistics: { truncated: false, token_count: Math.ceil(content.length / 4) }
      }
    })
  }
  return jsonReply({ predictions, metadata: { billableCharacterCount: characters } })
}

/**
 * The handler of a model call (`call.method` on `call.publisher`) and whether it streams, or `undefined` for a
 * method the emulator does not serve.
 *
 * @category routing
 */
export const vertexHandler = (
  call: VertexCall
): { readonly handler: Handler; readonly stream: boolean; readonly vendor: "gemini" | "anthropic" } | undefined => {
  if (call.publisher === "anthropic") {
    if (call.project === undefined) return undefined
    if (call.method === "rawPredict") return { handler: vertexRawPredict(false), stream: false, vendor: "anthropic" }
    if (call.method === "streamRawPredict") {
      return { handler: vertexRawPredict(true), stream: true, vendor: "anthropic" }
    }
    return undefined
  }
  switch (call.method) {
    case "generateContent":
      return { handler: vertexGenerate, stream: false, vendor: "gemini" }
    case "streamGenerateContent":
      return { handler: vertexGenerate, stream: true, vendor: "gemini" }
    case "predict":
      return { handler: vertexPredict, stream: false, vendor: "gemini" }
  }
  return undefined
}
