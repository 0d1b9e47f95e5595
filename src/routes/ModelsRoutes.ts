/**
 * The model lists: `GET /v1/models` (`{object: "list", data: [{id, object:
 * "model", created, owned_by, supported_endpoints}]}`) and `GET /v1beta/models`
 * (`{models: [{name: "models/<id>", …, supportedGenerationMethods}]}`), both
 * the models the key's group (and token allow-list) can use. An embedding
 * model (`isEmbeddingModel`) lists `/v1/embeddings` and `embedContent`,
 * `batchEmbedContents`; any other the text routes and `generateContent`,
 * `streamGenerateContent`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { isEmbeddingModel } from "../domain/EmbeddingModels.ts"
import { envelopeBody } from "../errors/Envelope.ts"
import { credentialOf, type CredentialStyle } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"

const TEXT_ENDPOINTS = ["/v1/chat/completions", "/v1/responses", "/v1/completions", "/v1/messages"]
const EMBEDDING_ENDPOINTS = ["/v1/embeddings"]
const GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
const EMBEDDING_METHODS = ["embedContent", "batchEmbedContents"]

/** @category routes */
export const ModelsRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const channels = yield* ChannelRouter
  const started = Math.floor(Date.now() / 1000)
  const modelsOf = (style: CredentialStyle, request: HttpServerRequest.HttpServerRequest) =>
    auth.authenticate(credentialOf(style, request)).pipe(
      Effect.map((principal) => channels.models(principal))
    )
  const gateway = respondWith((problem) => envelopeBody("gateway", problem))

  yield* router.add("GET", "/v1/models", (request) =>
    modelsOf("bearer", request).pipe(
      Effect.map((models) =>
        HttpServerResponse.jsonUnsafe({
          object: "list",
          data: models.map((id) => ({
            id,
            object: "model",
            created: started,
            owned_by: "sluice",
            supported_endpoints: isEmbeddingModel(id) ? EMBEDDING_ENDPOINTS : TEXT_ENDPOINTS
          }))
        })
      ),
      gateway
    ))

  yield* router.add("GET", "/v1beta/models", (request) =>
    modelsOf("generate-content", request).pipe(
      Effect.map((models) =>
        HttpServerResponse.jsonUnsafe({
          models: models.map((id) => ({
            name: `models/${id}`,
            baseModelId: id,
            version: "001",
            displayName: id,
            description: "",
            supportedGenerationMethods: isEmbeddingModel(id) ? EMBEDDING_METHODS : GENERATION_METHODS
          }))
        })
      ),
      gateway
    ))
}))
