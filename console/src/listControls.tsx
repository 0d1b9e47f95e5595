/**
 * Controls of a server-sorted list: a column header that sorts by its column
 * (a button, so the keyboard reaches it; `aria-sort` says the current order),
 * the selection of a page's rows, and the bulk bar that enables, disables or
 * (after a confirmation) deletes the selected rows; the hooks that read a
 * server page and run a bulk action on the selection; the filter form the
 * lists share.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { LIST } from "./strings.ts"
import { Field } from "./ui.tsx"

/** An input's change handler that writes its value under `name` of the filter form's draft. */
export type DraftSetter<K extends string> = (name: K) => (event: { currentTarget: { value: string } }) => void

/**
 * A list's filter form (named `label`): it drafts the view's `fields`, applies them on submit, and Clear empties and
 * applies them. `children` renders the fields from the draft and its setter.
 */
export function FilterForm<K extends string>(props: {
  readonly label: string
  readonly view: Readonly<Record<K, string>>
  readonly fields: ReadonlyArray<K>
  readonly onApply: (change: Readonly<Record<K, string>>) => void
  readonly children: (draft: Readonly<Record<K, string>>, set: DraftSetter<K>) => ComponentChildren
}) {
  const valued = (value: (field: K) => string) =>
    Object.fromEntries(props.fields.map((field) => [field, value(field)])) as Record<K, string>
  const [draft, setDraft] = useState(() => valued((field) => props.view[field]))
  const set: DraftSetter<K> = (name) => (event) => setDraft({ ...draft, [name]: event.currentTarget.value })
  return (
    <form
      class="filters"
      aria-label={props.label}
      onSubmit={(event) => {
        event.preventDefault()
        props.onApply(draft)
      }}
    >
      {props.children(draft, set)}
      <button type="submit">{LIST.search}</button>
      <button
        type="button"
        onClick={() => {
          const cleared = valued(() => "")
          setDraft(cleared)
          props.onApply(cleared)
        }}
      >
        {LIST.clear}
      </button>
    </form>
  )
}

/** A `<select>` filter named `name`: any (`""`) first, then `options` as `[value, words]`. */
export const ChoiceField = (props: {
  readonly label: string
  readonly name: string
  readonly value: string
  readonly onChange: (event: { currentTarget: { value: string } }) => void
  readonly options: ReadonlyArray<readonly [string, string]>
}) => (
  <Field label={props.label}>
    <select name={props.name} value={props.value} onChange={props.onChange}>
      <option value="">{LIST.any}</option>
      {props.options.map(([value, words]) => <option key={value} value={value}>{words}</option>)}
    </select>
  </Field>
)

/** A status filter's choices, in the page's language. */
export const statusChoices = (): ReadonlyArray<readonly [string, string]> => [
  ["enabled", LIST.enabled],
  ["disabled", LIST.disabled]
]

/** Rows per page of the lists read with `useServerPage`. */
const PAGE_SIZE = 20

/**
 * One page of a server-paged list: `GET <path>?<query>&page_size=20`, read again when `query` changes (an answer to
 * an older query is dropped). `listing` is `null` before the first answer; `pages` at least 1; `load` reads again.
 */
export function useServerPage<T>(path: string, query: string) {
  const [listing, setListing] = useState<Page<T> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [reads, setReads] = useState(0)
  useEffect(() => {
    let live = true
    api<Page<T>>("GET", `${path}?${query}&page_size=${PAGE_SIZE}`).then((page) => {
      if (!live) return
      setError(null)
      setListing(page)
    }, (caught) => live && setError(wordsOf(caught)))
    return () => {
      live = false
    }
  }, [path, query, reads])
  return {
    listing,
    items: listing?.items ?? [],
    pages: listing === null ? 1 : Math.max(1, Math.ceil(listing.total / listing.page_size)),
    error,
    setError,
    load: () => setReads((count) => count + 1)
  }
}

/**
 * A bulk action on the selected rows: `POST <path>` `{ids, action}`, answered one result per id; `result` words
 * how many were done and how many failed (`words`), failures of the call go to `onError`. The selection is
 * cleared after (a changed row may leave the filtered page, and a selection nobody sees must not act again), then
 * `reload` reads the list again.
 */
