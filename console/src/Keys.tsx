/**
 * API keys (`/api/token/`): the caller's keys, masked; create one (name,
 * quota in USD, expiry, model allow-list, address allow-list, rate limits)
 * and see its full key once with a copy button; change any of these or
 * disable; revoke after a confirmation. Budgets (USD per day, week, month or
 * in total, each with its time zone) are set when creating or editing a key
 * and listed with this period's spend and reset. The page never stores a key. The
 * playground's internal token lists here too, with no key text: it is used
 * only through the browser session. The list is paged, searched (name, or
 * the start of the key's listed prefix), filtered (status, group, model) and
 * sorted on the server, its view kept in the hash's query; selected keys are
 * enabled, disabled or revoked at once (`POST /api/token/bulk`).
 */
import { useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { apiQuery, useHashView } from "./hashQuery.ts"
import {
  BulkBar,
  ChoiceField,
  FilterForm,
  SelectPage,
  SortHeader,
  statusChoices,
  useBulk,
  useSelection,
  useServerPage
} from "./listControls.tsx"
import { unitsOf, usd } from "./money.ts"
import { BudgetFields, budgetsOf, type BudgetTexts, budgetTextsOf } from "./Budgets.tsx"
import { KEYS } from "./strings.ts"
import { ErrorText, Field, Pager, timeText } from "./ui.tsx"

/** A key as the listing shows it (`key` is its first characters). */
interface Key {
  readonly id: number
  readonly name: string
  readonly key: string
  readonly status: "enabled" | "disabled"
  readonly remain_quota: number | null
  readonly used_quota: number
  readonly models: ReadonlyArray<string> | null
  readonly allow_ips: ReadonlyArray<string> | null
  readonly expires_at: number | null
  readonly limits: Limits | null
  readonly kind?: "api" | "playground"
  /** Spend budgets with this period's spend (USD) and reset (epoch seconds; `null` for `total`). */
  readonly budgets?: ReadonlyArray<Budget> | null
}

/** A key's budget as listed. */
interface Budget {
  readonly amount: number
  readonly period: string
  readonly timezone?: string
  readonly spent: number
  readonly resets_at: number | null
}

/** "$0.40 of $5 per day, resets 2026-11-28 00:00:00 UTC" for each budget, or "none". */
const budgetsText = (budgets: ReadonlyArray<Budget> | null | undefined): string =>
  budgets === null || budgets === undefined || budgets.length === 0
    ? KEYS.none
    : budgets.map((budget) =>
      KEYS.budget(budget.spent.toFixed(2), budget.amount, budget.period) +
      (budget.resets_at === null ? "" : KEYS.resets(timeText(budget.resets_at)))
    ).join("; ")

/** A key's rate limits (absent: none). */
interface Limits {
  readonly rpm?: number
  readonly tpm?: number
  readonly concurrency?: number
}

/** The three limit inputs' texts. */
type LimitTexts = { readonly rpm: string; readonly tpm: string; readonly concurrency: string }

const NO_LIMITS: LimitTexts = { rpm: "", tpm: "", concurrency: "" }

const textsOf = (limits: Limits | null): LimitTexts => ({
  rpm: limits?.rpm === undefined ? "" : String(limits.rpm),
  tpm: limits?.tpm === undefined ? "" : String(limits.tpm),
  concurrency: limits?.concurrency === undefined ? "" : String(limits.concurrency)
})

/** The limits typed, `null` for none, or the words of the first bad one. */
const limitsOf = (texts: LimitTexts): Limits | null | string => {
  const limits: Record<string, number> = {}
  for (const name of ["rpm", "tpm", "concurrency"] as const) {
    const text = texts[name].trim()
    if (text === "") continue
    if (!/^\d{1,9}$/.test(text)) return KEYS.limitWhole(KEYS.limitLabels[name])
    limits[name] = Number(text)
  }
  return Object.keys(limits).length === 0 ? null : limits
}

/** The rate limit inputs, labelled with `prefix` ("" on the create form). */
const LimitFields = (props: { prefix: string; value: LimitTexts; onInput: (value: LimitTexts) => void }) => (
  <>
    {(["rpm", "tpm", "concurrency"] as const).map((name) => (
      <Field key={name} label={KEYS.limitField(props.prefix, KEYS.limitLabels[name])}>
        <input
          name={name}
          inputMode="numeric"
          value={props.value[name]}
          onInput={(e) =>
            props.onInput({ ...props.value, [name]: e.currentTarget.value })}
        />
      </Field>
    ))}
  </>
)

/** Limits as words for the list. */
const limitsText = (limits: Limits | null): string => {
  if (limits === null) return KEYS.none
  const parts: Array<string> = []
  if (limits.rpm !== undefined) parts.push(KEYS.perMinute(limits.rpm))
  if (limits.tpm !== undefined) parts.push(KEYS.tokensPerMinute(limits.tpm))
  if (limits.concurrency !== undefined) parts.push(KEYS.atOnce(limits.concurrency))
  return parts.join(", ")
}

/** A UTC date input's value as epoch seconds at the end of that day, `null` when empty. */
const expiryOf = (date: string): number | null =>
  date === "" ? null : Math.floor(Date.parse(`${date}T23:59:59Z`) / 1000)

/** Epoch seconds as a UTC date input's value. */
const dateOf = (seconds: number | null): string =>
  seconds === null ? "" : new Date(seconds * 1000).toISOString().slice(0, 10)

/** A comma-separated list as an array, or `null` when empty. */
const listOf = (text: string): Array<string> | null => {
  const items = text.split(",").map((item) => item.trim()).filter((item) => item !== "")
  return items.length === 0 ? null : items
}

/** The create form; answers the created key's full text once. */
const CreateKey = (props: { onCreated: (key: string) => void }) => {
  const [name, setName] = useState("")
  const [quota, setQuota] = useState("")
  const [expires, setExpires] = useState("")
  const [models, setModels] = useState("")
  const [ips, setIps] = useState("")
  const [limits, setLimits] = useState<LimitTexts>(NO_LIMITS)
  const [budgets, setBudgets] = useState<BudgetTexts>(budgetTextsOf(null))
  const [error, setError] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const units = quota.trim() === "" ? null : unitsOf(quota)
    if (units === undefined) return setError(KEYS.quotaUsd)
    const typedLimits = limitsOf(limits)
    if (typeof typedLimits === "string") return setError(typedLimits)
    const typedBudgets = budgetsOf(budgets)
    if (typeof typedBudgets === "string") return setError(typedBudgets)
    const body = {
      name,
      remain_quota: units,
      expires_at: expiryOf(expires),
      models: listOf(models),
      allow_ips: listOf(ips),
      limits: typedLimits,
      budgets: typedBudgets
    }
    try {
      const created = await api<{ key: string }>("POST", "/api/token/", body)
      setName("")
      setQuota("")
      setExpires("")
      setModels("")
      setIps("")
      setLimits(NO_LIMITS)
      setBudgets(budgetTextsOf(null))
      props.onCreated(created.key)
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form class="panel" onSubmit={submit} aria-label={KEYS.create}>
      <h2>{KEYS.create}</h2>
      <Field label={KEYS.name}>
        <input name="name" required maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label={KEYS.quota}>
        <input name="quota" inputMode="decimal" value={quota} onInput={(e) => setQuota(e.currentTarget.value)} />
      </Field>
      <Field label={KEYS.expires}>
        <input name="expires" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
      </Field>
      <Field label={KEYS.models}>
        <input name="models" value={models} onInput={(e) => setModels(e.currentTarget.value)} />
      </Field>
      <Field label={KEYS.ips}>
        <input name="allow_ips" value={ips} onInput={(e) => setIps(e.currentTarget.value)} />
      </Field>
      <LimitFields prefix="" value={limits} onInput={setLimits} />
      <BudgetFields owner={KEYS.beingCreated} value={budgets} onInput={setBudgets} />
      <ErrorText error={error} />
      <button type="submit">{KEYS.createButton}</button>
    </form>
  )
}

/** The full key, shown once, with a copy button. */
const NewKey = (props: { value: string; onDone: () => void }) => {
  const [copied, setCopied] = useState<string | null>(null)
  const copy = () =>
    navigator.clipboard.writeText(props.value).then(
      () => setCopied(KEYS.copied),
      () => setCopied(KEYS.copyRefused)
    )
  return (
    <div class="panel notice" role="status">
      <h2>{KEYS.newTitle}</h2>
      <p>{KEYS.onlyOnce}</p>
      <Field label={KEYS.newKey}>
        <input readOnly name="new_key" value={props.value} onFocus={(e) => e.currentTarget.select()} />
      </Field>
      <button type="button" onClick={copy}>{KEYS.copy}</button>{" "}
      <button type="button" onClick={props.onDone}>{KEYS.done}</button>
      {copied && <p>{copied}</p>}
    </div>
  )
}

/** One key's row, with its selection box, edit and revoke. */
const KeyRow = (
  props: { item: Key; selected: boolean; onSelect: (on: boolean) => void; onChanged: () => void }
) => {
  const { item } = props
  const [editing, setEditing] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const [name, setName] = useState(item.name)
  const [quota, setQuota] = useState(item.remain_quota === null ? "" : usd(item.remain_quota).replace(" USD", ""))
  const [expires, setExpires] = useState(dateOf(item.expires_at))
  const [models, setModels] = useState(item.models?.join(", ") ?? "")
  const [limits, setLimits] = useState<LimitTexts>(textsOf(item.limits))
  const [budgets, setBudgets] = useState<BudgetTexts>(budgetTextsOf(item.budgets))
  const [error, setError] = useState<string | null>(null)
  const run = async (method: string, path: string, body?: unknown) => {
    setError(null)
    try {
      await api(method, path, body)
      setEditing(false)
      setConfirming(false)
      props.onChanged()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  const save = (event: Event) => {
    event.preventDefault()
    const units = quota.trim() === "" ? null : unitsOf(quota)
    if (units === undefined) return setError(KEYS.quotaUsd)
    const typedLimits = limitsOf(limits)
    if (typeof typedLimits === "string") return setError(typedLimits)
    const typedBudgets = budgetsOf(budgets)
    if (typeof typedBudgets === "string") return setError(typedBudgets)
    return run("PUT", "/api/token/", {
      id: item.id,
      name,
      remain_quota: units,
      expires_at: expiryOf(expires),
      models: listOf(models),
      limits: typedLimits,
      budgets: typedBudgets
    })
  }
  return (
    <tr>
      <td>
        <input
          type="checkbox"
          aria-label={KEYS.select(item.name)}
          checked={props.selected}
          onChange={(e) => props.onSelect(e.currentTarget.checked)}
        />
      </td>
      <td>{item.name}</td>
      <td>
        {item.kind === "playground" ? KEYS.playground : <code>{item.key}</code>}
      </td>
      <td data-testid="key-status">{item.status}</td>
      <td>{item.remain_quota === null ? KEYS.noLimit : usd(item.remain_quota)}</td>
      <td>{usd(item.used_quota)}</td>
      <td>{item.models === null ? KEYS.all : item.models.join(", ")}</td>
      <td>{timeText(item.expires_at)}</td>
      <td data-testid="key-limits">{limitsText(item.limits)}</td>
      <td data-testid="key-budgets">{budgetsText(item.budgets)}</td>
      <td>
        {editing
          ? (
            <form onSubmit={save} aria-label={KEYS.edit(item.name)}>
              <Field label={KEYS.name}>
                <input value={name} required onInput={(e) => setName(e.currentTarget.value)} />
              </Field>
              <Field label={KEYS.editQuota}>
                <input value={quota} inputMode="decimal" onInput={(e) => setQuota(e.currentTarget.value)} />
              </Field>
              <Field label={KEYS.editExpires}>
                <input type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
              </Field>
              <Field label={KEYS.editModels}>
                <input value={models} onInput={(e) => setModels(e.currentTarget.value)} />
              </Field>
              <LimitFields prefix={`${item.name}: `} value={limits} onInput={setLimits} />
              <BudgetFields owner={item.name} value={budgets} onInput={setBudgets} />
              <button type="submit">{KEYS.save}</button>{" "}
              <button type="button" onClick={() => setEditing(false)}>{KEYS.cancel}</button>
            </form>
          )
          : confirming
          ? (
            <span role="group" aria-label={KEYS.confirmRevoke(item.name)}>
              {KEYS.revokeQuestion(item.name)}{" "}
              <button type="button" class="danger" onClick={() => run("DELETE", `/api/token/${item.id}`)}>
                {KEYS.revoke}
              </button>{" "}
              <button type="button" onClick={() => setConfirming(false)}>{KEYS.keep}</button>
            </span>
          )
          : (
            <span>
              <button type="button" aria-label={KEYS.named(KEYS.editShort, item.name)} onClick={() => setEditing(true)}>
                {KEYS.editShort}
              </button>{" "}
              <button
                type="button"
                aria-label={KEYS.named(item.status === "enabled" ? KEYS.disable : KEYS.enable, item.name)}
                onClick={() =>
                  run("PUT", "/api/token/", {
                    id: item.id,
                    status: item.status === "enabled" ? "disabled" : "enabled"
                  })}
              >
                {item.status === "enabled" ? KEYS.disable : KEYS.enable}
              </button>{" "}
              <button type="button" aria-label={KEYS.named(KEYS.revoke, item.name)} onClick={() => setConfirming(true)}>
                {KEYS.revoke}
              </button>
            </span>
          )}
        <ErrorText error={error} />
      </td>
    </tr>
  )
}

/** The list's view, as the hash's query and the API's parameters hold it. */
const VIEW = { keyword: "", status: "", group: "", model: "", sort: "id", order: "desc", page: "1" }

/** The view's fields the filter form sets. */
const KEY_FILTERS = ["keyword", "status", "group", "model"] as const

/** The filter form: its own drafts, applied on submit. */
const KeyFilters = (props: { view: typeof VIEW; onApply: (change: Partial<typeof VIEW>) => void }) => (
  <FilterForm label={KEYS.filters} view={props.view} fields={KEY_FILTERS} onApply={props.onApply}>
    {(draft, set) => (
      <>
        <Field label={KEYS.keyword}>
          <input name="keyword" value={draft.keyword} onInput={set("keyword")} />
        </Field>
        <ChoiceField
          label={KEYS.status}
          name="status"
          value={draft.status}
          onChange={set("status")}
          options={statusChoices()}
        />
        <Field label={KEYS.group}>
          <input name="group" value={draft.group} onInput={set("group")} />
        </Field>
        <Field label={KEYS.model}>
          <input name="model" value={draft.model} onInput={set("model")} />
        </Field>
      </>
    )}
  </FilterForm>
)

/** The API keys page. */
export const Keys = () => {
  const [view, change] = useHashView(VIEW)
  const [fresh, setFresh] = useState<string | null>(null)
  const selection = useSelection()
  const list = useServerPage<Key>("/api/token/", apiQuery(view))
  const { listing, items, pages, error, load } = list
  const bulk = useBulk({
    path: "/api/token/bulk",
    selection,
    words: KEYS.bulkDone,
    onError: list.setError,
    reload: load
  })
  const sortable = (label: string, column: string) => (
    <SortHeader
      label={label}
      column={column}
      sort={view.sort}
      order={view.order}
      onSort={(sort, order) => change({ sort, order })}
    />
  )
  return (
    <section>
      <h1>{KEYS.title}</h1>
      {fresh !== null && <NewKey value={fresh} onDone={() => setFresh(null)} />}
      <CreateKey
        onCreated={(key) => {
          setFresh(key)
          load()
        }}
      />
      <KeyFilters view={view} onApply={change} />
      <ErrorText error={error} />
      <BulkBar
        label={KEYS.bulk}
        count={selection.selected.size}
        deleteQuestion={KEYS.deleteQuestion(selection.selected.size)}
        result={bulk.result}
        onAction={bulk.run}
      />
      <div class="scroll">
        <table>
          <caption>{KEYS.caption(listing?.total ?? 0)}</caption>
          <thead>
            <tr>
              <SelectPage
                label={KEYS.selectPage}
                ids={items.map((item) => item.id)}
                selected={selection.selected}
                onPage={selection.page}
              />
              {sortable(KEYS.columns.name, "name")}
              <th scope="col">{KEYS.columns.key}</th>
              {sortable(KEYS.columns.status, "status")}
              {sortable(KEYS.columns.quota, "remain_quota")}
              {sortable(KEYS.columns.used, "used_quota")}
              <th scope="col">{KEYS.columns.models}</th>
              {sortable(KEYS.columns.expires, "expires_at")}
              <th scope="col">{KEYS.columns.limits}</th>
              <th scope="col">{KEYS.columns.budgets}</th>
              <th scope="col">{KEYS.columns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <KeyRow
                key={`${item.id}-${item.name}-${item.status}-${JSON.stringify(item.limits)}-${
                  JSON.stringify(item.budgets?.map((budget) => [budget.amount, budget.period, budget.timezone]))
                }`}
                item={item}
                selected={selection.selected.has(item.id)}
                onSelect={(on) => selection.toggle(item.id, on)}
                onChanged={load}
              />
            ))}
          </tbody>
        </table>
      </div>
      <Pager
        label={KEYS.pages}
        page={Number(view.page) || 1}
        pages={pages}
        setPage={(page) => change({ page: String(page) })}
      />
    </section>
  )
}
