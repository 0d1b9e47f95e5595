/**
 * A WebSocket handshake answered from inside the Effect router. `Deno.upgradeWebSocket` returns a `101` response
 * that must reach `Deno.serve` as is, but the router's middleware adds headers to every answer (`x-request-id`),
 * which would copy it into a plain `Response` (a 101 cannot be built that way). So a route upgrades through
 * `upgradeWebSocket`, which keeps the real response beside the request and hands the router a placeholder; the
 * outer handler (`App.ts` `makeHandler`) swaps it back with `upgradedResponse`. A request that did not come from
 * `Deno.serve` (an in-process call) still gets its `101`, but its socket never opens: a session must bound the
 * wait for `open` (the Realtime session ends after `CLIENT_OPEN_MILLIS`).
 *
 * @since 0.3.0
 */
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"

const upgraded = new WeakMap<Request, Response>()

/**
 * Whether `request` asks for a WebSocket (`GET` with `Upgrade: websocket`, RFC 6455 §4.1).
 *
 * @category predicates
 */
export const isWebSocketRequest = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.method === "GET" && (request.headers["upgrade"] ?? "").toLowerCase() === "websocket"

/**
 * The subprotocols the client offered (`Sec-WebSocket-Protocol`, comma-separated), trimmed, in order.
 *
 * @category parsing
 */
export const offeredProtocols = (request: HttpServerRequest.HttpServerRequest): ReadonlyArray<string> =>
  (request.headers["sec-websocket-protocol"] ?? "").split(",").map((item) => item.trim()).filter((item) => item !== "")

/**
 * Upgrades the request to a WebSocket with `protocol` as the chosen subprotocol (omitted when `undefined`; it must
 * be one the client offered). Returns the server side of the socket and the router's placeholder answer, or
 * `undefined` when the request cannot be upgraded (not a web `Request`, or not a valid handshake).
 *
 * @category handlers
 */
export const upgradeWebSocket = (
  request: HttpServerRequest.HttpServerRequest,
  protocol: string | undefined
):
  | { readonly socket: WebSocket; readonly response: HttpServerResponse.HttpServerResponse }
  | undefined => {
  const source = request.source
  if (!(source instanceof Request)) return undefined
  try {
    const { socket, response } = Deno.upgradeWebSocket(
      source,
      protocol === undefined ? {} : { protocol }
    )
    upgraded.set(source, response)
    return { socket, response: HttpServerResponse.empty({ status: 204 }) }
  } catch {
    return undefined
  }
}

/**
 * The `101` response `upgradeWebSocket` made for `request`, once (the outer handler returns it instead of the
 * router's placeholder); `undefined` for a request that was not upgraded.
 *
 * @category handlers
 */
export const upgradedResponse = (request: Request): Response | undefined => {
  const response = upgraded.get(request)
  if (response !== undefined) upgraded.delete(request)
  return response
}
