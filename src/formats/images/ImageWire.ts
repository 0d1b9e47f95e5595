/**
 * What an image wire format offers the image relay: the upstream calls that
 * make a canonical `ImageRequest` (one or several, JSON or a multipart form),
 * how to read an answer, and how to classify an error answer.
 *
 * @since 0.1.0
 */
import type { ImageRequest, ImageResponse } from "../../canonical/Image.ts"
import type { ImageFamily } from "./ImageFamilies.ts"
import type { UpstreamFailed, UpstreamFailureKind } from "../../errors/GatewayError.ts"

/** The image wire formats. @category models */
export type ImageFormatName = "openai" | "ark" | "gemini"

/** One upstream call's body: JSON, or a multipart form (its content type carries the boundary). @category models */
export type ImageCallBody =
  | { readonly _tag: "json"; readonly body: Record<string, unknown> }
  | { readonly _tag: "form"; readonly form: FormData }

/** One image wire format, as the relay uses it on an upstream. @category models */
export interface ImageWire {
  readonly name: ImageFormatName
  /**
   * The calls that answer `request` with the upstream's `model` (rules of the
   * public model's `family`); their images, in order, make the answer.
   */
  readonly encodeCalls: (
    request: ImageRequest,
    model: string,
    family: ImageFamily | undefined
  ) => ReadonlyArray<ImageCallBody>
  /** A 2xx answer (parsed JSON): its images, or an `UpstreamFailed` (`bad-body`) when it holds none. */
  readonly decodeResponse: (json: unknown) => ImageResponse | UpstreamFailed
  /** The failure kind and caller-safe message of an upstream error answer. */
  readonly classifyError: (
    status: number,
    text: string
  ) => { readonly kind: UpstreamFailureKind; readonly message: string }
}
