/**
 * Assets (spec "Resources: Asset", "Asset statuses", "Video: first video
 * family"): a user registers a public media URL once and names it in any
 * video media field as `asset://<id>`.
 *
 * - `create` checks the URL's text at once (a public `https://` URL without
 *   credentials; plain `http://` only for a host in `media_allow_hosts`, the
 *   operator's trusted servers; an IP literal of a non-public range is
 *   refused) and stores the asset as `Processing`; then, off the caller's
 *   request, it reads the URL's head (the first `ASSET_HEAD_BYTES` bytes,
 *   through the SSRF guard of `upstreams/transport/SafeFetch.ts`, under
 *   `media_timeout_ms`): an image, video or audio file (by its declared
 *   `Content-Type`, else by its bytes) makes the asset `Active`; anything
 *   else makes it `Failed` with a reason in a few words (`unreachable` for
 *   any network, address, HTTP or time-out failure, `not an image, video or
 *   audio file`, `too large`), never the connection-level error, which would
 *   make the check a port scanner. At most
 *   `MAX_CONCURRENT_CHECKS` checks run at once per instance; a check lost to
 *   a restart is run again by the next `get` once it is stale.
 * - `get` answers only the asset's owner; anyone else gets `NotFound`, the
 *   same answer as an unknown id (no IDOR).
 * - `resolve` turns `asset://<id>` into the asset's URL for its owner when it
 *   is `Active`; any other reference is returned unchanged.
 * - `resolveRequest` also holds every plain media URL of a video request (the
 *   spec's "public URL": `http://` or `https://`) to the SSRF guard's rule on
 *   its host: an IP literal of a non-public range, or `localhost`, is refused
 *   naming the field, unless the host is in `media_allow_hosts`. The vendor,
 *   not the gateway, fetches such a URL, so no name is resolved here.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import { fileTypeFromBuffer } from "../domain/FileType.ts"
import type { MediaRef, VideoRequest } from "../canonical/Video.ts"
import { ASSET_URI_PREFIX, assetIdOf, isAssetId, newAssetId } from "../domain/AssetId.ts"
import { InvalidRequest, NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { blockedRange, type Resolver, safeFetch } from "../upstreams/transport/SafeFetch.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** The `Reason` of a `Failed` asset: its URL could not be read (any network, HTTP or address failure). @category constants */
export const UNREACHABLE = "unreachable"
/** The `Reason` of a `Failed` asset whose URL is not media. @category constants */
export const NOT_MEDIA = "not an image, video or audio file"
/** The `Reason` of a `Failed` asset whose URL is larger than the limit. @category constants */
export const TOO_LARGE = "too large"

/** Asset statuses: `Active` is the spec's; `Processing` and `Failed` are this gateway's. @category models */
export type AssetStatus = "Processing" | "Active" | "Failed"

/**
 * One asset as its owner sees it. `mediaType` and `sizeBytes` are what the
 * check saw (`sizeBytes` when the server announced it); `reason` says why a
 * `Failed` asset failed; `createdAt` is epoch seconds.
 *
 * @category models
 */
export interface Asset {
  readonly id: string
  readonly name: string | undefined
  readonly url: string
  readonly status: AssetStatus
  readonly reason: string | undefined
  readonly mediaType: string | undefined
  readonly sizeBytes: number | undefined
  readonly createdAt: number
}

/** What `create` reads from the caller's body: the URL and an optional name (both checked here). @category models */
export interface AssetInput {
  readonly url: unknown
  readonly name?: unknown
}

/** The gateway's media settings an asset check uses (bootstrap `settings`). @category models */
export interface AssetSettings {
  readonly mediaTimeoutMs: number
  readonly mediaAllowHosts: ReadonlyArray<string>
}

/** Bytes of an asset's URL read to check it. @category constants */
export const ASSET_HEAD_BYTES = 64 * 1024

/** Checks running at once on one instance. @category constants */
export const MAX_CONCURRENT_CHECKS = 8

/** The longest asset URL, in characters. @category constants */
export const MAX_ASSET_URL = 4096

/** The longest asset name, in characters. @category constants */
export const MAX_ASSET_NAME = 256

const invalid = (message: string, param: string) => new InvalidRequest({ message, param })

const hasControl = (text: string): boolean => {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x20 || code === 0x7f) return true
  }
  return false
}

/** `url` checked as text (see the module doc): the URL, or the `InvalidRequest` naming `url`. */
const checkUrl = (value: unknown, allowHosts: ReadonlySet<string>): string | InvalidRequest => {
  if (typeof value !== "string" || value.length === 0) return invalid("url is required: a public https:// URL.", "url")
  if (value.length > MAX_ASSET_URL) return invalid(`url is longer than ${MAX_ASSET_URL} characters.`, "url")
  if (!value.isWellFormed() || hasControl(value)) {
    return invalid("url holds a control character or a lone surrogate.", "url")
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return invalid("url must be an absolute https:// URL.", "url")
  }
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "")
  const trusted = allowHosts.has(host)
  if (url.protocol !== "https:" && !(url.protocol === "http:" && trusted)) {
    return invalid("url must be a public https:// URL.", "url")
  }
  if (url.username !== "" || url.password !== "") return invalid("url must not carry credentials.", "url")
  if (host === "") return invalid("url must name a host.", "url")
  if (!trusted) {
    const range = blockedRange(host)
    if (range !== undefined && range !== "invalid") {
      return invalid(`url points to a blocked address (${host} is ${range}).`, "url")
    }
  }
  return value
}

