/**
 * `models.<name>.family` naming a video family: the bootstrap file accepts it,
 * applies it to the models table, and the catalog's `videoFamilyOf` returns it
 * (an image family stays an image family; a model without one gets the
 * default by name).
 */
import { strictEqual } from "node:assert/strict"
import { Effect, Layer, Result } from "effect"
import { applyBootstrap } from "../../src/config/ApplyBootstrap.ts"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { Catalog, imageFamilyOf, videoFamilyOf } from "../../src/storage/Catalog.ts"
import { layerFreshPglite } from "../support/PgliteTemplate.ts"

const FILE = `
groups:
  default: { ratio: 1 }
models:
  clip-house: { per_second: 0.1, family: videoa }
  tiny-clips: { per_second: 0.05, family: mini-2.0 }
  generic-clips: { per_second: 0.1, family: openai-video }
  videoa-2-0-260128: { per_second: 0.2 }
  mini-2.0: { per_second: 0.05 }
  painter: { per_image: 0.04, family: dall-e-3 }
`

Deno.test("videoFamilyOf: the bootstrap file's video family, else the default by name", async () => {
  const parsed = parseBootstrap(FILE, "sluice.yaml")
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  await Effect.gen(function* () {
    yield* applyBootstrap(parsed.success)
    const catalog = yield* Catalog
    yield* catalog.reload
    const snapshot = catalog.snapshot()
    strictEqual(videoFamilyOf(snapshot, "clip-house"), "videoa")
    strictEqual(videoFamilyOf(snapshot, "tiny-clips"), "mini-2.0")
    strictEqual(videoFamilyOf(snapshot, "generic-clips"), "openai-video")
    strictEqual(videoFamilyOf(snapshot, "videoa-2-0-260128"), "videoa")
    strictEqual(videoFamilyOf(snapshot, "videoa-2-0-fast-260128"), "videoa")
    strictEqual(videoFamilyOf(snapshot, "mini-2.0"), "mini-2.0")
    strictEqual(videoFamilyOf(snapshot, "painter"), "openai-video")
    strictEqual(imageFamilyOf(snapshot, "painter"), "dall-e-3")
    strictEqual(imageFamilyOf(snapshot, "clip-house"), undefined)
  }).pipe(
    Effect.provide(Catalog.layer.pipe(Layer.provideMerge(layerFreshPglite))),
    Effect.scoped,
    Effect.runPromise
  )
})
