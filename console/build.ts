/**
 * Builds the web console with esbuild: `console/src/main.tsx` (Preact and `@preact/signals` from npm) into
 * `console/dist/app.js`, the first page's one ES module, and the chart code (`console/src/charts/TimeChart.ts`,
 * uPlot and its stylesheet) into `console/dist/charts.js` and `console/dist/charts.css`, which the page loads only
 * when a chart is shown (`console/src/Chart.tsx`). Minified; committed so a fresh clone serves the console with no
 * build step. `deno task console` rebuilds them; `test/console/Bundle.test.ts` fails when a committed file differs
 * from a fresh build.
 *
 * @since 0.1.0
 */
import * as esbuild from "esbuild"

/** The committed first-page bundle. */
export const BUNDLE_FILE = new URL("./dist/app.js", import.meta.url)

/** Every file the build writes, by name in `console/dist/` (the gateway serves exactly these). */
export const DIST_FILES = ["app.js", "charts.js", "charts.css"] as const

const DIST = new URL("./dist/", import.meta.url)

/** Bundles the console and answers each file's text by its name in `DIST_FILES` (nothing written). */
export const bundleFiles = async (): Promise<Record<typeof DIST_FILES[number], string>> => {
  try {
    const result = await esbuild.build({
      entryPoints: [
        { in: new URL("./src/main.tsx", import.meta.url).pathname, out: "app" },
        { in: new URL("./src/charts/TimeChart.ts", import.meta.url).pathname, out: "charts" },
        { in: new URL("../node_modules/uplot/dist/uPlot.min.css", import.meta.url).pathname, out: "charts" }
      ],
      outdir: DIST.pathname,
      bundle: true,
      format: "esm",
      minify: true,
      target: "es2022",
      jsx: "automatic",
      jsxImportSource: "preact",
      legalComments: "none",
      charset: "utf8",
      write: false,
      logLevel: "silent"
    })
    const byName = new Map(
      result.outputFiles.map((file) => [file.path.slice(file.path.lastIndexOf("/") + 1), file.text])
    )
    const files = Object.fromEntries(DIST_FILES.map((name) => [name, byName.get(name)]))
    for (const name of DIST_FILES) if (files[name] === undefined) throw new Error(`The build wrote no ${name}.`)
    return files as Record<typeof DIST_FILES[number], string>
  } finally {
    await esbuild.stop()
  }
}

/** The first page's bundle text (`app.js`). */
export const bundleConsole = async (): Promise<string> => (await bundleFiles())["app.js"]

if (import.meta.main) {
  const files = await bundleFiles()
  for (const name of DIST_FILES) {
    const text = files[name]
    await Deno.writeTextFile(new URL(name, DIST), text)
    const gzipped = await new Response(
      new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))
    ).arrayBuffer()
    // deno-lint-ignore no-console
    console.log(`console/dist/${name}: ${text.length} bytes, ${gzipped.byteLength} gzipped`)
  }
}
