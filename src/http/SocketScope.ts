/**
 * What one client WebSocket keeps across its responses: resources made on the first response that needs them and
 * closed when the socket ends (an upstream socket per channel key, `upstreams/transport/ResponsesUpstreamSocket.ts`).
 * A socket's inner requests (`WebSocketAccept.ts` `innerRequest`) carry its scope, bound to the request object as
 * the client address is (`bindSocketScope`), and the routes read it back (`socketScopeOf`), so a response run
 * through the gateway's own handler reaches the same resources as the socket's other responses.
 *
 * @since 0.4.0
 */
import type { HttpServerRequest } from "effect/http"

/** A resource a socket keeps; `close` frees it (idempotent). @category models */
export interface SocketResource {
  readonly close: () => void
}

/**
 * Names one kind of resource and how it is made: the scope keeps one per key, made on first `get`.
 *
 * @category models
 */
export interface SocketResourceKey<T extends SocketResource> {
  /** For diagnostics only. */
  readonly name: string
  readonly make: (socketId: string) => T
}

/** The resources of one client socket. @category models */
export interface SocketScope {
  /** The client socket's id (`ws_…`). */
  readonly socketId: string
  /** The socket's resource of `key`, made on first use; `undefined` once the scope is closed. */
  readonly get: <T extends SocketResource>(key: SocketResourceKey<T>) => T | undefined
  /** Closes every resource (idempotent); later `get`s answer `undefined`. */
  readonly close: () => void
}

/**
 * A new scope for the client socket `socketId`.
 *
 * @category constructors
 */
export const makeSocketScope = (socketId: string): SocketScope => {
  const resources = new Map<SocketResourceKey<SocketResource>, SocketResource>()
  let closed = false
  return {
    socketId,
    get: <T extends SocketResource>(key: SocketResourceKey<T>): T | undefined => {
      if (closed) return undefined
      const held = resources.get(key)
      if (held !== undefined) return held as T
      const made = key.make(socketId)
      resources.set(key, made)
      return made
    },
    close: () => {
      if (closed) return
      closed = true
      for (const resource of resources.values()) {
        try {
          resource.close()
        } catch {
          // A resource that fails to close is gone anyway.
        }
      }
      resources.clear()
    }
  }
}

const scopes = new WeakMap<Request, SocketScope>()

/**
 * Binds `scope` to `request` (an inner request of the socket) and returns the request.
 *
 * @category http
 */
export const bindSocketScope = (request: Request, scope: SocketScope): Request => {
  scopes.set(request, scope)
  return request
}

/**
 * The socket scope `request` was made for, or `undefined` for a request that came over HTTP.
 *
 * @category http
 */
export const socketScopeOf = (request: HttpServerRequest.HttpServerRequest): SocketScope | undefined =>
  request.source instanceof Request ? scopes.get(request.source) : undefined
