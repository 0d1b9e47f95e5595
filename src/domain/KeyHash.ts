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
