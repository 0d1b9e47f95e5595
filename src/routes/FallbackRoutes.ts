/**
 * Any other method and path: 404 in the gateway envelope.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { envelopeBody } from "../errors/Envelope.ts"
import { RouteNotFound } from "../errors/GatewayError.ts"
import { respondWith } from "../http/Respond.ts"

/** @category routes */
export const FallbackRoutes = HttpRouter.use((router) =>
  router.add(
    "*",
    "*",
    (request) =>
      Effect.fail(new RouteNotFound({ method: request.method, path: new URL(request.url, "http://x").pathname })).pipe(
        respondWith((problem) => envelopeBody("gateway", problem))
      )
  )
)
