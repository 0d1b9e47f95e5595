/**
 * How a channel's secrets read in admin answers and audit rows: upstream
 * keys cut to their ends, header values and the user, password and query
 * values of a base URL replaced by `…`. Pure.
 *
 * @since 0.1.0
 */
import type { ChannelSettings } from "../../config/BootstrapFile.ts"

/**
 * What may be shown of an upstream key: its first 3 and last 4 characters
 * when it is long enough that they give little away, else nothing.
 *
 * @category masking
 */
export const maskKey = (key: string): string =>
  key.length >= 20 ? `${key.slice(0, 3)}${MASKED}${key.slice(-4)}` : MASKED

/**
 * What a masked header value or URL credential shows, and what stands for
 * the hidden middle of a masked key (U+2026, the ellipsis). @category masking
 */
export const MASKED = "…"

/**
 * Settings as an admin answer or an audit row shows them: every header value
 * (an `api-key`, a proxy token) replaced by `…`.
 *
 * @category masking
 */
export const maskSettings = (settings: typeof ChannelSettings.Type | undefined): unknown =>
  settings?.headers === undefined
    ? settings
    : { ...settings, headers: Object.fromEntries(Object.keys(settings.headers).map((name) => [name, MASKED])) }

/**
 * A base URL as an admin answer or an audit row shows it: user and password
 * (`https://user:pass@host`) and query values replaced by `…`; text that is
 * not a URL is shown as `…`.
 *
 * @category masking
 */
export const maskUrl = (value: string): string => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return MASKED
  }
  const hasCredentials = url.username !== "" || url.password !== ""
  if (!hasCredentials && url.search === "") return value
  const query = [...url.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=${MASKED}`).join("&")
  // A URL written without a path keeps none ("http://host?x" is not shown as "http://host/?x").
  const path = url.pathname === "/" && !/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\//i.test(value) ? "" : url.pathname
  return `${url.protocol}//${hasCredentials ? `${MASKED}@` : ""}${url.host}${path}${query === "" ? "" : `?${query}`}`
}