/**
 * Why a plain media URL may not be handed to a vendor (see the module doc),
 * or `undefined` when it may: only `http(s)` URLs are judged.
 */
const blockedMediaHost = (ref: string, allowHosts: ReadonlySet<string>): string | undefined => {
  let url: URL
  try {
    url = new URL(ref)
  } catch {
    return undefined
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "")
  if (allowHosts.has(host)) return undefined
  if (host === "localhost" || host.endsWith(".localhost")) return `${host} is a loopback name`
  const range = blockedRange(host)
  return range === undefined || range === "invalid" ? undefined : `${host} is ${range}`
}

/** `name`: absent, or a well-formed string without control characters of at most `MAX_ASSET_NAME`. */
const checkName = (value: unknown): string | undefined | InvalidRequest => {
  if (value === undefined || value === null) return undefined
  if (typeof value !== "string" || value.length > MAX_ASSET_NAME) {
    return invalid(`name must be a string of at most ${MAX_ASSET_NAME} characters.`, "name")
  }
  if (!value.isWellFormed() || hasControl(value)) {
    return invalid("name holds a control character or a lone surrogate.", "name")
  }
  return value
}

const MEDIA = /^(image|video|audio)\/[a-z0-9.+-]{1,64}$/

/** The media type of a head: a declared `image/*`, `video/*` or `audio/*`, else the sniffed one; `undefined` if neither. */
const mediaTypeOf = async (contentType: string | undefined, bytes: Uint8Array): Promise<string | undefined> => {
  const declared = (contentType ?? "").split(";")[0].trim().toLowerCase()
  if (MEDIA.test(declared)) return declared
  const sniffed = await fileTypeFromBuffer(bytes).catch(() => undefined)
  return sniffed !== undefined && MEDIA.test(sniffed.mime) ? sniffed.mime : undefined
}

