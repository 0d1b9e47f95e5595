/**
 * `POST /v1/rerank` and `POST /v2/rerank`: Cohere's v2 rerank shape (see
 * `formats/rerank/Codec.ts`), a Bearer key, errors in the gateway envelope
 * with `param` naming the field.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { decodeRerankRequest } from "../formats/rerank/Codec.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { RerankRelay } from "../relay/rerank/RerankRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"

/** @category services */
export class Rerank extends Context.Service<Rerank, {
  /** `POST /v1/rerank` or `/v2/rerank`. Never fails: errors are rendered in the gateway envelope. */
  readonly rerank: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/RerankRoutes/Rerank") {
  /** Needs `Auth`, `GatewaySettings` and `RerankRelay`. */
  static readonly layer = Layer.effect(
    Rerank,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const relay = yield* RerankRelay

      const rerank = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))
          const body = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const decoded = decodeRerankRequest(body)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          return yield* relay.run({ request: decoded.success, principal })
        }).pipe(respondWith(encodeOpenAiError))

      return Rerank.of({ rerank })
    })
  )
}

/**
 * `POST /v1/rerank` and `POST /v2/rerank`.
 *
 * @category routes
 */
export const RerankRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const rerank = yield* Rerank
  yield* router.add("POST", "/v1/rerank", rerank.rerank)
  yield* router.add("POST", "/v2/rerank", rerank.rerank)
}))
