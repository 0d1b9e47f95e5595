/**
 * Tells the operator that requests come through a reverse proxy the gateway
 * was not told of: a request carrying a forwarding header that no trusted
 * proxy vouches for (`isUntrustedForward`). Such a caller's address is the
 * proxy's, shared by everyone behind it, for a key's `allow_ips`, the login
 * limit, open requests per address and `/metrics`, so `settings.trusted_proxies`
 * should list the proxy. The gateway cannot know at its start whether a proxy
 * stands in front, so the warning is logged when the first such request
 * arrives, then at most once an hour while they keep arriving (with the peer
 * address, never a header's value).
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, type Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { clientAddressOf, isUntrustedForward } from "./ClientAddress.ts"

/** The least time between two notices (one hour), in milliseconds. @category http */
export const NOTICE_INTERVAL_MILLIS = 3_600_000

/**
 * Whether a notice is due at `now` when the last one was logged at `last`
 * (`undefined`: none yet). Epoch milliseconds.
 *
 * @category http
 */
export const noticeDue = (last: number | undefined, now: number): boolean =>
  last === undefined || now - last >= NOTICE_INTERVAL_MILLIS

const NOTICE = "A request came with forwarding headers (Forwarded, X-Forwarded-For, X-Real-IP or the like) from a " +
  "peer that settings.trusted_proxies does not list. If a reverse proxy stands in front of the gateway, list its " +
  "address there: until then the gateway cannot tell the callers behind it apart (the per-address login limit and " +
  "open-request bound, a key's allow_ips, loopback access to /metrics)"

/**
 * The global router middleware that logs the notice: one header check per
 * request, and the time read only when such a request arrives.
 *
 * @category http
 */
export const ProxyNotice: Layer.Layer<never, never, HttpRouter.HttpRouter> = HttpRouter.middleware(
  Effect.sync(() => {
    let last: number | undefined
    return <A, E, R>(app: Effect.Effect<A, E, R>) =>
      Effect.withFiber<A, E, R>((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        if (!isUntrustedForward(request)) return app
        const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        if (!noticeDue(last, now)) return app
        last = now
        return Effect.andThen(
          Effect.logWarning(NOTICE).pipe(Effect.annotateLogs({ peer: clientAddressOf(request) ?? "unknown" })),
          app
        )
      })
  }),
  { global: true }
)