interface Row {
  readonly id: string
  readonly name: string | null
  readonly url: string
  readonly status: AssetStatus
  readonly reason: string | null
  readonly mediaType: string | null
  readonly sizeBytes: bigint | string | number | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

const assetOf = (row: Row): Asset => ({
  id: row.id,
  name: row.name ?? undefined,
  url: row.url,
  status: row.status,
  reason: row.reason ?? undefined,
  mediaType: row.mediaType ?? undefined,
  sizeBytes: row.sizeBytes === null ? undefined : Number(row.sizeBytes),
  createdAt: Math.floor(row.createdAt.getTime() / 1000)
})

/** @category services */
export class Assets extends Context.Service<Assets, {
  /**
   * Registers `input.url` for `userId`: the new asset (`Processing`; its check runs in the background). Every
   * operation fails with `StorageUnavailable` when its statement cannot run.
   */
  readonly create: (userId: bigint, input: AssetInput) => Effect.Effect<Asset, InvalidRequest | StorageUnavailable>
  /** The asset `id` (bare) of `userId`; `NotFound` when unknown or another user's. */
  readonly get: (id: string, userId: bigint) => Effect.Effect<Asset, NotFound | StorageUnavailable>
  /**
   * `ref` ready for an upstream: the URL of `asset://<id>` when it is an
   * `Active` asset of `userId` (an unknown, foreign or not yet usable asset is
   * an `InvalidRequest` naming `param`); any other reference unchanged.
   */
  readonly resolve: (
    ref: MediaRef,
    userId: bigint,
    param: string
  ) => Effect.Effect<MediaRef, InvalidRequest | StorageUnavailable>
  /**
   * `request` with every reference resolved by `resolve`, each error naming
   * the reference's own field (`param`, else `references`); a plain URL whose
   * host is a non-public address is refused the same way (module doc).
   */
  readonly resolveRequest: (
    request: VideoRequest,
    userId: bigint
  ) => Effect.Effect<VideoRequest, InvalidRequest | StorageUnavailable>
}>()("sluice/tasks/Assets") {
  /** SQL-backed; checks through `safeFetch` with `settings` (`resolve` replaces the system resolver in tests). */
  static readonly layer = (settings: AssetSettings, resolve?: Resolver) =>
    Layer.effect(
      Assets,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const layerScope = yield* Effect.scope
        const checks = yield* Semaphore.make(MAX_CONCURRENT_CHECKS)
        const allowHosts = new Set(settings.mediaAllowHosts.map((host) => host.trim().toLowerCase()))
        /** A `Processing` asset not updated for this long lost its check (a restart): the next `get` runs it again. */
        const staleMillis = 2 * settings.mediaTimeoutMs + 10_000

        const select = (id: string, userId: bigint) =>
          sql<Row>`SELECT id, name, url, status, reason, media_type AS "mediaType", size_bytes AS "sizeBytes",
                          created_at AS "createdAt", updated_at AS "updatedAt"
                   FROM assets WHERE id = ${id} AND user_id = ${userId}`.pipe(
            Effect.map((rows) => rows[0]),
            storageFailure("assets.select")
          )

        /** Reads the URL's head and records the verdict (only over a `Processing` row). */
        const check = (id: string, url: string) =>
          Effect.gen(function* () {
            const verdict = yield* safeFetch(url, {
              maxBytes: ASSET_HEAD_BYTES,
              head: true,
              timeoutMs: settings.mediaTimeoutMs,
              allowHosts: settings.mediaAllowHosts,
              accept: "image/*, video/*, audio/*",
              resolve
            }).pipe(
              Effect.flatMap((fetched) =>
                Effect.promise(() => mediaTypeOf(fetched.contentType, fetched.bytes)).pipe(
                  Effect.map((mediaType) =>
                    mediaType === undefined
                      ? { status: "Failed" as const, reason: NOT_MEDIA, mediaType: null, sizeBytes: null }
                      : { status: "Active" as const, reason: null, mediaType, sizeBytes: fetched.totalBytes ?? null }
                  )
                )
              ),
              // The reason in three words, never the connection-level error (which would make the check a port scanner).
              Effect.catch((error) =>
                Effect.succeed({
                  status: "Failed" as const,
                  reason: error.reason === "too-large" || error.reason === "over-budget" ? TOO_LARGE : UNREACHABLE,
                  mediaType: null,
                  sizeBytes: null
                })
              )
            )
            yield* sql`UPDATE assets SET status = ${verdict.status}, reason = ${verdict.reason},
                         media_type = ${verdict.mediaType}, size_bytes = ${verdict.sizeBytes}, updated_at = now()
                       WHERE id = ${id} AND status = 'Processing'`
          }).pipe(
            checks.withPermits(1),
            Effect.catchCause((cause) => Effect.logWarning("Asset check failed", cause)),
            Effect.forkIn(layerScope),
            Effect.asVoid
          )

        const create = Effect.fn("Assets.create")(function* (userId: bigint, input: AssetInput) {
          const url = checkUrl(input.url, allowHosts)
          if (url instanceof InvalidRequest) return yield* url
          const name = checkName(input.name)
          if (name instanceof InvalidRequest) return yield* name
          const id = newAssetId(yield* Clock.currentTimeMillis)
          const [row] = yield* sql<Row>`
            INSERT INTO assets (id, user_id, name, url, status) VALUES (${id}, ${userId}, ${
            name ?? null
          }, ${url}, 'Processing')
            RETURNING id, name, url, status, reason, media_type AS "mediaType", size_bytes AS "sizeBytes",
                      created_at AS "createdAt", updated_at AS "updatedAt"`.pipe(storageFailure("assets.create"))
          yield* check(id, url)
          return assetOf(row)
        })

        const get = Effect.fn("Assets.get")(function* (id: string, userId: bigint) {
          const row = isAssetId(id) ? yield* select(id, userId) : undefined
          if (row === undefined) {
            // The id is echoed in the answer only when it has the shape of one.
            return yield* new NotFound({ what: "asset", id: isAssetId(id) ? id : "(malformed)", param: "id" })
          }
          if (row.status === "Processing" && (yield* Clock.currentTimeMillis) - row.updatedAt.getTime() > staleMillis) {
            yield* sql`UPDATE assets SET updated_at = now() WHERE id = ${id} AND status = 'Processing'`.pipe(
              storageFailure("assets.recheck")
            )
            yield* check(row.id, row.url)
          }
          return assetOf(row)
        })

        const resolveRef = Effect.fn("Assets.resolve")(function* (ref: MediaRef, userId: bigint, param: string) {
          const id = assetIdOf(ref)
          if (id === undefined) return ref
          const row = isAssetId(id) ? yield* select(id, userId) : undefined
          if (row === undefined) {
            return yield* invalid(
              `${param} names no asset of yours: ${JSON.stringify(`${ASSET_URI_PREFIX}${id.slice(0, 64)}`)}.`,
              param
            )
          }
          if (row.status !== "Active") {
            return yield* invalid(
              `${param} names the asset ${row.id}, which is ${row.status}, not Active${
                row.reason === null ? "" : `: ${row.reason}`
              }`,
              param
            )
          }
          return row.url
        })

        const resolveRequest = (request: VideoRequest, userId: bigint) => {
          for (const reference of request.references) {
            const blocked = blockedMediaHost(reference.ref, allowHosts)
            if (blocked !== undefined) {
              const param = reference.param ?? "references"
              return Effect.fail(invalid(`${param} points to a blocked address (${blocked}).`, param))
            }
          }
          return request.references.some((reference) => assetIdOf(reference.ref) !== undefined)
            ? Effect.forEach(request.references, (reference) =>
              Effect.map(
                resolveRef(reference.ref, userId, reference.param ?? "references"),
                (ref) => ({ ...reference, ref })
              )).pipe(Effect.map((references): VideoRequest => ({ ...request, references })))
            : Effect.succeed(request)
        }

        return Assets.of({ create, get, resolve: resolveRef, resolveRequest })
      })
    )
}
