/**
 * The asset routes (spec "Resources: Asset"; the creation route is left to
 * us by the spec, "Referenced but not shown"):
 *
 * - `POST /api/asset/create` (Bearer; JSON body `{url, name?}`) →
 *   `{Result: {Id}}`, the bare id `asset-<timestamp>-<suffix>`; the asset is
 *   `Processing` until its URL is checked.
 * - `GET /api/asset/get?id=<bare id>` (Bearer) → `{Result: {Id, Name, Url,
 *   Status, Reason, ContentType, Size, CreatedAt}}` (`Status`: `Processing`,
 *   `Active` or `Failed`; `Reason` only when failed; `ContentType` and `Size`
 *   when known). Only the owner sees an asset: anyone else gets the 404 of an
 *   unknown id.
 *
 * A create counts against the key's and the user's request rate (`rpm`) and
 * is refused (429) while the user has `settings.max_pending_assets` assets
 * being checked.
 *
 * Errors leave in the gateway envelope `{error: {message, type, param,
 * code}}` with their HTTP status, not the `/api/*` envelope: these two routes
 * are called with an API key by programs (the same callers as the video
 * routes whose media fields take `asset://<id>`), whose success body
 * `{Result: …}` is no `/api/*` `{success, data}` body either; the `/api/*`
 * envelope answers most failures with HTTP 200 and no `param`, which a
 * program would read as success.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { isAssetId } from "../domain/AssetId.ts"
import { InvalidRequest } from "../errors/GatewayError.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { type Asset, Assets } from "../tasks/Assets.ts"
import { Auth } from "../services/Auth.ts"
import { RateLimiter } from "../services/RateLimiter.ts"
import { UserCaps } from "../services/UserCaps.ts"
import { Catalog } from "../storage/Catalog.ts"
import { limitSubjects } from "../relay/text/Relay.ts"

/** The largest asset request body read, in bytes. @category constants */
export const ASSET_BODY_LIMIT = 64 * 1024

/** An asset as the lookup route shows it. */
const resultOf = (asset: Asset) => ({
  Result: {
    Id: asset.id,
    Name: asset.name ?? null,
    Url: asset.url,
    Status: asset.status,
    ...(asset.reason === undefined ? {} : { Reason: asset.reason }),
    ...(asset.mediaType === undefined ? {} : { ContentType: asset.mediaType }),
    ...(asset.sizeBytes === undefined ? {} : { Size: asset.sizeBytes }),
    CreatedAt: asset.createdAt
  }
})

/**
 * `POST /api/asset/create` and `GET /api/asset/get`.
 *
 * @category routes
 */
export const AssetRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const assets = yield* Assets
  const limiter = yield* RateLimiter
  const catalog = yield* Catalog
  const caps = yield* UserCaps

  const principalOf = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))

  const create = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      // Each create is an outbound fetch: it counts against the key's and the user's request rate.
      const permit = yield* limiter.acquire(
        limitSubjects(principal, catalog.snapshot().groups.get(principal.group)?.limits)
      )
      yield* permit.release(0)
      const body = yield* readJsonObject(httpRequest, ASSET_BODY_LIMIT)
      const asset = yield* caps.asset(
        principal.userId,
        assets.create(principal.userId, { url: body.url, name: body.name })
      )
      return HttpServerResponse.jsonUnsafe({ Result: { Id: asset.id } })
    }).pipe(respondWith(encodeOpenAiError))

  const get = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* principalOf(httpRequest)
      const ids = new URL(httpRequest.url, "http://localhost").searchParams.getAll("id")
      if (ids.length !== 1 || ids[0] === "") {
        return yield* new InvalidRequest({ message: "id is required: one bare asset id.", param: "id" })
      }
      if (!isAssetId(ids[0])) {
        return yield* new InvalidRequest({
          message: "id must be a bare asset id (asset-<timestamp>-<suffix>, without asset://).",
          param: "id"
        })
      }
      return HttpServerResponse.jsonUnsafe(resultOf(yield* assets.get(ids[0], principal.userId)))
    }).pipe(respondWith(encodeOpenAiError))

  yield* router.add("POST", "/api/asset/create", create)
  yield* router.add("GET", "/api/asset/get", get)
}))
