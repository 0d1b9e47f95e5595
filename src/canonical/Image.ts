/**
 * The canonical image-generation request and answer: what the images routes
 * (`/v1/images/generations`, `/v1/images/edits`) decode into and what every
 * image upstream (OpenAI images, Ark image generation, generate-content with
 * image output) is encoded from and decoded to. It is no vendor's format.
 *
 * @since 0.1.0
 */

/** An input image carried as bytes (an edit's upload, or a Base64 reference). @category models */
export interface ImageBytes {
  /** Media type, e.g. `image/png`. */
  readonly mediaType: string
  /** The bytes, Base64 (standard alphabet, no data-URI prefix). */
  readonly base64: string
  /** The upload's file name, when it had one. */
  readonly filename?: string | undefined
}

/**
 * A reference image as the caller gave it on a generation (`image`): a URL, a
 * data URI or bare Base64; vendors that take references receive it as is.
 *
 * @category models
 */
export type ImageReference = string

/**
 * One image request. `size` is the actual `WxH` to send upstream (presets
 * already resolved by the model's family), or `undefined` for the upstream's
 * default; `quality` likewise after the family's default. `b64` says the caller
 * wants Base64 (`b64_json` or `base64`, or no `response_format` on a model
 * whose vendor answers Base64 by default) rather than a URL. `style` and
 * `background` are passed through as given (string or object). `edit` holds the
 * uploaded images and mask of `/v1/images/edits`; `references` the `image`
 * field of a generation (URLs and `data:` URIs; bare Base64 already wrapped as
 * a `data:` URI of its image type).
 *
 * @category models
 */
export interface ImageRequest {
  readonly model: string
  readonly prompt: string
  /** Images wanted, at least 1. */
  readonly n: number
  readonly size?: string | undefined
  /** The family's tier of `size` (`1K`, `2K`, `4K`) when the caller named a preset. */
  readonly tier?: "1K" | "2K" | "4K" | undefined
  readonly quality?: string | undefined
  readonly b64: boolean
  readonly style?: unknown
  readonly background?: unknown
  readonly watermark?: boolean | undefined
  readonly user?: string | undefined
  readonly references: ReadonlyArray<ImageReference>
  readonly edit?: {
    readonly images: ReadonlyArray<ImageBytes>
    readonly mask?: ImageBytes | undefined
  } | undefined
}

/** One generated image: a URL the upstream serves, or the bytes in Base64. @category models */
export type GeneratedImage =
  | { readonly url: string; readonly revisedPrompt?: string | undefined }
  | { readonly base64: string; readonly mediaType: string; readonly revisedPrompt?: string | undefined }

/** What an upstream answered: the images in order. @category models */
export interface ImageResponse {
  readonly images: ReadonlyArray<GeneratedImage>
}
