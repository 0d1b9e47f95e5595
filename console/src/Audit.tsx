/**
 * The audit log, for root (`GET /api/audit`): who changed what, before and
 * after, newest first, in server pages. No password or upstream key is ever
 * in a row.
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { ErrorText, Pager, timeText } from "./ui.tsx"

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
  const [page, setPage] = useState(1)
  const [listing, setListing] = useState<Page<AuditRow> | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api<Page<AuditRow>>("GET", `/api/audit?page=${page}&page_size=20`).then(setListing, (c) => setError(wordsOf(c)))
  }, [page])
  const pages = listing === null ? 1 : Math.max(1, Math.ceil(listing.total / listing.page_size))
  return (
    <section>
      <h1>Audit log</h1>
      <ErrorText error={error} />
      <table>
        <caption>Changes ({listing?.total ?? 0}), newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Who</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
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
      <Pager label="Audit pages" page={page} pages={pages} setPage={setPage} />
    </section>
  )
}
