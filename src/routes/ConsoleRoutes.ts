/**
 * The web console's static files: `GET /` (the page), `GET /console/app.js`
 * (the bundle built from `console/src/` by `deno task console`),
 * `GET /console/charts.js` and `GET /console/charts.css` (the chart code, which the page loads on demand) and
 * `GET /console/app.css`: a fixed list, read once from the repo's `console/` folder when the
 * gateway starts. Every answer carries a Content-Security-Policy that allows
 * scripts, styles and requests from this origin only (no inline script, no
 * foreign origin), and may not be framed. The console's only back end is
 * `/api/*`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"

/**
 * The console's Content-Security-Policy: same-origin scripts, styles,
 * requests and images (plus `data:` and `blob:` images for the CSV link and
 * charts), no inline script, no plugin, no framing, no `<base>`.
 *
 * @category routes
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

/** The console's files: URL path → file in `console/` and its content type. */
const FILES: ReadonlyArray<{ readonly path: `/${string}`; readonly file: string; readonly type: string }> = [
  { path: "/", file: "index.html", type: "text/html; charset=utf-8" },
  { path: "/console/app.js", file: "dist/app.js", type: "text/javascript; charset=utf-8" },
  // The chart code, loaded by the page only when it shows a chart (console/build.ts).
  { path: "/console/charts.js", file: "dist/charts.js", type: "text/javascript; charset=utf-8" },
  { path: "/console/charts.css", file: "dist/charts.css", type: "text/css; charset=utf-8" },
  { path: "/console/app.css", file: "app.css", type: "text/css; charset=utf-8" }
]

/** Where the console's files live: `console/` at the repo's root. */
const CONSOLE_DIR = new URL("../../console/", import.meta.url)

/** @category routes */
export const ConsoleRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  for (const { path, file, type } of FILES) {
    const body = yield* Effect.promise(() => Deno.readFile(new URL(file, CONSOLE_DIR)))
    yield* router.add("GET", path, () =>
      Effect.succeed(HttpServerResponse.uint8Array(body, {
        contentType: type,
        headers: {
          "content-security-policy": CONSOLE_CSP,
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer",
          "cache-control": "no-cache"
        }
      })))
  }
}))
