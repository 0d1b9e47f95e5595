/**
 * Where the console tests put the screenshots the docs show (`docs/console/`, referenced from docs/CONSOLE.md). A
 * test run takes every screenshot, so each page is rendered and captured, but writes them under the ignored
 * `test/screenshots/docs/` unless `SLUICE_SCREENSHOTS=docs` is set, so running the suite never rewrites committed
 * files. To retake the docs' pictures: `SLUICE_SCREENSHOTS=docs deno test --allow-all test/integration/Console*.test.ts`.
 */

/**
 * The folder (a `file:` URL ending in `/`, made if missing) for screenshots the docs show: `docs/console/` with
 * `SLUICE_SCREENSHOTS=docs`, else `test/screenshots/docs/`.
 */
export const docsScreenshots = (): URL => {
  const folder = Deno.env.get("SLUICE_SCREENSHOTS") === "docs"
    ? new URL("../../docs/console/", import.meta.url)
    : new URL("../screenshots/docs/", import.meta.url)
  Deno.mkdirSync(folder, { recursive: true })
  return folder
}