export const useBulk = (options: {
  readonly path: string
  readonly selection: ReturnType<typeof useSelection>
  readonly words: (done: number, failed: number) => string
  readonly onError: (words: string | null) => void
  readonly reload: () => void
}) => {
  const [result, setResult] = useState<string | null>(null)
  const run = async (action: BulkAction) => {
    setResult(null)
    options.onError(null)
    try {
      const results = await api<ReadonlyArray<{ success: boolean }>>("POST", options.path, {
        ids: [...options.selection.selected],
        action
      })
      const failed = results.filter((entry) => !entry.success).length
      setResult(options.words(results.length - failed, failed))
      options.selection.clear()
    } catch (caught) {
      options.onError(wordsOf(caught))
    }
    options.reload()
  }
  return { result, run }
}

/** A sortable `<th>`: clicking sorts by `column` ascending, again descending. */
export const SortHeader = (props: {
  label: string
  column: string
  sort: string
  order: string
  onSort: (column: string, order: "asc" | "desc") => void
}) => {
  const active = props.sort === props.column
  const state = !active ? "none" : props.order === "desc" ? "descending" : "ascending"
  return (
    <th scope="col" aria-sort={state}>
      <button
        type="button"
        class="sort"
        aria-label={LIST.sortBy(props.label, state)}
        onClick={() => props.onSort(props.column, active && props.order === "asc" ? "desc" : "asc")}
      >
        {props.label}
        <span aria-hidden="true">{state === "ascending" ? " ▲" : state === "descending" ? " ▼" : ""}</span>
      </button>
    </th>
  )
}

/** The ids of `rows` selected, and a setter: `toggle(id, on)`, `page(ids, on)` and `clear()`. */
export const useSelection = () => {
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set())
  const toggle = (id: number, on: boolean) => {
    const next = new Set(selected)
    if (on) next.add(id)
    else next.delete(id)
    setSelected(next)
  }
  const page = (ids: ReadonlyArray<number>, on: boolean) => {
    const next = new Set(selected)
    for (const id of ids) on ? next.add(id) : next.delete(id)
    setSelected(next)
  }
  return { selected, toggle, page, clear: () => setSelected(new Set()) }
}

/** The `<th>` checkbox that selects or clears every row of the page (`ids`). */
export const SelectPage = (props: {
  label: string
  ids: ReadonlyArray<number>
  selected: ReadonlySet<number>
  onPage: (ids: ReadonlyArray<number>, on: boolean) => void
}) => (
  <th scope="col">
    <input
      type="checkbox"
      aria-label={props.label}
      checked={props.ids.length > 0 && props.ids.every((id) => props.selected.has(id))}
      onChange={(e) => props.onPage(props.ids, e.currentTarget.checked)}
    />
  </th>
)

/** A bulk action the lists' bulk routes take (`POST /api/token/bulk`, `POST /api/webhook/bulk`). */
export type BulkAction = "enable" | "disable" | "delete"

/**
 * The bar of the selected rows (labelled `label`): how many, enable, disable, and delete after a confirmation
 * (`deleteQuestion`); `result` is the last action's outcome in words.
 */
export const BulkBar = (props: {
  label: string
  count: number
  deleteQuestion: string
  result: string | null
  onAction: (action: BulkAction) => void
}) => {
  const [confirming, setConfirming] = useState(false)
  const none = props.count === 0
  return (
    <div class="bulk" role="group" aria-label={props.label}>
      <span>{LIST.selected(props.count)}</span>
      <button type="button" disabled={none} onClick={() => props.onAction("enable")}>{LIST.enableSelected}</button>
      <button type="button" disabled={none} onClick={() => props.onAction("disable")}>{LIST.disableSelected}</button>
      {confirming
        ? (
          <span>
            {props.deleteQuestion}{" "}
            <button
              type="button"
              class="danger"
              onClick={() => {
                setConfirming(false)
                props.onAction("delete")
              }}
            >
              {LIST.deleteConfirm}
            </button>{" "}
            <button type="button" onClick={() => setConfirming(false)}>{LIST.keep}</button>
          </span>
        )
        : (
          <button type="button" disabled={none} onClick={() => setConfirming(true)}>
            {LIST.deleteSelected}
          </button>
        )}
      {props.result && <span role="status">{props.result}</span>}
    </div>
  )
}
