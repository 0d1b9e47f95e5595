/**
 * Masks what looks like a credential in text the gateway did not write (an
 * upstream's error message, which may quote a key, an `Authorization` header
 * or a caller's field back), and bounds such text before it is shown to a
 * caller, logged or stored.
 *
 * Pure string functions; every pattern is a run of one character class after
 * a fixed prefix (no nested quantifiers), so the cost is linear in the input:
 * a megabyte of hostile text is masked in milliseconds.
 *
 * @since 0.1.0
 */

/** What a masked secret is replaced with. @category constants */
export const MASK = "[redacted]"

/**
 * Vendor key shapes, each with the prefix that names it (kept, so a reader
 * still sees which kind of key was there):
 * - OpenAI `sk-…`, `sk-proj-…`, and Anthropic `sk-ant-…` (8 or more key characters after `sk-`);
 * - Google `AIza…` (a 39-character key; 20 or more after the prefix are masked).
 */
const prefixed: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bsk-ant-[A-Za-z0-9_-]{8,}/g, `sk-ant-${MASK}`],
  [/\bsk-[A-Za-z0-9_-]{8,}/g, `sk-${MASK}`],
  [/\bAIza[A-Za-z0-9_-]{20,}/g, `AIza${MASK}`]
]

/** `Bearer <token>`: masked when the token holds a digit or is 20 characters or longer ("Bearer authentication" stays). */
const bearer = /\bBearer[ \t]+([A-Za-z0-9._~+/=-]{8,})/gi

/** `api_key=…`, `x-api-key: …`, `access_token: "…"`, `secret=…`, `password=…`: the value is masked. */
const labelled =
  /\b(api[_-]?key|x-api-key|x-goog-api-key|access[_-]?token|client[_-]?secret|secret|password)(["']?[ \t]*[:=][ \t]*["']?)[^\s"'&,;]{6,}/gi

/** Candidate runs for the generic rule: base64/base64url/hex characters, at least 32 in a row. */
const longRun = /[A-Za-z0-9+/_=-]{32,}/g
const segmentSeparator = /[-_/]/
const hasDigit = /[0-9]/
const hasLetter = /[A-Za-z]/

/**
 * A run looks like a secret when one of its pieces between `-`, `_` and `/`
 * is at least 20 characters long and mixes letters and digits (hex digests,
 * base64 keys, JWT parts). Model names (`claude-3-5-sonnet-20241022`), UUIDs,
 * quota ids (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`) and URL
 * paths have short pieces or no digits, and are kept.
 */
const looksSecret = (run: string): boolean =>
  run.split(segmentSeparator).some((piece) => piece.length >= 20 && hasDigit.test(piece) && hasLetter.test(piece))

/** The shortest configured secret masked by value; shorter values (`1`, `true`) would mask ordinary words. */
export const MIN_KNOWN_SECRET = 6

/** Secrets known by value, per owner (one catalog of one gateway), and the one pattern matching all of them. */
const known = new Map<object, ReadonlyArray<string>>()
let knownPattern: RegExp | undefined

const escapeRegExp = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Records the secrets `owner` configured (the upstream keys and header values
 * of its channels), replacing what it recorded before; `maskSecrets` then
 * masks each of them by value wherever it appears, whatever its shape (a
 * UUID-form key, a short key, a proxy token). Values shorter than
 * `MIN_KNOWN_SECRET` characters are not recorded.
 *
 * @category redaction
 */
export const registerKnownSecrets = (owner: object, secrets: Iterable<string>): void => {
  const kept = [...new Set([...secrets].filter((secret) => secret.length >= MIN_KNOWN_SECRET))]
  if (kept.length === 0) known.delete(owner)
  else known.set(owner, kept)
  const all = [...new Set([...known.values()].flat())].sort((a, b) => b.length - a.length)
  knownPattern = all.length === 0 ? undefined : new RegExp(all.map(escapeRegExp).join("|"), "g")
}

/**
 * `text` with every key-like substring replaced by `[redacted]` (a known key
 * prefix such as `sk-` or `AIza` is kept in front of the mask), and every
 * secret recorded by `registerKnownSecrets` masked by value. Linear in the
 * length of `text` for the patterns; ordinary prose, field paths, model
 * names and UUIDs are left alone unless they are a configured secret.
 *
 * @category redaction
 */
export const maskSecrets = (text: string): string => {
  let out = knownPattern === undefined ? text : text.replace(knownPattern, MASK)
  for (const [pattern, replacement] of prefixed) out = out.replace(pattern, replacement)
  out = out.replace(
    bearer,
    (match, token: string) =>
      hasDigit.test(token) || token.length >= 20 ? `${match.slice(0, match.length - token.length)}${MASK}` : match
  )
  out = out.replace(labelled, (_match, label: string, separator: string) => `${label}${separator}${MASK}`)
  return out.replace(longRun, (run) => looksSecret(run) ? MASK : run)
}

// C0 controls other than tab and newline, DEL, and the C1 block.
// deno-lint-ignore no-control-regex
const controls = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g

/**
 * Text from outside (an upstream's error message) made fit to show a caller,
 * log or store: control characters (NUL included) become spaces, lone
 * surrogates become U+FFFD, secrets are masked (`maskSecrets`, over the whole
 * text, so no key is cut in half and left readable), and the result is cut to
 * at most `maxChars` UTF-16 units (default 1000) without splitting a
 * surrogate pair, ending in `…` when cut.
 *
 * @category redaction
 */
export const safeVendorText = (text: string, maxChars = 1000): string => {
  const masked = maskSecrets(text.replace(controls, " ").toWellFormed())
  if (masked.length <= maxChars) return masked
  let end = Math.max(0, maxChars - 1)
  const last = masked.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${masked.slice(0, end)}…`
}
