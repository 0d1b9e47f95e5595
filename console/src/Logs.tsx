/**
 * Usage logs: the caller's own (`GET /api/log/self`), or, for admins, every
 * user's (`GET /api/log/`, with the user and the channel's name and filters
 * for both), each row with the name of the channel that answered (never its
 * keys). Filters for a UTC time range, model and key name, pages served
 * by the server, and a CSV export of every row the filters match (fetched
 * page by page, at most 10,000 rows). A row's "Details" opens the request's
 * story (`RequestStory.tsx`): its attempts, failover path and cost.
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { RequestStory } from "./RequestStory.tsx"
import { SortHeader } from "./listControls.tsx"
import { COMMON, LIST, LOGS, STORY } from "./strings.ts"
import { ErrorText, Field, Pager, TableScroll, timeText } from "./ui.tsx"

/** One usage row. */
interface LogRow {
  readonly id: number
  readonly request_id: string
  readonly created_at: number
  readonly username?: string | null
  readonly channel_id?: number | null
  readonly channel_name: string | null
  readonly token_name: string | null
  readonly model: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
  readonly latency_ms: number
  readonly stream: boolean
  readonly status: number
  readonly error: string | null
}

interface Filters {
  readonly start: string
  readonly end: string
  readonly model: string
  readonly key: string
  readonly username: string
  readonly channel: string
  /** `success`, `failed` or `""` (every row). */
  readonly status: string
  /** `LOG_SORTS` on the server; `id` is the time. */
  readonly sort: string
  readonly order: string
}

const EMPTY: Filters = {
  start: "",
  end: "",
  model: "",
  key: "",
  username: "",
  channel: "",
  status: "",
  sort: "id",
  order: "desc"
}

/** The query string of `filters` (dates as UTC epoch seconds; the end date is included). */
const queryOf = (filters: Filters): string => {
  const query = new URLSearchParams()
  if (filters.start !== "") query.set("start_timestamp", String(Date.parse(`${filters.start}T00:00:00Z`) / 1000))
  if (filters.end !== "") query.set("end_timestamp", String(Date.parse(`${filters.end}T00:00:00Z`) / 1000 + 86_400))
  if (filters.model !== "") query.set("model_name", filters.model)
  if (filters.key !== "") query.set("token_name", filters.key)
  if (filters.username !== "") query.set("username", filters.username)
  if (filters.channel !== "") query.set("channel", filters.channel)
  if (filters.status !== "") query.set("status", filters.status)
  query.set("sort", filters.sort)
  query.set("order", filters.order)
  return query.toString()
}

