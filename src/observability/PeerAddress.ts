/**
 * The address of the peer a request came from, for the one route that needs
 * it (`GET /metrics` is open on loopback). `Deno.serve` knows it; the web
 * handler does not, so the server passes it in the request's context
 * (`withPeerAddress`), and only for paths that hold `/metrics`, so no other
 * request pays for it.
 *
 * @since 0.1.0
 */
import { Context } from "effect"

/** The peer's IP address, or `undefined` when the server did not say. @category services */
export const PeerAddress = Context.Reference<string | undefined>("sluice/observability/PeerAddress", {
  defaultValue: () => undefined
})

/**
 * Whether `address` is a loopback address (`127.0.0.0/8`, `::1`, or an
 * IPv4-mapped `::ffff:127.…`).
 *
 * @category peers
 */
export const isLoopback = (address: string | undefined): boolean =>
  address !== undefined &&
  (address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.") || address === "localhost")

/** A web handler that takes a request context (`HttpRouter.toWebHandler`'s). @category models */
export type WebHandler = (request: Request, context?: Context.Context<never> | undefined) => Promise<Response>

/**
 * The `Deno.serve` handler of `handler`: the peer's address is passed in the
 * context of requests whose URL holds `/metrics`.
 *
 * @category peers
 */
export const withPeerAddress =
  (handler: WebHandler) => (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> =>
    request.url.includes("/metrics")
      ? handler(request, Context.make(PeerAddress, info.remoteAddr.hostname))
      : handler(request)
