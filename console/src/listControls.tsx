/**
 * Controls of a server-sorted list: a column header that sorts by its column
 * (a button, so the keyboard reaches it; `aria-sort` says the current order).
 */
import { LIST } from "./strings.ts"

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
