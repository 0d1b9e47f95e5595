/**
 * Any other method and path: 404 in the gateway envelope. A path the router
 * cannot even decode (a malformed percent-escape such as `%zz` or a cut UTF-8
 * sequence like `%E0%A4%A`) is the caller's 400, also in the gateway envelope,
 * rather than the router's empty 404.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelopeBody, toProblem } from "../errors/Envelope.ts"
import { InvalidRequest, RouteNotFound } from "../errors/GatewayError.ts"
import { respondWith } from "../http/Respond.ts"

/** The request's path, as sent (still percent-encoded). */
const pathOf = (request: HttpServerRequest.HttpServerRequest): string => new URL(request.url, "http://x").pathname

/**
 * Whether `path` holds a percent-escape that does not decode (`%` not followed
 * by two hex digits, or bytes that are not UTF-8).
 *
 * @category routes
 */
export const hasMalformedEscape = (path: string): boolean => {
  try {
    decodeURI(path)
    return false
  } catch {
    return true
  }
}

/** The first 200 characters of a caller's path, for a message. */
const shown = (path: string): string => path.length > 200 ? path.slice(0, 200) + "…" : path

/** The failure for a request no route took. */
const unrouted = (request: HttpServerRequest.HttpServerRequest): InvalidRequest | RouteNotFound => {
  const path = pathOf(request)
  return hasMalformedEscape(path)
    ? new InvalidRequest({ message: `The path "${shown(path)}" holds a malformed percent-escape.` })
    : new RouteNotFound({ method: request.method, path: shown(path) })
}

const gatewayBody = (error: InvalidRequest | RouteNotFound) => {
  const problem = toProblem(error)
  return HttpServerResponse.jsonUnsafe(envelopeBody("gateway", problem), { status: problem.status })
}

/** @category routes */
export const FallbackRoutes = Layer.mergeAll(
  HttpRouter.use((router) =>
    router.add(
      "*",
      "*",
      (request) => Effect.fail(unrouted(request)).pipe(respondWith((problem) => envelopeBody("gateway", problem)))
    )
  ),
  // The router answers a path it cannot decode with an empty 404 before any route (the catch-all too) runs,
  // so such a path is answered ahead of the router. Only a URL with a `%` pays for the check.
  HttpRouter.use((router) =>
    router.addGlobalMiddleware((effect) =>
      Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request) =>
          request.url.includes("%") && hasMalformedEscape(pathOf(request))
            ? Effect.succeed(gatewayBody(unrouted(request)))
            : effect
      )
    )
  )
)
