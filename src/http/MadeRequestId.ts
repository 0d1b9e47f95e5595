/**
 * Requests the gateway makes itself and hands to its own handler (a WebSocket's `response.create`, run as a
 * `POST /v1/responses`) carry an `x-request-id` the gateway chose (`<socket id>.<n>`). Marked here, that id counts as
 * made by the gateway, as a fresh one does: the usage row is logged under it, so a socket's responses are found in
 * the usage log by the ids of their access lines. A caller's own id is never trusted that way (it need not be unique).
 *
 * @since 0.1.0
 */
import type { HttpServerRequest } from "effect/http"

const made = new WeakSet<Request>()

/**
 * Marks `request` (made by the gateway, never a caller's) as carrying an `x-request-id` the gateway made.
 *
 * @category request ids
 */
export const markMadeRequestId = (request: Request): void => {
  made.add(request)
}

/**
 * Whether `request`'s web request was marked by `markMadeRequestId`.
 *
 * @category request ids
 */
export const hasMadeRequestId = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.source instanceof Request && made.has(request.source)
