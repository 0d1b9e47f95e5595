/**
 * Images the gateway keeps so that a caller who asked for `url` gets a URL
 * even from a model that answers only Base64 (GPT image models, Gemini):
 * the image is stored (the database, shared by every instance) and served by
 * `GET /v1/images/content/{id}` for `IMAGE_CONTENT_TTL_SECONDS` (one hour, as
 * OpenAI's own image URLs last), then pruned. The URL handed out carries the
 * image's own random token (`?token=…`), so a plain HTTP client fetches it
 * without a key; the owner's Bearer key also reads it without the token.
 * Anyone else, a wrong token or an expired image gets `NotFound`.
 *
 * The media type an upstream gave an image (Gemini's `inlineData.mimeType`,
 * say) is never kept nor served: the type is sniffed from the bytes when the
 * image is kept and again when it is read (`http/SafeMedia.ts`), so a row
 * kept before, or written by anyone else, cannot make the gateway serve
 * `text/html`; bytes that are no PNG, JPEG, WebP or GIF are
 * `application/octet-stream`.
 *
 * @since 0.1.0
 */
import { Buffer } from "node:buffer"
import { timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { GeneratedImage } from "../canonical/Image.ts"
import { sniffMediaType } from "../http/SafeMedia.ts"
import { randomToken } from "../formats/videos/VideoFamilies.ts"
import { NotFound, type StorageUnavailable } from "../errors/GatewayError.ts"
import { storageFailure } from "../storage/StorageFailure.ts"

/** How long a kept image is served, in seconds (OpenAI's image URLs last 60 minutes). @category constants */
export const IMAGE_CONTENT_TTL_SECONDS = 3600

/** Expired rows deleted at most per `keep` (the rest go with the next ones). @category constants */
const PRUNE_BATCH = 100

/** A kept image: its bytes and its type as sniffed from them (`sniffMediaType`). @category models */
export interface ImageContent {
  readonly mediaType: string
  readonly bytes: Uint8Array
}

/** The shape of an image content id: `img_` and 32 letters or digits. @category models */
export const isImageContentId = (id: string): boolean => /^img_[A-Za-z0-9]{32}$/.test(id)

const sameText = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && timingSafeEqual(left, right)
}

/** @category services */
export class ImageContents extends Context.Service<ImageContents, {
  /**
   * `images` as the caller's answer holds them: each Base64 image kept for
   * `userId` and replaced by its URL under `base` (the gateway's address,
   * no trailing `/`): `<base>/v1/images/content/<id>?token=<token>`; a URL
   * image is left as it is. Expired images are pruned on the way.
   */
  readonly keep: (
    userId: bigint,
    images: ReadonlyArray<GeneratedImage>,
    base: string
  ) => Effect.Effect<ReadonlyArray<GeneratedImage>>
  /**
   * The image `id` while it is served, for the holder of its `token` or its
   * owner `userId`, typed by its bytes; else `NotFound` (the same answer for
   * an unknown id); `StorageUnavailable` when it cannot be read.
   */
  readonly read: (
    id: string,
    access: { readonly token?: string | undefined; readonly userId?: bigint | undefined }
  ) => Effect.Effect<ImageContent, NotFound | StorageUnavailable>
}>()("sluice/tasks/ImageContents") {
  /** SQL-backed (table `image_contents`). */
  static readonly layer = Layer.effect(
    ImageContents,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const keep = Effect.fn("ImageContents.keep")(
        function* (userId: bigint, images: ReadonlyArray<GeneratedImage>, base: string) {
          const now = yield* Clock.currentTimeMillis
          const expires = new Date(now + IMAGE_CONTENT_TTL_SECONDS * 1000)
          yield* sql`DELETE FROM image_contents WHERE id IN (
                       SELECT id FROM image_contents WHERE expires_at < ${new Date(now)} LIMIT ${PRUNE_BATCH})`
          const kept: Array<GeneratedImage> = []
          for (const image of images) {
            if ("url" in image) {
              kept.push(image)
              continue
            }
            const id = `img_${randomToken(32)}`
            const token = randomToken(32)
            const bytes = Uint8Array.from(Buffer.from(image.base64, "base64"))
            const mediaType = yield* sniffMediaType("image", bytes)
            yield* sql`INSERT INTO image_contents (id, user_id, token, media_type, data, expires_at)
                       VALUES (${id}, ${userId}, ${token}, ${mediaType}, ${image.base64}, ${expires})`
            kept.push({ url: `${base}/v1/images/content/${id}?token=${token}`, revisedPrompt: image.revisedPrompt })
          }
          return kept as ReadonlyArray<GeneratedImage>
        },
        // Kept inside the accepted attempt (or a task's run), after the vendor answered: a typed failure there would
        // fail over to another channel or change the bill, so a storage failure stays a defect.
        Effect.orDie
      )

      const read = Effect.fn("ImageContents.read")(function* (
        id: string,
        access: { readonly token?: string | undefined; readonly userId?: bigint | undefined }
      ) {
        const missing = new NotFound({ what: "image", id: isImageContentId(id) ? id : "(malformed)" })
        if (!isImageContentId(id)) return yield* missing
        const now = new Date(yield* Clock.currentTimeMillis)
        // The stored media_type is not read: the type is sniffed from the bytes (see the module doc).
        const rows = yield* sql<{ userId: bigint | string; token: string; data: string }>`
          SELECT user_id AS "userId", token, data
          FROM image_contents WHERE id = ${id} AND expires_at > ${now}`.pipe(storageFailure("image_contents.read"))
        const row = rows[0]
        if (row === undefined) return yield* missing
        const allowed = (access.token !== undefined && sameText(access.token, row.token)) ||
          (access.userId !== undefined && BigInt(row.userId) === access.userId)
        if (!allowed) return yield* missing
        const bytes = Uint8Array.from(Buffer.from(row.data, "base64"))
        return { mediaType: yield* sniffMediaType("image", bytes), bytes }
      })

      return ImageContents.of({ keep, read })
    })
  )
}
