/**
 * Builds the web console: bundles `console/src/main.tsx` (Preact and
 * `@preact/signals` from npm) with esbuild into one minified ES module,
 * `console/dist/app.js`, which is committed so a fresh clone serves the
 * console with no build step. `deno task console` rebuilds it;
 * `test/console/Bundle.test.ts` fails when the committed file differs from a
 * fresh build.
 *
 * @since 0.1.0
 */
import * as esbuild from "esbuild"

/** The committed bundle. */
export const BUNDLE_FILE = new URL("./dist/app.js", import.meta.url)

/** Bundles the console and answers the JavaScript text (nothing written). */
export const bundleConsole = async (): Promise<string> => {
  try {
    const result = await esbuild.build({
      entryPoints: [new URL("./src/main.tsx", import.meta.url).pathname],
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
    return result.outputFiles[0].text
  } finally {
    await esbuild.stop()
  }
}

if (import.meta.main) {
  const text = await bundleConsole()
  await Deno.writeTextFile(BUNDLE_FILE, text)
  const gzipped = await new Response(
    new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))
  ).arrayBuffer()
  // deno-lint-ignore no-console
  console.log(`console/dist/app.js: ${text.length} bytes, ${gzipped.byteLength} gzipped`)
}
