/**
 * The embedding routes: `POST /v1/embeddings` (OpenAI format, Bearer) and the
 * generate-content methods `:embedContent` and `:batchEmbedContents` (handed
 * here by the generate-content dispatcher in `TextRoutes.ts`, which owns the
 * `models/*` path). Each authenticates, reads the body within its limit,
 * decodes it into the canonical embedding request and runs the
 * `EmbeddingRelay`; failures leave in the route's own error shape (the gateway
 * envelope, or Google's error shape).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { decodeGeminiEmbedRequest } from "../formats/gemini/embeddings/Wire.ts"
import { embeddingErrorBody } from "../formats/embeddings/Wires.ts"
import { decodeOpenAiEmbeddingRequest } from "../formats/openai/embeddings/Wire.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { innerCallerOf } from "../http/InnerCaller.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { EmbeddingRelay } from "../relay/embeddings/EmbeddingRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"

/** @category services */
export class Embeddings extends Context.Service<Embeddings, {
  /** `POST /v1/embeddings`. Never fails: errors are rendered in the gateway envelope. */
  readonly openai: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /**
   * `:embedContent` (`batch: false`) or `:batchEmbedContents` for `model` (from the path). Never fails: errors
   * are rendered in Google's error shape.
   */
  readonly gemini: (
    httpRequest: HttpServerRequest.HttpServerRequest,
    model: string,
    batch: boolean
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/EmbeddingRoutes/Embeddings") {
  /** Needs `Auth`, `GatewaySettings` and `EmbeddingRelay`. */
  static readonly layer = Layer.effect(
    Embeddings,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const relay = yield* EmbeddingRelay

      const openai = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          // A batch line the gateway sends for a caller names its token by digest (`http/InnerCaller.ts`).
          const inner = innerCallerOf(httpRequest)
          const principal = inner !== undefined
            ? yield* auth.authenticateDigest(inner.keyHash, inner.clientAddress)
            : yield* auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))
          const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const decoded = decodeOpenAiEmbeddingRequest(raw)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          return yield* relay.run({
            inbound: { format: "openai", base64: decoded.success.base64 },
            raw,
            request: decoded.success.request,
            principal
          })
        }).pipe(respondWith(embeddingErrorBody("openai")))

      const gemini = (httpRequest: HttpServerRequest.HttpServerRequest, model: string, batch: boolean) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(
            credentialOf("generate-content", httpRequest),
            clientAddressOf(httpRequest)
          )
          const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const decoded = decodeGeminiEmbedRequest(raw, model, batch)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          return yield* relay.run({ inbound: { format: "gemini", batch }, raw, request: decoded.success, principal })
        }).pipe(respondWith(embeddingErrorBody("gemini")))

      return Embeddings.of({ openai, gemini })
    })
  )
}

/**
 * `POST /v1/embeddings`.
 *
 * @category routes
 */
export const EmbeddingRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const embeddings = yield* Embeddings
  yield* router.add("POST", "/v1/embeddings", embeddings.openai)
}))
