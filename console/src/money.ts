/**
 * Money as the console shows it: quota units are micro-USD (1 unit =
 * 0.000001 USD), always written with their unit and every digit the ledger
 * holds, computed on integers so nothing is rounded.
 */

/** `units` quota units as USD text, e.g. `1234567` → `1.234567 USD`. */
export const usd = (units: number): string => {
  const sign = units < 0 ? "-" : ""
  const whole = BigInt(Math.trunc(Math.abs(units)))
  const dollars = whole / 1_000_000n
  const micros = (whole % 1_000_000n).toString().padStart(6, "0")
  return `${sign}${dollars}.${micros} USD`
}

/** A dollar amount typed by a person (`"5"`, `"0.25"`) as quota units, or `undefined` when it is not one. */
export const unitsOf = (text: string): number | undefined => {
  const match = /^\s*(\d{1,9})(?:\.(\d{1,6}))?\s*$/.exec(text)
  if (match === null) return undefined
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? "").padEnd(6, "0"))
}
