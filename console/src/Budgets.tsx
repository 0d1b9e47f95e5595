/**
 * The budgets editor shared by a key's form (its owner) and a user's form
 * (admins): one row per period (day, week, month, total), each an amount in
 * USD (empty: no budget for that period) and an optional IANA time zone the
 * period rolls over in (empty: UTC). What it sends is the API's `budgets`
 * field: `[{amount, period, timezone?}]`, or `null` for none; the server
 * checks the time zone and the amounts again and names the field it refuses.
 */
import { BUDGETS } from "./strings.ts"
import { Field } from "./ui.tsx"

/** The periods a budget may have, in the order the editor shows them. */
const PERIODS = ["day", "week", "month", "total"] as const

/** A budget as the API writes it (a listing adds the spend; it is ignored here). */
export interface BudgetSpec {
  readonly amount: number
  readonly period: string
  readonly timezone?: string
}

/** The editor's texts: per period, the amount and the time zone typed. */
export type BudgetTexts = Readonly<Record<string, { readonly amount: string; readonly timezone: string }>>

/** The texts of a listed budget list (`null`: none). */
export const budgetTextsOf = (budgets: ReadonlyArray<BudgetSpec> | null | undefined): BudgetTexts =>
  Object.fromEntries(PERIODS.map((period) => {
    const budget = budgets?.find((entry) => entry.period === period)
    return [period, {
      amount: budget === undefined ? "" : String(budget.amount),
      timezone: budget?.timezone === undefined || budget.timezone === "UTC" ? "" : budget.timezone
    }]
  }))

/** The budgets typed as the API's field (`null` when none), or the words of the first bad amount. */
export const budgetsOf = (texts: BudgetTexts): Array<BudgetSpec> | null | string => {
  const out: Array<BudgetSpec> = []
  for (const period of PERIODS) {
    const typed = texts[period] ?? { amount: "", timezone: "" }
    const amount = typed.amount.trim()
    if (amount === "") continue
    if (!/^\d{1,12}(\.\d{1,6})?$/.test(amount)) {
      return BUDGETS.amount(period)
    }
    const timezone = typed.timezone.trim()
    out.push({ amount: Number(amount), period, ...(timezone === "" ? {} : { timezone }) })
  }
  return out.length === 0 ? null : out
}

/** The editor: labelled with `owner` (a key's or a user's name) so each input is named on its own. */
export const BudgetFields = (props: { owner: string; value: BudgetTexts; onInput: (value: BudgetTexts) => void }) => (
  <fieldset class="budgets">
    <legend>{BUDGETS.legend(props.owner)}</legend>
    {PERIODS.map((period) => {
      const typed = props.value[period] ?? { amount: "", timezone: "" }
      const set = (field: "amount" | "timezone", text: string) =>
        props.onInput({ ...props.value, [period]: { ...typed, [field]: text } })
      return (
        <div class="budget-row" key={period}>
          <Field label={BUDGETS.field(props.owner, period)}>
            <input
              name={`budget_${period}`}
              inputMode="decimal"
              value={typed.amount}
              onInput={(e) => set("amount", e.currentTarget.value)}
            />
          </Field>
          {period !== "total" && (
            <Field label={BUDGETS.timezone(props.owner, period)}>
              <input
                name={`budget_${period}_timezone`}
                value={typed.timezone}
                placeholder="UTC"
                onInput={(e) => set("timezone", e.currentTarget.value)}
              />
            </Field>
          )}
        </div>
      )
    })}
  </fieldset>
)
