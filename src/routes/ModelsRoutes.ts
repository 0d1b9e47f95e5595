/**
 * The model lists: `GET /v1/models` and `GET /v1beta/models`, the models the
 * key's group (and token allow-list) can use. Each vendor SDK lists models at
 * one of these paths with its own credentials and reads its own shape, so the
 * caller's credential carrier picks both the key and the answer's shape:
 *
 * - `x-api-key` or `anthropic-version` / `vendora-version` (`@anthropic-ai/sdk`, `GET /v1/models`):
 *   Anthropic's page `{data: [{type: "model", id, display_name, created_at}],
 *   has_more, first_id, last_id}` (docs.anthropic.com/en/api/models-list),
 *   errors in the messages format;
 * - `x-goog-api-key` / `x-vendorb-api-key` or `?key=` (`@google/genai`, at
 *   `/v1/models` by default or `/v1beta/models`): Google's `{models: [{name:
 *   "models/<id>", …}]}` (ai.google.dev/api/models#method:-models.list),
 *   errors in Google's shape;
 * - otherwise `Authorization: Bearer` (`openai`): `{object: "list", data:
 *   [{id, object: "model", created, owned_by}]}`, errors in the gateway
 *   envelope.
 *
 * With no key at all, `GET /v1/models` also accepts the console's browser
 * session (OpenAI shape; the models of the user's playground token,
 * `SessionCaller.ts`).
 *
 * `/v1beta/models` answers Google's shape whichever carrier brought the key.
 * Bearer is accepted in every case, as on the text routes. What each model
 * supports: an embedding model (`isEmbeddingModel`) lists `/v1/embeddings`
 * (OpenAI shape, `supported_endpoints`) and `embedContent`,
 * `batchEmbedContents` (Google's, `supportedGenerationMethods`); a model
 * priced `per_second` the video routes, one priced `per_image` the image
 * routes (OpenAI shape; `generateContent` in Google's, where image models
 * answer); any other the text routes and `generateContent`,
 * `streamGenerateContent`, `countTokens`.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { isEmbeddingModel } from "../formats/embeddings/EmbeddingModels.ts"
import { envelopeBody } from "../errors/Envelope.ts"
import { formatOf } from "../formats/Formats.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf, type CredentialStyle, headerOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { Catalog } from "../storage/Catalog.ts"
import { makeSessionCaller } from "./SessionCaller.ts"

const TEXT_ENDPOINTS = ["/v1/chat/completions", "/v1/responses", "/v1/completions", "/v1/messages"]
const EMBEDDING_ENDPOINTS = ["/v1/embeddings"]
const IMAGE_ENDPOINTS = ["/v1/images/generations", "/v1/images/edits", "/v1/images/generations/async"]
const VIDEO_ENDPOINTS = ["/v1/videos", "/v1/video/generations"]
const GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
const EMBEDDING_METHODS = ["embedContent", "batchEmbedContents"]

/** The answer shapes of the models lists. */
type ListShape = "openai" | "anthropic" | "google"

/** Which vendor's SDK the credential carrier says the caller is (see the module doc). */
const callerShape = (request: HttpServerRequest.HttpServerRequest, fallback: ListShape): ListShape => {
  if (
    headerOf(request, "x-api-key") !== undefined || headerOf(request, "anthropic-version") !== undefined ||
    headerOf(request, "vendora-version") !== undefined
  ) return "anthropic"
  if (
    headerOf(request, "x-goog-api-key") !== undefined || headerOf(request, "x-vendorb-api-key") !== undefined ||
    new URL(request.url, "http://localhost").searchParams.has("key")
  ) return "google"
  return fallback
}

const credentialStyle: Record<ListShape, CredentialStyle> = {
  openai: "bearer",
  anthropic: "messages",
  google: "generate-content"
}

/** @category routes */
export const ModelsRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const channels = yield* ChannelRouter
  const sessionCaller = makeSessionCaller(yield* Sessions, yield* Tokens, auth)
  const catalog = yield* Catalog
  const started = Math.floor((yield* Clock.currentTimeMillis) / 1000)
  /** What a model is for, from its price: video (`per_second`), image (`per_image`), embedding, else text. */
  const kindOf = (id: string): "video" | "image" | "embedding" | "text" => {
    const price = catalog.snapshot().prices.get(id)
    return price?.perSecond !== undefined
      ? "video"
      : price?.perImage !== undefined
      ? "image"
      : isEmbeddingModel(id)
      ? "embedding"
      : "text"
  }
  const endpoints = {
    video: VIDEO_ENDPOINTS,
    image: IMAGE_ENDPOINTS,
    embedding: EMBEDDING_ENDPOINTS,
    text: TEXT_ENDPOINTS
  }
  const methods = { video: [], image: ["generateContent"], embedding: EMBEDDING_METHODS, text: GENERATION_METHODS }
  const startedIso = new Date(started * 1000).toISOString()

  const bodies: Record<ListShape, (models: ReadonlyArray<string>) => unknown> = {
    openai: (models) => ({
      object: "list",
      data: models.map((id) => ({
        id,
        object: "model",
        created: started,
        owned_by: "sluice",
        supported_endpoints: endpoints[kindOf(id)]
      }))
    }),
    anthropic: (models) => ({
      data: models.map((id) => ({ type: "model", id, display_name: id, created_at: startedIso })),
      has_more: false,
      first_id: models[0] ?? null,
      last_id: models.at(-1) ?? null
    }),
    google: (models) => ({
      models: models.map((id) => ({
        name: `models/${id}`,
        baseModelId: id,
        version: "001",
        displayName: id,
        description: "",
        supportedGenerationMethods: methods[kindOf(id)]
      }))
    })
  }
  const renderers: Record<ListShape, Parameters<typeof respondWith>[0]> = {
    openai: (problem) => envelopeBody("gateway", problem),
    anthropic: formatOf("anthropic").encodeError,
    google: formatOf("gemini").encodeError
  }

  /** The list in `fixed` shape, or (`undefined`) in the shape of the caller's credential carrier. */
  const list = (fixed: ListShape | undefined) => (request: HttpServerRequest.HttpServerRequest) => {
    const carrier = callerShape(request, fixed ?? "openai")
    const shape = fixed ?? carrier
    const key = credentialOf(credentialStyle[carrier], request)
    // The console playground: the OpenAI shape with the browser session when no key is sent.
    const viaSession = key === undefined && shape === "openai" ? sessionCaller(request) : undefined
    return (viaSession ?? auth.authenticate(key, clientAddressOf(request))).pipe(
      Effect.map((principal) => HttpServerResponse.jsonUnsafe(bodies[shape](channels.models(principal)))),
      respondWith(renderers[shape])
    )
  }

  yield* router.add("GET", "/v1/models", list(undefined))
  yield* router.add("GET", "/v1beta/models", list("google"))
}))
