/**
 * What a new webhook endpoint may be, decided over plain values: an http(s)
 * URL, known events (the operator's for admins only), `balance_below` with
 * `balance.low`; and what is stored of it (the URL normalized, events without
 * repeats, thresholds sorted as NUMERIC text, the balance in quota units).
 *
 * @since 0.1.0
 */
import { OPERATOR_EVENTS, USER_EVENTS } from "../../services/WebhookOutbox.ts"

/** A new endpoint. @category models */
export interface NewEndpoint {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly thresholds?: ReadonlyArray<number> | undefined
  /** USD: `balance.low` fires when the user's balance falls under it (required with that event). */
  readonly balance_below?: number | undefined
}

/** The caller an endpoint belongs to: its id and whether it is an admin (operator events). @category models */
export interface WebhookCaller {
  readonly id: bigint
  readonly admin: boolean
}

/**
 * Why an endpoint is refused: a bad field (`invalid`, naming it in `param`)
 * or operator events asked for by a caller who is not an admin (`forbidden`).
 *
 * @category models
 */
export type EndpointRefusal =
  | { readonly _tag: "invalid"; readonly message: string; readonly param: string }
  | { readonly _tag: "forbidden"; readonly message: string }

/**
 * An endpoint as stored: `url` normalized, `events` without repeats,
 * `thresholds` sorted with 4 decimals (NUMERIC text), `balanceBelow` in
 * quota units as text (`null`: not set).
 *
 * @category models
 */
export interface EndpointFields {
  readonly url: string
  readonly operator: boolean
  readonly events: ReadonlyArray<string>
  readonly thresholds: ReadonlyArray<string>
  readonly balanceBelow: string | null
}

const KNOWN: ReadonlyArray<string> = [...USER_EVENTS, ...OPERATOR_EVENTS]
const OPERATOR: ReadonlyArray<string> = OPERATOR_EVENTS

/** The budget fractions `budget.threshold` fires at when none are given. @category constants */
export const DEFAULT_THRESHOLDS: ReadonlyArray<number> = [0.5, 0.8, 1]

/** What is stored of `input` for `caller`, or why it is refused (the first problem found). */
export const endpointOf = (caller: WebhookCaller, input: NewEndpoint): EndpointFields | EndpointRefusal => {
  let url: URL
  try {
    url = new URL(input.url)
  } catch {
    return { _tag: "invalid", message: "url: must be an absolute http or https URL.", param: "url" }
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { _tag: "invalid", message: "url: must be an http or https URL.", param: "url" }
  }
  const unknown = input.events.findIndex((event) => !KNOWN.includes(event))
  if (unknown >= 0) {
    return {
      _tag: "invalid",
      message: `events[${unknown}]: must be one of ${KNOWN.join(", ")}.`,
      param: `events[${unknown}]`
    }
  }
  const operator = input.events.some((event) => OPERATOR.includes(event))
  if (operator && !caller.admin) {
    return { _tag: "forbidden", message: "Only an admin may subscribe to the operator's events." }
  }
  if (input.events.includes("balance.low") && input.balance_below === undefined) {
    return {
      _tag: "invalid",
      message: "balance_below: the balance (USD) under which balance.low fires is required with that event.",
      param: "balance_below"
    }
  }
  return {
    url: url.href,
    operator,
    events: [...new Set(input.events)],
    thresholds: [...new Set(input.thresholds ?? DEFAULT_THRESHOLDS)].sort().map((value) => value.toFixed(4)),
    balanceBelow: input.balance_below === undefined ? null : String(Math.round(input.balance_below * 1_000_000))
  }
}

/** Whether `endpointOf` refused the endpoint. */
export const isEndpointRefusal = (outcome: EndpointFields | EndpointRefusal): outcome is EndpointRefusal =>
  "_tag" in outcome

/**
 * A new Standard Webhooks secret: `whsec_` and 24 random bytes in base64
 * (from `crypto`, so unpredictable; not pure).
 *
 * @category secrets
 */
export const newSecret = (): string => {
  const bytes = crypto.getRandomValues(new Uint8Array(24))
  return `whsec_${btoa(String.fromCharCode(...bytes))}`
}
