/**
 * Password hashing for accounts: bcrypt (the `bcryptjs` library) at cost
 * `PASSWORD_COST`, never hand-rolled. `verifyPassword` takes the same path
 * whether or not the user exists: an unknown user is checked against a
 * fixed hash of the same cost, so the answer time does not tell the two
 * apart. bcrypt reads at most 72 bytes of a password, so longer ones are
 * refused at the door (`passwordProblem`) rather than silently cut.
 *
 * @since 0.1.0
 */
import bcrypt from "bcryptjs"

/** The bcrypt cost factor (2^10 rounds; OWASP's floor for bcrypt is 10). @category constants */
export const PASSWORD_COST = 10

/** Shortest password accepted, in characters. @category constants */
export const PASSWORD_MIN_LENGTH = 8

/** Longest password accepted, in UTF-8 bytes (bcrypt ignores what follows). @category constants */
export const PASSWORD_MAX_BYTES = 72

/** A hash of a random password nobody knows, compared against when the user does not exist. */
const DECOY_HASH = bcrypt.hashSync(crypto.randomUUID(), PASSWORD_COST)

/**
 * Why `password` cannot be used, or `undefined` when it can: at least
 * `PASSWORD_MIN_LENGTH` characters, at most `PASSWORD_MAX_BYTES` UTF-8 bytes,
 * well-formed text without NUL.
 *
 * @category passwords
 */
export const passwordProblem = (password: string): string | undefined => {
  if (!password.isWellFormed() || password.includes("\u0000")) return "The password holds characters it may not."
  if (password.length < PASSWORD_MIN_LENGTH) return `The password needs at least ${PASSWORD_MIN_LENGTH} characters.`
  if (new TextEncoder().encode(password).byteLength > PASSWORD_MAX_BYTES) {
    return `The password may have at most ${PASSWORD_MAX_BYTES} bytes.`
  }
  return undefined
}

/**
 * The bcrypt hash (`$2b$10$…`) of `password`.
 *
 * @category passwords
 */
export const hashPassword = (password: string): Promise<string> => bcrypt.hash(password, PASSWORD_COST)

/**
 * Whether `password` matches `hash`; `hash` `null` or `undefined` (no such
 * user, or a user without a password) compares against a decoy hash and
 * answers `false`, taking the same time as a wrong password.
 *
 * @category passwords
 */
export const verifyPassword = async (password: string, hash: string | null | undefined): Promise<boolean> => {
  const usable = typeof hash === "string" && hash.startsWith("$2")
  const matched = await bcrypt.compare(password.slice(0, 512), usable ? hash : DECOY_HASH)
  return usable && matched
}

/**
 * The cost factor a bcrypt hash was made with (`$2b$10$…` → 10), or
 * `undefined` for something else.
 *
 * @category passwords
 */
export const costOf = (hash: string): number | undefined => {
  const match = /^\$2[aby]\$(\d{2})\$/.exec(hash)
  return match === null ? undefined : Number(match[1])
}

/**
 * A random password of 24 URL-safe characters (144 bits), for the root user
 * when `SLUICE_ROOT_PASSWORD` is unset.
 *
 * @category passwords
 */
export const generatePassword = (): string => {
  const bytes = crypto.getRandomValues(new Uint8Array(18))
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
}
