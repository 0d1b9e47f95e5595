/**
 * The committed console files (`console/dist/`: the first page's bundle and the chart code loaded on demand) are
 * what `deno task console` builds from `console/src/`, and the first page stays under the brief's budget: at most
 * 150 KB of gzipped JavaScript, without the chart library.
 */
import { ok, strictEqual } from "node:assert/strict"
import { BUNDLE_FILE, bundleFiles, DIST_FILES } from "../../console/build.ts"

const gzippedSize = async (bytes: Uint8Array): Promise<number> =>
  (await new Response(new Blob([bytes as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer())
    .byteLength

Deno.test("console: the committed bundle equals a fresh build (run `deno task console` after changing console/src/)", async () => {
  const fresh = await bundleFiles()
  for (const name of DIST_FILES) {
    const committed = await Deno.readTextFile(new URL(`../../console/dist/${name}`, import.meta.url))
    ok(fresh[name] === committed, `console/dist/${name} is stale: run \`npx -y deno@2 task console\` and commit it`)
  }
})

Deno.test("console: the first page's JavaScript is at most 150 KB gzipped, and the page has no inline script", async () => {
  const js = await Deno.readFile(BUNDLE_FILE)
  const size = await gzippedSize(js)
  ok(size <= 150 * 1024, `the bundle is ${size} bytes gzipped`)
  const text = new TextDecoder().decode(js)
  ok(!text.includes("u-legend"), "uPlot is not in the first page's bundle (loaded on demand from charts.js)")
  ok(text.includes('"/console/charts.js"'), "the chart code is loaded from this origin")
  const html = await Deno.readTextFile(new URL("../../console/index.html", import.meta.url))
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
  strictEqual(scripts.length, 1, "one script")
  ok(/\bsrc="\/console\/app\.js"/.test(scripts[0][1]), "loaded from this origin")
  strictEqual(scripts[0][2].trim(), "", "no inline code")
  ok(!/https?:\/\//.test(html), "no foreign origin in the page")
})
