/**
 * Where each route family finds the caller's key (spec, "Authentication"):
 * `Authorization: Bearer` everywhere; the messages route also `x-api-key`; the
 * generate-content routes also `x-vendorb-api-key` (the vendor SDK sends
 * `x-goog-api-key`) and `?key=`.
 *
 * @since 0.1.0
 */
import type { Headers } from "effect/http"

/** The credential carriers a route accepts. @category models */
export type CredentialStyle = "bearer" | "messages" | "generate-content"

const bearer = (headers: Headers.Headers): string | undefined => {
  const value = headers["authorization"]
  if (value === undefined) return undefined
  const match = /^Bearer\s+(.+)$/i.exec(value.trim())
  return match === null ? undefined : match[1].trim()
}

/**
 * The key the caller sent, or `undefined`.
 *
 * @category auth
 */
export const credentialOf = (style: CredentialStyle, headers: Headers.Headers, url: URL): string | undefined => {
  switch (style) {
    case "bearer":
      return bearer(headers)
    case "messages":
      return headers["x-api-key"] ?? bearer(headers)
    case "generate-content":
      return headers["x-vendorb-api-key"] ?? headers["x-goog-api-key"] ?? url.searchParams.get("key") ?? bearer(headers)
  }
}
