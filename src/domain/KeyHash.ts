/**
 * How callers' API keys are stored: a SHA-256 digest (hex) for lookup and a
 * short display prefix. Keys are long random strings, so a fast digest is the
 * right tool here (a slow password hash is for low-entropy passwords).
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"

/**
 * Hex SHA-256 of `key` (UTF-8). Synchronous: it runs on the request path
 * (once per key newly seen by `Auth`, which keeps recent digests), and
 * `node:crypto`'s one-shot hash costs far less than an awaited
 * `crypto.subtle.digest`.
 *
 * @category hashing
 */
export const hashKey = (key: string): string => createHash("sha256").update(key, "utf8").digest("hex")

/**
 * What may be shown of a key: its first 7 characters and an ellipsis.
 *
 * @category hashing
 */
export const keyPrefix = (key: string): string => `${key.slice(0, 7)}…`

/**
 * A new API key: `sk-` and 48 characters from `[A-Za-z0-9]` (about 285 bits),
 * drawn without modulo bias.
 *
 * @category hashing
 */
export const generateKey = (): string => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
  let out = "sk-"
  while (out.length < 51) {
    for (const byte of crypto.getRandomValues(new Uint8Array(64))) {
      if (byte < 248 && out.length < 51) out += alphabet[byte % 62]
    }
  }
  return out
}

/**
 * A new opaque secret for a browser session or an OAuth state: 32 random
 * bytes, base64url (43 characters).
 *
 * @category hashing
 */
export const generateSecret = (): string => {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")
}
