/**
 * Naming the caller's field of a canonical media item, by the caller's format
 * (see `MediaLocation.ts` and `Format.mediaParam`).
 *
 * @since 0.1.0
 */
import type { FormatName } from "../Format.ts"
import type { MediaLocation } from "./MediaLocation.ts"
import { formatOf } from "../Formats.ts"

/**
 * The field of the caller's `body`, sent in format `format`, that holds the
 * canonical media item at `location` (`messages[3].content[1].image_url.url`),
 * or `undefined` when it cannot be told.
 *
 * @category naming
 */
export const mediaParam = (format: FormatName, body: unknown, location: MediaLocation): string | undefined =>
  formatOf(format).mediaParam(body, location)
