/**
 * Where each route family finds the caller's key (spec, "Authentication"):
 * `Authorization: Bearer` everywhere; the messages route also `x-api-key`; the
 * generate-content routes also `x-vendorb-api-key` (the vendor SDK sends
 * `x-goog-api-key`) and `?key=`; the Midjourney routes also `mj-api-secret`
 * (the header Midjourney-proxy clients send, novicezk/midjourney-proxy
 * `ApiAuthorizeInterceptor`).
 *
 * @since 0.1.0
 */
import type { HttpServerRequest } from "effect/http"

/** The credential carriers a route accepts. @category models */
export type CredentialStyle = "bearer" | "messages" | "generate-content" | "midjourney"

/**
 * One request header (lower-case `name`), read from the web request when there is one: cheaper than building
 * the record of every header that `HttpServerRequest.headers` is.
 *
 * @category http
 */
export const headerOf = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined =>
  request.source instanceof Request ? request.source.headers.get(name) ?? undefined : request.headers[name]

const bearer = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const value = headerOf(request, "authorization")
  if (value === undefined) return undefined
  const match = /^Bearer\s+(.+)$/i.exec(value.trim())
  return match === null ? undefined : match[1].trim()
}

/**
 * The key the caller sent, or `undefined`.
 *
 * @category auth
 */
export const credentialOf = (
  style: CredentialStyle,
  request: HttpServerRequest.HttpServerRequest
): string | undefined => {
  switch (style) {
    case "bearer":
      return bearer(request)
    case "messages":
      return headerOf(request, "x-api-key") ?? bearer(request)
    case "generate-content":
      return headerOf(request, "x-vendorb-api-key") ?? headerOf(request, "x-goog-api-key") ??
        new URL(request.url, "http://localhost").searchParams.get("key") ?? bearer(request)
    case "midjourney":
      return bearer(request) ?? headerOf(request, "mj-api-secret")?.trim().replace(/^Bearer\s+/i, "")
  }
}
