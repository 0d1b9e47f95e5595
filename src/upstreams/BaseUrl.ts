/**
 * The one rule that makes the URL of an upstream call from a channel's
 * `base_url` and the call's path, for every channel type and modality
 * (README, "Configuration": `base_url`).
 *
 * A call's path is written from the vendor's API root and starts with the
 * version the wire uses (`/v1/chat/completions`, `/v1beta/models/…`,
 * `/api/v3/…`, `/mj/…`). The base URL is everything before that root:
 *
 * 1. Trailing slashes of the base URL's path are dropped (no `//`).
 * 2. When the base URL's path ends in one of the version suffixes the channel
 *    type knows (`/v1` or `/v1beta` for OpenAI-style APIs, `/api/v3` for Ark,
 *    `/compatibility/v1`, `/v1` or `/v2` for Cohere, `/mj` for a
 *    Midjourney proxy, …), that one suffix is removed, so a version given in the
 *    base URL is not doubled.
 * 3. The call's path is appended; everything else in the base URL (a path
 *    prefix, a port, user information) is kept. A query in the base URL
 *    (`?key=…`) goes after the call's own query.
 *
 * Examples (an `openai` channel, chat completions):
 * - `https://api.openai.com` → `https://api.openai.com/v1/chat/completions`
 * - `https://api.openai.com/v1/` → `https://api.openai.com/v1/chat/completions`
 * - `http://proxy.internal/openai` → `http://proxy.internal/openai/v1/chat/completions`
 * - `http://host/prefix/v1` → `http://host/prefix/v1/chat/completions`
 * - `https://gateway.ai.cloudflare.com/v1/acct/gw/openai` →
 *   `https://gateway.ai.cloudflare.com/v1/acct/gw/openai/v1/chat/completions` (only a version at the end counts)
 *
 * @since 0.1.0
 */

/** The scheme and authority of an absolute URL, and the rest of it. */
const ORIGIN = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)(.*)$/i

/** `text` split at its first `?` into what comes before and the query without the `?`, any `#fragment` dropped. */
const splitQuery = (text: string): readonly [string, string] => {
  const noFragment = text.replace(/#.*$/s, "")
  const mark = noFragment.indexOf("?")
  return mark < 0 ? [noFragment, ""] : [noFragment.slice(0, mark), noFragment.slice(mark + 1)]
}

/**
 * The URL of a call to `path` (from the vendor's API root, starting with `/`,
 * with its own query if any) on a channel whose base URL is `baseUrl`;
 * `versions` are the version suffixes the channel type's base URL may end in
 * (see the module's rule). Pure; never throws (a base URL that is not absolute
 * is joined the same way, as text).
 *
 * @category urls
 */
export const upstreamUrl = (baseUrl: string, path: string, versions: ReadonlyArray<string>): string => {
  const [base, baseQuery] = splitQuery(baseUrl.trim())
  const match = ORIGIN.exec(base)
  const origin = match === null ? "" : match[1]
  let basePath = (match === null ? base : match[2]).replace(/\/+$/, "")
  const suffix = [...versions].sort((a, b) => b.length - a.length).find((version) => basePath.endsWith(version))
  if (suffix !== undefined) basePath = basePath.slice(0, -suffix.length)
  const [callPath, callQuery] = splitQuery(path)
  const query = [callQuery, baseQuery].filter((part) => part !== "").join("&")
  return `${origin}${basePath}${callPath}${query === "" ? "" : `?${query}`}`
}

/**
 * `url` with its path (the part before `?`) changed by `change` and its query
 * kept, for URLs derived from another call's URL (the `:countTokens` of a
 * `:generateContent` URL).
 *
 * @category urls
 */
export const mapUrlPath = (url: string, change: (path: string) => string): string => {
  const [head, query] = splitQuery(url)
  return `${change(head)}${query === "" ? "" : `?${query}`}`
}
