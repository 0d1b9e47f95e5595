/**
 * Requests the gateway makes itself on a caller's behalf (a batch's lines, `batches/BatchRunner.ts`) and hands to
 * its own handler carry no key: the token is named by its stored digest, marked on the web request here. A
 * `WeakMap` keyed by the `Request` object, so no header a caller could send ever counts as such a mark; the routes
 * a line can reach (`routes/TextHandler.ts`, `routes/EmbeddingRoutes.ts`) resolve it with
 * `Auth.authenticateDigest`, with every check the key itself would get.
 *
 * @since 0.4.0
 */
import type { HttpServerRequest } from "effect/http"

/** What a mark holds: the token's stored key digest (hex SHA-256) and the address the batch was created from. */
export interface InnerCaller {
  readonly keyHash: string
  readonly clientAddress: string | undefined
}

const marks = new WeakMap<Request, InnerCaller>()

/**
 * Marks `request` (made by the gateway, never a caller's) as sent by the token whose key digest is `caller.keyHash`.
 *
 * @category auth
 */
export const markInnerCaller = (request: Request, caller: InnerCaller): void => {
  marks.set(request, caller)
}

/**
 * The mark `markInnerCaller` set on `request`'s web request, or `undefined` (every request from outside).
 *
 * @category auth
 */
export const innerCallerOf = (request: HttpServerRequest.HttpServerRequest): InnerCaller | undefined =>
  request.source instanceof Request ? marks.get(request.source) : undefined
