/**
 * The audit log, for root (`GET /api/audit`): who changed what, before and
 * after, newest first, in server pages, filtered on the server by action (or
 * its prefix), actor, target and a range of UTC dates, the view kept in the
 * hash's query. No
 * password or upstream key is ever in a row.
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { apiQuery, dayRange, useHashView } from "./hashQuery.ts"
import { AUDIT, LIST } from "./strings.ts"
import { ErrorText, Field, Pager, TableScroll, timeText } from "./ui.tsx"

/** One audit row. */
interface AuditRow {
  readonly id: number
  readonly actor: string
  readonly action: string
  readonly target: string
  readonly before: unknown
  readonly after: unknown
  readonly created_at: number
}

/** A value as at most 300 characters of JSON. */
const shown = (value: unknown): string => {
  const text = value === null || value === undefined ? "" : JSON.stringify(value)
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

/** The audit page. */
export const Audit = () => {
  const [view, change] = useHashView({
    action: "",
    actor: "",
    target: "",
    from: "",
    to: "",
    order: "desc",
    page: "1"
  })
  const [draft, setDraft] = useState(view)
  const [listing, setListing] = useState<Page<AuditRow> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const { from, to, ...rest } = view
  const query = apiQuery({ ...rest, ...dayRange(from, to) })
  useEffect(() => {
    api<Page<AuditRow>>("GET", `/api/audit?${query}&page_size=20`).then((found) => {
      setError(null)
      setListing(found)
    }, (c) => setError(wordsOf(c)))
  }, [query])
  const pages = listing === null ? 1 : Math.max(1, Math.ceil(listing.total / listing.page_size))
  const text = (name: "action" | "actor" | "target", label: string) => (
    <Field label={label}>
      <input name={name} value={draft[name]} onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })} />
    </Field>
  )
  const date = (name: "from" | "to", label: string) => (
    <Field label={label}>
      <input
        name={name}
        type="date"
        value={draft[name]}
        onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })}
      />
    </Field>
  )
  return (
    <section>
      <h1>{AUDIT.title}</h1>
      <form
        class="filters"
        aria-label={AUDIT.filters}
        onSubmit={(event) => {
          event.preventDefault()
          const { action, actor, target, from, to, order } = draft
          change({ action, actor, target, from, to, order })
        }}
      >
        {text("action", AUDIT.action)}
        {text("actor", AUDIT.actor)}
        {text("target", AUDIT.target)}
        {date("from", AUDIT.from)}
        {date("to", AUDIT.to)}
        <Field label={AUDIT.order}>
          <select
            name="order"
            value={draft.order}
            onChange={(e) => setDraft({ ...draft, order: e.currentTarget.value })}
          >
            <option value="desc">{AUDIT.newest}</option>
            <option value="asc">{AUDIT.oldest}</option>
          </select>
        </Field>
        <button type="submit">{LIST.search}</button>
      </form>
      <ErrorText error={error} />
      <TableScroll label={AUDIT.caption(listing?.total ?? 0, view.order === "asc")}>
        <table>
          <caption>{AUDIT.caption(listing?.total ?? 0, view.order === "asc")}</caption>
          <thead>
            <tr>
              <th scope="col">{AUDIT.columns.time}</th>
              <th scope="col">{AUDIT.columns.who}</th>
              <th scope="col">{AUDIT.columns.action}</th>
              <th scope="col">{AUDIT.columns.target}</th>
              <th scope="col">{AUDIT.columns.before}</th>
              <th scope="col">{AUDIT.columns.after}</th>
            </tr>
          </thead>
          <tbody>
            {listing?.items.map((row) => (
              <tr key={row.id}>
                <td>{timeText(row.created_at)}</td>
                <td>{row.actor}</td>
                <td data-testid="audit-action">{row.action}</td>
                <td>{row.target}</td>
                <td>
                  <code class="json">{shown(row.before)}</code>
                </td>
                <td>
                  <code class="json">{shown(row.after)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <Pager
        label={AUDIT.pages}
        page={Number(view.page) || 1}
        pages={pages}
        setPage={(page) => change({ page: String(page) })}
      />
    </section>
  )
}
