/**
 * How callers' API keys are stored: a SHA-256 digest (hex) for lookup and a
 * short display prefix. Keys are long random strings, so a fast digest is the
 * right tool here (a slow password hash is for low-entropy passwords).
 *
 * @since 0.1.0
 */

const encoder = new TextEncoder()

/**
 * Hex SHA-256 of `key`.
 *
 * @category hashing
 */
export const hashKey = async (key: string): Promise<string> => {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(key))
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("")
}

/**
 * What may be shown of a key: its first 7 characters and an ellipsis.
 *
 * @category hashing
 */
export const keyPrefix = (key: string): string => `${key.slice(0, 7)}…`
