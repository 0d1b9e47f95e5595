/**
 * The field schemas of `/api/*` bodies. Every string from a caller is
 * hostile: text fields are bounded, well-formed (no lone surrogates) and free
 * of control characters; names are drawn from a small alphabet.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { isAllowListEntry } from "../../http/ClientAddress.ts"

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * Display text of at most `max` characters: well-formed, no control
 * characters.
 *
 * @category fields
 */
export const Text = (max: number) =>
  Schema.String.check(
    Schema.isMaxLength(max),
    Schema.makeFilter((value: string) =>
      value.isWellFormed() && !CONTROL.test(value) ? true : "must be text without control characters"
    )
  )

/** A username: 1 to 32 of `A–Z a–z 0–9 _ . -`. @category fields */
export const Username = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_.-]{1,32}$/, { message: "must be 1 to 32 letters, digits, _ . or -" })
)

/** A password as sent; its rules are checked by `passwordProblem` (bounded here so nothing huge is hashed). @category fields */
export const Password = Schema.String.check(Schema.isMaxLength(1024))

/** A display name. @category fields */
export const DisplayName = Text(64)

/** An e-mail address (loosely: something@something, at most 254 characters). @category fields */
export const Email = Schema.String.check(
  // deno-lint-ignore no-control-regex
  Schema.isPattern(/^[^\s@\u0000-\u001f]{1,64}@[^\s@\u0000-\u001f]{1,189}$/, { message: "must be an e-mail address" })
)

/** A name of a key, group, model or channel: 1 to 64 characters of text. @category fields */
export const Name = Text(64).check(Schema.isMinLength(1))

/** An id in a body: a positive safe integer. @category fields */
export const Id = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(1),
  Schema.isLessThanOrEqualTo(Number.MAX_SAFE_INTEGER)
)

/** Quota units: a whole, non-negative number a JS number holds exactly. @category fields */
export const Quota = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(0),
  Schema.isLessThanOrEqualTo(Number.MAX_SAFE_INTEGER)
)

/** Epoch seconds. @category fields */
export const EpochSeconds = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(253402300799))

/** A list of model names (at most 1000). @category fields */
export const ModelList = Schema.Array(Name).check(Schema.isMaxLength(1000))

/** The roles. @category fields */
export const RoleField = Schema.Literals(["user", "admin", "root"])

/** Enabled or disabled. @category fields */
export const Status = Schema.Literals(["enabled", "disabled"])

/** An IP allow-list: at most 100 addresses or CIDR ranges (`203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`). @category fields */
export const IpList = Schema.Array(
  Schema.String.check(
    Schema.makeFilter((value: string) => isAllowListEntry(value) ? true : "must be an IP address or CIDR range")
  )
).check(Schema.isMaxLength(100))
