/**
 * URLs a vendor hands the gateway and the gateway then fetches itself (an Ark
 * or Kling video's `video_url`, a Midjourney proxy's `imageUrl`): they go
 * through the SSRF guard of `SafeFetch.ts` like a caller's URL, since a
 * channel can point at any server (an admin's own, or a vendor that was
 * compromised) and its answer must not make the gateway read its own
 * network. Public addresses only, except the channel's own host (the host
 * name of its `base_url`, on any port: the operator chose that server, and a
 * proxy or an emulator on an intranet or loopback address serves its media
 * from there) and the operator's `media_allow_hosts`.
 *
 * @since 0.1.0
 */
import { UpstreamFailed, type UpstreamFailureKind } from "../../errors/GatewayError.ts"
import type { SafeFetchError } from "./SafeFetch.ts"

/** The host name of a URL without a trailing dot, or `undefined` for text that is no URL. */
const hostNameOf = (url: string): string | undefined => {
  try {
    return new URL(url).hostname.replace(/\.$/, "") || undefined
  } catch {
    return undefined
  }
}

/**
 * The host names the guard trusts for a URL a vendor handed over on a channel
 * whose base URL is `baseUrl` (`undefined`: a channel no longer configured):
 * that base URL's host name, then `allowHosts` (the operator's
 * `media_allow_hosts`). Matched by host name, as `safeFetch`'s `allowHosts`
 * are (`localhost` and `127.0.0.1` are different names).
 *
 * @category guards
 */
export const vendorUrlHosts = (
  baseUrl: string | undefined,
  allowHosts: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const own = baseUrl === undefined ? undefined : hostNameOf(baseUrl)
  return own === undefined ? allowHosts : [own, ...allowHosts]
}

/** What each guard failure is as an upstream failure: a URL the gateway will not or cannot use is a bad answer. */
const kindOf: Record<SafeFetchError["reason"], UpstreamFailureKind> = {
  "invalid-url": "bad-body",
  "blocked-address": "bad-body",
  "too-many-redirects": "bad-body",
  "too-large": "bad-body",
  "over-budget": "bad-body",
  timeout: "timeout",
  "http-status": "server",
  network: "network"
}

/**
 * A refused or failed fetch of a vendor-given URL as the `UpstreamFailed` of
 * channel `channelId`: an HTTP 404 or 410 is `rejected` with `goneMessage`
 * (the vendor no longer holds the bytes), another HTTP status is what
 * `classify` makes of it; a refused URL (a blocked address, a redirect loop,
 * a body over the size cap) is `bad-body`; `timeout` and `network` stay what
 * they are. The message names the reason, never the URL (vendor URLs stay in
 * the gateway).
 *
 * @category errors
 */
export const vendorFetchFailure = (
  error: SafeFetchError,
  channelId: number,
  goneMessage: string,
  classify: (status: number) => { readonly kind: UpstreamFailureKind; readonly message: string }
): UpstreamFailed => {
  if (error.reason === "http-status") {
    const status = error.status ?? 0
    if (status === 404 || status === 410) {
      return new UpstreamFailed({ kind: "rejected", status, message: goneMessage, channelId })
    }
    const classified = classify(status)
    return new UpstreamFailed({ kind: classified.kind, status, message: classified.message, channelId })
  }
  return new UpstreamFailed({
    kind: kindOf[error.reason],
    status: 0,
    message: `The vendor's media URL could not be fetched (${error.reason}).`,
    channelId
  })
}
