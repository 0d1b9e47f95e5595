/**
 * The Assets service on a real store (PGlite): `resolve` turns `asset://<id>`
 * into the URL of an Active asset of the caller and refuses, naming the
 * caller's field, an unknown, foreign, malformed or not yet usable one, and
 * leaves any other reference as it is; a check lost to a restart (a stale
 * `Processing` row) is run again by the next `get`.
 */
import { ok, strictEqual } from "node:assert/strict"
import { Effect, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import { applyBootstrap } from "../../src/config/ApplyBootstrap.ts"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { type Asset, Assets } from "../../src/tasks/Assets.ts"
import { startMediaServer } from "../support/MediaServer.ts"
import { layerFreshPglite } from "../support/PgliteTemplate.ts"

const FILE = JSON.stringify({
  groups: { default: { ratio: 1 } },
  users: [
    { username: "alice", group: "default", quota: 1000, tokens: [{ name: "a", key: "sk-test-alice-0001" }] },
    { username: "bob", group: "default", quota: 1000, tokens: [{ name: "b", key: "sk-test-bob-0001" }] }
  ]
})

const settle = (assets: Assets["Service"], id: string, userId: bigint) =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 50; attempt++) {
      const asset: Asset = yield* assets.get(id, userId)
      if (asset.status !== "Processing") return asset
      yield* Effect.sleep("100 millis")
    }
    throw new Error(`asset ${id} still Processing`)
  })

Deno.test("Assets.resolve: the owner's Active asset → its URL; anything else of asset:// refused naming the field", async () => {
  const media = startMediaServer()
  const parsed = parseBootstrap(FILE, "sluice.json")
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  const settings = { mediaTimeoutMs: 500, mediaAllowHosts: ["127.0.0.1"] }
  try {
    await Effect.gen(function* () {
      yield* applyBootstrap(parsed.success)
      const sql = yield* SqlClient.SqlClient
      const users = yield* sql<{ id: bigint; username: string }>`SELECT id, username FROM users`
      const alice = BigInt(users.find((user) => user.username === "alice")!.id)
      const bob = BigInt(users.find((user) => user.username === "bob")!.id)
      const assets = yield* Assets

      const image = yield* assets.create(alice, { url: `${media.base}/pixel.png` })
      strictEqual(image.status, "Processing")
      // Not yet checked, or failed: refused, naming the field.
      const page = yield* assets.create(alice, { url: `${media.base}/page.html` })
      strictEqual((yield* settle(assets, image.id, alice)).status, "Active")
      strictEqual((yield* settle(assets, page.id, alice)).status, "Failed")

      strictEqual(yield* assets.resolve(`asset://${image.id}`, alice, "first_image"), `${media.base}/pixel.png`)
      strictEqual(
        yield* assets.resolve("https://media.example.com/a.png", alice, "image"),
        "https://media.example.com/a.png"
      )
      strictEqual(yield* assets.resolve("data:image/png;base64,AAAA", alice, "image"), "data:image/png;base64,AAAA")

      const refusals: ReadonlyArray<readonly [string, bigint, string]> = [
        [`asset://${image.id}`, bob, "first_image"], // foreign
        [`asset://${page.id}`, alice, "reference_image_urls"], // Failed
        ["asset://asset-1111111111111-aaaaaaaaaaaaaaaa", alice, "last_image"], // unknown
        ["asset://../../etc/passwd\u0000", alice, "audio_url"] // malformed
      ]
      for (const [ref, user, param] of refusals) {
        const error = yield* Effect.flip(assets.resolve(ref, user, param))
        strictEqual(error._tag, "InvalidRequest")
        strictEqual(error.param, param)
        ok(!error.message.includes("\u0000"))
        ok(!error.message.includes(media.base) || user === alice, "a foreign asset's URL never shows")
      }
      const failed = yield* Effect.flip(assets.resolve(`asset://${page.id}`, alice, "image"))
      ok(/Failed, not Active: not an image, video or audio file/.test(failed.message), failed.message)

      // A whole request: asset references resolved, others kept; an error names the reference's field.
      const request = {
        model: "videoa-2-0-260128",
        prompt: "p",
        references: [
          { kind: "image" as const, role: "first_frame" as const, ref: `asset://${image.id}`, param: "first_image" },
          { kind: "image" as const, role: "reference_image" as const, ref: "https://media.example.com/r.png" }
        ]
      }
      const resolved = yield* assets.resolveRequest(request, alice)
      strictEqual(resolved.references[0].ref, `${media.base}/pixel.png`)
      strictEqual(resolved.references[0].param, "first_image")
      strictEqual(resolved.references[1].ref, "https://media.example.com/r.png")
      const refused = yield* Effect.flip(assets.resolveRequest(request, bob))
      strictEqual(refused._tag === "InvalidRequest" ? refused.param : refused._tag, "first_image")

      // A check lost to a restart: a Processing row last touched long ago is checked again by `get`.
      yield* sql`INSERT INTO assets (id, user_id, url, status, updated_at)
                 VALUES ('asset-1000000000000-lostcheck0000000', ${alice}, ${`${media.base}/clip.mp4`}, 'Processing',
                         now() - interval '1 hour')`
      const lost = yield* settle(assets, "asset-1000000000000-lostcheck0000000", alice)
      strictEqual(lost.status, "Active")
      strictEqual(lost.mediaType, "video/mp4")
    }).pipe(
      Effect.provide(Assets.layer(settings).pipe(Layer.provideMerge(layerFreshPglite))),
      Effect.scoped,
      Effect.runPromise
    )
  } finally {
    await media.close()
  }
})
