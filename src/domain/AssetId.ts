/**
 * Asset ids and asset URIs (spec "Resources: Asset" and "Video: first video
 * family"): an asset is registered once and named by a bare id
 * `asset-<timestamp>-<suffix>`; a media field names it as
 * `asset://<id>`.
 *
 * @since 0.1.0
 */

/** The scheme prefix of an asset URI. @category models */
export const ASSET_URI_PREFIX = "asset://"

const ASSET_ID = /^asset-\d{13}-[a-z0-9]{16}$/

/**
 * Whether `text` is a bare asset id as this gateway makes them: `asset-`, the
 * creation time in epoch milliseconds (13 digits), `-`, and 16 random
 * characters of `[a-z0-9]`.
 *
 * @category rules
 */
export const isAssetId = (text: string): boolean => ASSET_ID.test(text)

/**
 * The bare id of an asset URI `asset://<id>`, `undefined` when `ref` is not an
 * asset URI. The id is not checked here (`isAssetId` does that).
 *
 * @category rules
 */
export const assetIdOf = (ref: string): string | undefined =>
  ref.startsWith(ASSET_URI_PREFIX) ? ref.slice(ASSET_URI_PREFIX.length) : undefined

const SUFFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"

/**
 * A new bare asset id for an asset created at `nowMillis` (epoch
 * milliseconds): the suffix is 16 characters drawn uniformly with
 * `crypto.getRandomValues` (bytes of 252 and above are drawn again).
 *
 * @category rules
 */
export const newAssetId = (nowMillis: number): string => {
  let suffix = ""
  while (suffix.length < 16) {
    for (const byte of crypto.getRandomValues(new Uint8Array(32))) {
      if (byte < 252 && suffix.length < 16) suffix += SUFFIX_ALPHABET[byte % 36]
    }
  }
  return `asset-${String(Math.max(0, Math.floor(nowMillis))).padStart(13, "0").slice(-13)}-${suffix}`
}
