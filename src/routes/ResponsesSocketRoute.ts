/**
 * The handshake of the Responses API's WebSocket mode, `GET /v1/responses`
 * with `Upgrade: websocket`: the key is checked here exactly as an HTTP
 * request's is (`Authorization: Bearer`, disabled and expired keys, the key's
 * IP allow-list, through `Auth.authenticate`); a refused handshake answers the
 * HTTP error in OpenAI's envelope, an accepted one the internal
 * `HANDSHAKE_ACCEPTED` status, which `App.ts` turns into the upgrade
 * (`relay/socket/ResponsesSocket.ts` runs the socket). The model allow-list
 * and every other per-request rule apply to each `response.create` on the
 * socket, as each is a request of its own.
 *
 * A `GET /v1/responses` that asks for no upgrade is a 400 naming the header.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { InvalidRequest } from "../errors/GatewayError.ts"
import { formatOf } from "../formats/Formats.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf, headerOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { HANDSHAKE_ACCEPTED } from "../http/WebSocketUpgrade.ts"
import { Auth } from "../services/Auth.ts"

/** The path of the Responses WebSocket mode. @category routes */
export const RESPONSES_SOCKET_PATH = "/v1/responses"

/** @category routes */
export const ResponsesSocketRoute = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const render = formatOf("openai-responses").encodeError
  yield* router.add(
    "GET",
    RESPONSES_SOCKET_PATH,
    (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const upgrade = (headerOf(request, "upgrade") ?? "").toLowerCase()
        if (!upgrade.split(",").some((token) => token.trim() === "websocket")) {
          return yield* new InvalidRequest({
            message: "GET /v1/responses is the Responses WebSocket mode; send it with Upgrade: websocket.",
            param: "upgrade"
          })
        }
        yield* auth.authenticate(credentialOf("bearer", request), clientAddressOf(request))
        return HttpServerResponse.empty({ status: HANDSHAKE_ACCEPTED })
      }).pipe(respondWith(render))
  )
}))