/** A CSV cell: quoted, with quotes doubled and a leading formula character defused. */
const cell = (value: string | number | null): string => {
  const text = value === null ? "" : String(value)
  return `"${(/^[=+\-@]/.test(text) ? `'${text}` : text).replaceAll('"', '""')}"`
}

const CSV_HEAD = [
  "time_utc",
  "user",
  "channel",
  "key",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cost_usd",
  "latency_ms",
  "status"
]

/** Every row matching `query` as CSV text. */
const csvOf = async (path: string, query: string): Promise<string> => {
  const lines = [CSV_HEAD.join(",")]
  for (let page = 1; page <= 100; page++) {
    const listing = await api<Page<LogRow>>("GET", `${path}?${query}&page=${page}&page_size=100`)
    for (const row of listing.items) {
      lines.push(
        [
          timeText(row.created_at),
          row.username ?? "",
          channelName(row),
          row.token_name,
          row.model,
          row.prompt_tokens,
          row.completion_tokens,
          usd(row.quota).replace(" USD", ""),
          row.latency_ms,
          row.status
        ].map(cell).join(",")
      )
    }
    if (page * 100 >= listing.total) break
  }
  return lines.join("\r\n") + "\r\n"
}

/** A row's channel by name (never a channel key); a deleted channel by its id, for admins. */
const channelName = (row: LogRow): string =>
  row.channel_name ??
    (row.channel_id === undefined || row.channel_id === null ? "" : LOGS.deletedChannel(row.channel_id))

/** The usage logs page: the caller's own, or every user's when `admin`. */
export const Logs = (props: { admin?: boolean }) => {
  const admin = props.admin === true
  const path = admin ? "/api/log/" : "/api/log/self"
  const [channels, setChannels] = useState<ReadonlyMap<number, string>>(new Map())
  const [draft, setDraft] = useState<Filters>(EMPTY)
  const [filters, setFilters] = useState<Filters>(EMPTY)
  const [page, setPage] = useState(1)
  const [story, setStory] = useState<string | null>(null)
  const [listing, setListing] = useState<Page<LogRow> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [exporting, setExporting] = useState<string | null>(null)
  useEffect(() => {
    if (!admin) return
    api<ReadonlyArray<{ id: number; name: string }>>("GET", "/api/channel/").then(
      (list) => setChannels(new Map(list.map((channel) => [channel.id, channel.name]))),
      (caught) => setError(wordsOf(caught))
    )
  }, [admin])
  useEffect(() => {
    setError(null)
    api<Page<LogRow>>("GET", `${path}?${queryOf(filters)}&page=${page}&page_size=20`).then(
      setListing,
      (caught) => setError(wordsOf(caught))
    )
  }, [filters, page, path])
  const pages = listing === null ? 1 : Math.max(1, Math.ceil(listing.total / listing.page_size))
  const sortable = (label: string, column: string) => (
    <SortHeader
      label={label}
      column={column}
      sort={filters.sort}
      order={filters.order}
      onSort={(sort, order) => {
        setPage(1)
        setDraft({ ...draft, sort, order })
        setFilters({ ...filters, sort, order })
      }}
    />
  )
  const set = (name: keyof Filters) => (event: { currentTarget: HTMLInputElement | HTMLSelectElement }) =>
    setDraft({ ...draft, [name]: event.currentTarget.value })
  const exportCsv = async () => {
    setExporting(LOGS.exporting)
    try {
      const blob = new Blob([await csvOf(path, queryOf(filters))], { type: "text/csv" })
      const link = document.createElement("a")
      link.href = URL.createObjectURL(blob)
      link.download = "sluice-usage.csv"
      link.click()
      URL.revokeObjectURL(link.href)
      setExporting(null)
    } catch (caught) {
      setExporting(wordsOf(caught))
    }
  }
  return (
    <section>
      <h1>{admin ? LOGS.all : LOGS.own}</h1>
      <form
        class="filters"
        aria-label={LOGS.filters}
        onSubmit={(event) => {
          event.preventDefault()
          setPage(1)
          setFilters(draft)
        }}
      >
        <Field label={LOGS.from}>
          <input type="date" name="start" value={draft.start} onInput={set("start")} />
        </Field>
        <Field label={LOGS.to}>
          <input type="date" name="end" value={draft.end} onInput={set("end")} />
        </Field>
        <Field label={LOGS.model}>
          <input name="model" value={draft.model} onInput={set("model")} />
        </Field>
        <Field label={LOGS.key}>
          <input name="key" value={draft.key} onInput={set("key")} />
        </Field>
        {admin && (
          <>
            <Field label={LOGS.username}>
              <input name="username" value={draft.username} onInput={set("username")} />
            </Field>
            <Field label={LOGS.channel}>
              <select name="channel" value={draft.channel} onChange={set("channel")}>
                <option value="">{LOGS.everyChannel}</option>
                {[...channels].map(([id, name]) => <option key={id} value={String(id)}>{name}</option>)}
              </select>
            </Field>
          </>
        )}
        <Field label={LOGS.status}>
          <select name="status" value={draft.status} onChange={set("status")}>
            <option value="">{LIST.any}</option>
            <option value="success">{LOGS.success}</option>
            <option value="failed">{LOGS.failed}</option>
          </select>
        </Field>
        <button type="submit">{LOGS.filter}</button>
        <button type="button" onClick={exportCsv}>{LOGS.exportCsv}</button>
      </form>
      {exporting !== null && <p role="status">{exporting}</p>}
      <ErrorText error={error} />
      <TableScroll label={LOGS.caption(listing?.total ?? 0)}>
        <table>
          <caption>{LOGS.caption(listing?.total ?? 0)}</caption>
          <thead>
            <tr>
              {sortable(LOGS.columns.time, "id")}
              {admin && <th scope="col">{LOGS.columns.user}</th>}
              <th scope="col">{LOGS.columns.channel}</th>
              <th scope="col">{LOGS.columns.key}</th>
              <th scope="col">{LOGS.columns.model}</th>
              {sortable(LOGS.columns.tokens, "tokens")}
              {sortable(LOGS.columns.cost, "quota")}
              {sortable(LOGS.columns.latency, "latency")}
              <th scope="col">{LOGS.columns.status}</th>
              <th scope="col">{STORY.openShort}</th>
            </tr>
          </thead>
          <tbody>
            {listing?.items.map((row) => (
              <tr key={row.id}>
                <td>{timeText(row.created_at)}</td>
                {admin && <td>{row.username ?? ""}</td>}
                <td data-testid="log-channel">{channelName(row)}</td>
                <td>{row.token_name ?? COMMON.deleted}</td>
                <td>{row.model}</td>
                <td>{row.prompt_tokens} / {row.completion_tokens}</td>
                <td data-testid="log-cost">{usd(row.quota)}</td>
                <td>{row.latency_ms} ms</td>
                <td>{row.status}{row.error === null ? "" : ` ${row.error}`}</td>
                <td>
                  <button
                    type="button"
                    aria-label={STORY.open(row.request_id)}
                    onClick={() => setStory(row.request_id)}
                  >
                    {STORY.openShort}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <Pager label={LOGS.pages} page={page} pages={pages} setPage={setPage} />
      {story !== null && (
        <RequestStory
          key={story}
          requestId={story}
          admin={admin === true}
          onClose={() => setStory(null)}
        />
      )}
    </section>
  )
}
