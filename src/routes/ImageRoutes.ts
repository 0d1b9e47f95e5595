/**
 * The image routes (spec "Endpoints: Images"): `POST /v1/images/generations`
 * (JSON) and `POST /v1/images/edits` (multipart, as the official `openai`
 * SDK's `images.edit` sends it: `image` or `image[]` files, optional `mask`,
 * and the generation's fields as text), and `GET /v1/images/content/{id}`
 * (an image kept for a caller who asked for a `url`, `ImageContents`). Bearer auth; generations also take
 * the browser session when no key is sent (the console playground,
 * `SessionCaller.ts`); the body decoded with the
 * model family's rules; the `ImageRelay` does the rest. Errors leave in the
 * gateway envelope.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Result } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ImageBytes } from "../canonical/Image.ts"
import { InvalidRequest } from "../errors/GatewayError.ts"
import { decodeImageRequest } from "../formats/images/Wires.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { readFormData, readJsonObject } from "../http/Body.ts"
import { clientAddressOf, gatewayOriginOf } from "../http/ClientAddress.ts"
import { credentialOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { safeMediaHeaders } from "../http/SafeMedia.ts"
import { ImageRelay } from "../relay/images/ImageRelay.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { ImageContents } from "../tasks/ImageContents.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { Catalog, imageFamilyOf } from "../storage/Catalog.ts"
import { bearerOrSession, makeSessionCaller } from "./SessionCaller.ts"

/** An uploaded file as Base64 image bytes. */
const bytesOf = async (file: File): Promise<ImageBytes> => {
  const bytes = new Uint8Array(await file.arrayBuffer())
  let binary = ""
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000))
  }
  return { mediaType: file.type === "" ? "image/png" : file.type, base64: btoa(binary), filename: file.name }
}

/**
 * An edit form split into its text fields and its files (`image`, `image[]`, `mask`).
 * A text where a file belongs, or a file where text belongs, is an `InvalidRequest` naming the field.
 */
const splitForm = (form: FormData) =>
  Effect.gen(function* () {
    const fields: Record<string, unknown> = {}
    const images: Array<File> = []
    let mask: File | undefined
    for (const [name, value] of form.entries()) {
      if (name === "image" || name === "image[]") {
        if (typeof value === "string") {
          return yield* new InvalidRequest({ message: "image must be an uploaded file.", param: "image" })
        }
        images.push(value)
      } else if (name === "mask") {
        if (typeof value === "string") {
          return yield* new InvalidRequest({ message: "mask must be an uploaded file.", param: "mask" })
        }
        mask = value
      } else if (typeof value !== "string") {
        return yield* new InvalidRequest({ message: `${name} must be a text field.`, param: name })
      } else {
        // A form's fields are all text; `n` is a number in the JSON body the rules read.
        fields[name] = name === "n" && /^\d{1,6}$/.test(value) ? Number(value) : value
      }
    }
    const edit = yield* Effect.promise(async () => ({
      images: await Promise.all(images.map(bytesOf)),
      mask: mask === undefined ? undefined : await bytesOf(mask)
    }))
    return { fields, edit }
  })

/** @category services */
export class Images extends Context.Service<Images, {
  /** `POST /v1/images/generations`. Never fails: errors are rendered in the gateway envelope. */
  readonly generations: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** `POST /v1/images/edits`. Never fails: errors are rendered in the gateway envelope. */
  readonly edits: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /**
   * `GET /v1/images/content/{id}`: a kept image's bytes, for the URL's
   * `token` or the owner's Bearer key (`ImageContents`); else 404. Served as
   * the type its bytes are, with the headers of `safeMediaHeaders`
   * (`http/SafeMedia.ts`): a PNG, JPEG, WebP or GIF as itself, anything else
   * as an `application/octet-stream` attachment.
   */
  readonly content: (
    httpRequest: HttpServerRequest.HttpServerRequest,
    id: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("sluice/routes/ImageRoutes/Images") {
  /** Needs `Auth`, `Sessions`, `Tokens`, `GatewaySettings`, `Catalog` and `ImageRelay`. */
  static readonly layer = Layer.effect(
    Images,
    Effect.gen(function* () {
      const auth = yield* Auth
      const settings = yield* GatewaySettings
      const catalog = yield* Catalog
      const relay = yield* ImageRelay
      const contents = yield* ImageContents
      /** The gateway's address for a kept image's URL (`gatewayOriginOf`). */
      const baseOf = (httpRequest: HttpServerRequest.HttpServerRequest): string =>
        gatewayOriginOf(httpRequest, settings.publicUrl)
      const callerOf = bearerOrSession(auth, makeSessionCaller(yield* Sessions, yield* Tokens, auth))

      const familyOf = (raw: Record<string, unknown>) =>
        typeof raw.model === "string" ? imageFamilyOf(catalog.snapshot(), raw.model) : undefined

      const generations = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* callerOf(httpRequest)
          const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
          const family = familyOf(raw)
          const decoded = decodeImageRequest(raw, family)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          return yield* relay.run({ request: decoded.success, family, principal, contentBase: baseOf(httpRequest) })
        }).pipe(respondWith(encodeOpenAiError))

      const edits = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))
          const form = yield* readFormData(httpRequest, settings.maxBodyBytes)
          const { fields, edit } = yield* splitForm(form)
          const family = familyOf(fields)
          const decoded = decodeImageRequest(fields, family, edit)
          if (Result.isFailure(decoded)) return yield* decoded.failure
          return yield* relay.run({ request: decoded.success, family, principal, contentBase: baseOf(httpRequest) })
        }).pipe(respondWith(encodeOpenAiError))

      const content = (httpRequest: HttpServerRequest.HttpServerRequest, id: string) =>
        Effect.gen(function* () {
          const token = new URL(httpRequest.url, "http://gateway").searchParams.get("token") ?? undefined
          const key = credentialOf("bearer", httpRequest)
          // The URL's token is enough; without it, the owner's key.
          const userId = token === undefined || key !== undefined
            ? (yield* auth.authenticate(key, clientAddressOf(httpRequest))).userId
            : undefined
          const image = yield* contents.read(id, { token, userId })
          return HttpServerResponse.uint8Array(image.bytes, {
            headers: { ...safeMediaHeaders("image", image.mediaType), "cache-control": "private, max-age=3600" }
          })
        }).pipe(respondWith(encodeOpenAiError))

      return Images.of({ generations, edits, content })
    })
  )
}

/**
 * `POST /v1/images/generations` and `POST /v1/images/edits`.
 *
 * @category routes
 */
export const ImageRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const images = yield* Images
  yield* router.add("POST", "/v1/images/generations", images.generations)
  yield* router.add("POST", "/v1/images/edits", images.edits)
  yield* router.add(
    "GET",
    "/v1/images/content/:id",
    (httpRequest) => Effect.flatMap(HttpRouter.params, (params) => images.content(httpRequest, params.id ?? ""))
  )
}))
