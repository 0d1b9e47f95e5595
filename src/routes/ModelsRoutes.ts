/**
 * The model lists: `GET /v1/models` (`{object: "list", data: [{id, object:
 * "model", created, owned_by}]}`) and `GET /v1beta/models` (`{models: [{name:
 * "models/<id>", …}]}`), both the models the key's group (and token allow-list)
 * can use.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelopeBody } from "../errors/Envelope.ts"
import { credentialOf, type CredentialStyle } from "../http/Credentials.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { ChannelRouter } from "../services/ChannelRouter.ts"

/** @category routes */
export const ModelsRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const channels = yield* ChannelRouter
  const started = Math.floor(Date.now() / 1000)
  const modelsOf = (style: CredentialStyle, request: HttpServerRequest.HttpServerRequest) =>
    auth.authenticate(credentialOf(style, request), clientAddressOf(request)).pipe(
      Effect.map((principal) => channels.models(principal))
    )
  const gateway = respondWith((problem) => envelopeBody("gateway", problem))

  yield* router.add("GET", "/v1/models", (request) =>
    modelsOf("bearer", request).pipe(
      Effect.map((models) =>
        HttpServerResponse.jsonUnsafe({
          object: "list",
          data: models.map((id) => ({ id, object: "model", created: started, owned_by: "sluice" }))
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
            supportedGenerationMethods: ["generateContent", "streamGenerateContent"]
          }))
        })
      ),
      gateway
    ))
}))
