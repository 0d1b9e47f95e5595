/**
 * The route a request took, as a bounded label for metrics and the access
 * log: the route's pattern (`/v1beta/models/{model}:generateContent`), never
 * the caller's path (which may carry a model name or anything else).
 *
 * @since 0.1.0
 */

const EXACT: ReadonlySet<string> = new Set([
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/messages",
  "/v1/messages/count_tokens",
  "/v1/responses",
  "/v1/responses/compact",
  "/v1/models",
  "/v1beta/models",
  "/v1/embeddings",
  "/v1/images/generations",
  "/v1/images/edits",
  "/v1/images/generations/async",
  "/v1/audio/speech",
  "/v1/audio/transcriptions",
  "/v1/audio/translations",
  "/v1/moderations",
  "/v1/rerank",
  "/v2/rerank",
  "/v1/realtime",
  "/v1/realtime/client_secrets",
  "/openai/v1/realtime",
  "/v1/videos",
  "/v1/video/generations",
  "/v1/files",
  "/api/usage/token",
  "/api/status",
  "/dashboard/billing/subscription",
  "/dashboard/billing/usage",
  "/healthz",
  "/readyz",
  "/metrics"
])

const GENERATE_METHODS = ["generateContent", "streamGenerateContent", "countTokens", "embedContent"]

/** Method → route label, per prefix, built once (no string made per request). */
const methodRoutes = (prefix: string): ReadonlyMap<string, string> =>
  new Map(GENERATE_METHODS.map((method) => [method, `${prefix}{model}:${method}`]))
const V1BETA = methodRoutes("/v1beta/models/")
const V1 = methodRoutes("/v1/models/")

/** `{prefix}{model}:{method}` for a known method, `{prefix}{model}` otherwise. */
const modelRoute = (routes: ReadonlyMap<string, string>, fallback: string, path: string): string => {
  const colon = path.lastIndexOf(":")
  return colon === -1 ? fallback : routes.get(path.slice(colon + 1)) ?? fallback
}

/** `{prefix}{id}` plus the one known sub-resource after it (`/content`, `/remix`), or the prefix's pattern alone. */
const idRoute = (prefix: string, path: string, tails: ReadonlyArray<string>): string => {
  const slash = path.indexOf("/", prefix.length)
  if (slash === -1) return `${prefix}{id}`
  const tail = path.slice(slash)
  return tails.includes(tail) ? `${prefix}{id}${tail}` : `${prefix}{id}`
}

/** The task routes with an id in the path, and the prefixes their sub-resources may follow. */
const ID_ROUTES: ReadonlyArray<readonly [prefix: string, tails: ReadonlyArray<string>]> = [
  ["/v1/videos/", ["/content", "/remix"]],
  ["/v1/video/generations/", []],
  ["/v1/images/generations/async/", []],
  ["/v1/images/content/", []],
  ["/v1/files/", ["/content"]]
]

/**
 * The label of the route serving `url` (a path with an optional query):
 * the path itself for a fixed route, a pattern for the model routes and the
 * task routes with an id (`/v1/videos/{id}/content`), `/mj/*` and
 * `/kling/v1/*` for the vendor-native task families, `/api/*` for the
 * account routes, and `other` for anything else.
 *
 * @category labels
 */
export const routeOf = (url: string): string => {
  const query = url.indexOf("?")
  const path = query === -1 ? url : url.slice(0, query)
  if (EXACT.has(path)) return path
  if (path.startsWith("/v1beta/models/")) return modelRoute(V1BETA, "/v1beta/models/{model}", path)
  if (path.startsWith("/v1/models/")) return modelRoute(V1, "/v1/models/{model}", path)
  for (const [prefix, tails] of ID_ROUTES) if (path.startsWith(prefix)) return idRoute(prefix, path, tails)
  if (path.startsWith("/mj/")) return "/mj/*"
  if (path.startsWith("/kling/v1/")) return "/kling/v1/*"
  if (path.startsWith("/api/")) return "/api/*"
  return "other"
}
