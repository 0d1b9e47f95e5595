/// <reference lib="dom" />
/**
 * The Batches page: the user's batches of both kinds, newest first, paged on the server by cursor, each with its
 * status, counts, times, the cost the ledger charged (the usage log rows of its lines, `GET
 * /api/log/self?batch_id=…`), a download of its results and a cancel button while it runs.
 *
 * - OpenAI batches: `GET /v1/batches?after&limit`, results in the output and error files (`GET
 *   /v1/files/{id}/content`), `POST /v1/batches/{id}/cancel`.
 * - Anthropic Message Batches: `GET /v1/messages/batches?after_id&limit`, results at `GET
 *   /v1/messages/batches/{id}/results`, `POST /v1/messages/batches/{id}/cancel`.
 *
 * Every call goes with the browser session alone (no key; the routes take it as `SessionCaller.ts` says), so the
 * user sees every batch of theirs, whichever key made it, and no one else's.
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { BATCHES, COMMON } from "./strings.ts"
import { ErrorText, TableScroll, timeText } from "./ui.tsx"

/** The page's words, in the current language. */
const TEXT = BATCHES

/** Batches shown per page. */
const PAGE_LIMIT = 10

/** How often the list is read while a batch runs (ms). */
const POLL_MILLIS = 2000

/** The log rows read per call while summing a batch's cost (the API's largest page). */
const LOG_PAGE = 100

/** The message of a public route's error body (`{error: {message}}`), or the status. */
const errorWords = async (response: Response): Promise<string> => {
  try {
    const body = await response.json()
    const message = body?.error?.message ?? body?.message
    if (typeof message === "string" && message !== "") return message
  } catch {
    // Not JSON: the status says it.
  }
  return COMMON.answered(response.status)
}

/**
 * A JSON call to a public `/v1/*` route with the session alone (and the CSRF header on a change): the parsed
 * answer, or throws the route's words.
 */
export async function publicCall<A>(method: string, path: string): Promise<A> {
  const headers: Record<string, string> = { accept: "application/json" }
  if (method !== "GET") headers["x-sluice-csrf"] = "1"
  const response = await fetch(path, { method, credentials: "same-origin", headers })
  if (!response.ok) throw new Error(await errorWords(response))
  return (await response.json()) as A
}

/** One batch as the page shows it, of either kind. */
interface BatchRow {
  readonly id: string
  readonly kind: "openai" | "anthropic"
  readonly endpoint: string
  readonly status: string
  readonly counts: string
  /** Lines that answered: each has a usage row once the usage log has written it (the cost waits for them). */
  readonly succeeded: number
  readonly createdAt: number
  readonly endedAt: number | null
  /** Not ended yet (the list is read again while one is). */
  readonly running: boolean
  /** Running and not being cancelled: the Cancel button shows. */
  readonly cancellable: boolean
  /** What can be downloaded: which file (its label is `TEXT[file]` in the page's language) and where. */
  readonly downloads: ReadonlyArray<{ readonly file: "output" | "errors" | "results"; readonly href: string }>
}

/** OpenAI's Batch object, the fields shown. */
interface OpenAiBatch {
  readonly id: string
  readonly endpoint: string
  readonly status: string
  readonly output_file_id: string | null
  readonly error_file_id: string | null
  readonly request_counts: { readonly total: number; readonly completed: number; readonly failed: number }
  readonly created_at: number
  readonly completed_at: number | null
  readonly failed_at: number | null
  readonly expired_at: number | null
  readonly cancelled_at: number | null
}

/** Anthropic's MessageBatch object, the fields shown. */
interface MessageBatch {
  readonly id: string
  readonly processing_status: string
  readonly request_counts: {
    readonly processing: number
    readonly succeeded: number
    readonly errored: number
    readonly canceled: number
    readonly expired: number
  }
  readonly created_at: string
  readonly ended_at: string | null
}

/** A list answer of either kind, reduced to what the pager needs. */
interface Listed {
  readonly rows: ReadonlyArray<BatchRow>
  readonly hasMore: boolean
  readonly lastId: string | null
}

const fileHref = (id: string) => `/v1/files/${encodeURIComponent(id)}/content`
const seconds = (iso: string | null) => iso === null ? null : Math.floor(Date.parse(iso) / 1000)
const OPENAI_RUNNING = new Set(["validating", "in_progress", "finalizing", "cancelling"])

const openAiRow = (batch: OpenAiBatch): BatchRow => ({
  id: batch.id,
  kind: "openai",
  endpoint: batch.endpoint,
  status: batch.status,
  counts: TEXT.openAiCounts(batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed),
  succeeded: batch.request_counts.completed,
  createdAt: batch.created_at,
  endedAt: batch.completed_at ?? batch.failed_at ?? batch.expired_at ?? batch.cancelled_at,
  running: OPENAI_RUNNING.has(batch.status),
  cancellable: OPENAI_RUNNING.has(batch.status) && batch.status !== "cancelling",
  downloads: [
    ...(batch.output_file_id === null ? [] : [{ file: "output" as const, href: fileHref(batch.output_file_id) }]),
    ...(batch.error_file_id === null ? [] : [{ file: "errors" as const, href: fileHref(batch.error_file_id) }])
  ]
})

const messageRow = (batch: MessageBatch): BatchRow => {
  const c = batch.request_counts
  return {
    id: batch.id,
    kind: "anthropic",
    endpoint: "/v1/messages",
    status: batch.processing_status,
    counts: TEXT.messageCounts(c.processing, c.succeeded, c.errored, c.canceled, c.expired),
    succeeded: c.succeeded,
    createdAt: seconds(batch.created_at) ?? 0,
    endedAt: seconds(batch.ended_at),
    running: batch.processing_status !== "ended",
    cancellable: batch.processing_status === "in_progress",
    downloads: batch.processing_status === "ended"
      ? [{ file: "results" as const, href: `/v1/messages/batches/${encodeURIComponent(batch.id)}/results` }]
      : []
  }
}

/** One page of `kind`'s batches older than `after` (the newest when `null`). */
const listOf = async (kind: BatchRow["kind"], after: string | null): Promise<Listed> => {
  if (kind === "openai") {
    const cursor = after === null ? "" : `&after=${encodeURIComponent(after)}`
    const page = await publicCall<{ data: ReadonlyArray<OpenAiBatch>; has_more: boolean; last_id: string | null }>(
      "GET",
      `/v1/batches?limit=${PAGE_LIMIT}${cursor}`
    )
    return { rows: page.data.map(openAiRow), hasMore: page.has_more, lastId: page.last_id }
  }
  const cursor = after === null ? "" : `&after_id=${encodeURIComponent(after)}`
  const page = await publicCall<{ data: ReadonlyArray<MessageBatch>; has_more: boolean; last_id: string | null }>(
    "GET",
    `/v1/messages/batches?limit=${PAGE_LIMIT}${cursor}`
  )
  return { rows: page.data.map(messageRow), hasMore: page.has_more, lastId: page.last_id }
}

/**
 * What the ledger charged the lines of batch `id`: its usage log rows summed, as USD with its unit, and how many
 * rows there were.
 */
export const batchCost = async (id: string): Promise<{ readonly text: string; readonly rows: number }> => {
  let total = 0
  for (let page = 1;; page++) {
    const rows = await api<Page<{ quota: number }>>(
      "GET",
      `/api/log/self?batch_id=${encodeURIComponent(id)}&page=${page}&page_size=${LOG_PAGE}`
    )
    total += rows.items.reduce((sum, row) => sum + row.quota, 0)
    if (page * LOG_PAGE >= rows.total || rows.items.length === 0) return { text: usd(total), rows: rows.total }
  }
}

/** How long the cost cell waits before reading the log again while rows of answered lines are still to come. */
const COST_RETRY_MILLIS = 1_000
/** How many times it reads again at most (the usage log writes its rows within seconds). */
const COST_RETRIES = 30

/**
 * The cost cell of one batch, read from the log when the batch (or its counts) change. The usage log writes a
 * line's row a moment after the line answered, so while fewer rows than answered lines are in, it reads again.
 */
const Cost = (props: { row: BatchRow }) => {
  const [cost, setCost] = useState<string>(TEXT.costPending)
  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const read = (tries: number) =>
      batchCost(props.row.id).then(
        (answer) => {
          if (!live) return
          setCost(answer.text)
          if (answer.rows < props.row.succeeded && tries < COST_RETRIES) {
            timer = setTimeout(() => read(tries + 1), COST_RETRY_MILLIS)
          }
        },
        (caught) => live && setCost(wordsOf(caught))
      )
    read(0)
    return () => {
      live = false
      if (timer !== undefined) clearTimeout(timer)
    }
  }, [props.row.id, props.row.status, props.row.counts, props.row.succeeded])
  return <td data-testid="batch-cost">{cost}</td>
}

/** One kind's table: its batches, paged by cursor (a stack of the pages' cursors for "Newer"). */
const BatchTable = (props: { kind: BatchRow["kind"]; title: string }) => {
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [list, setList] = useState<Listed | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [tick, setTick] = useState(0)
  const after = cursors[cursors.length - 1] ?? null

  useEffect(() => {
    let live = true
    listOf(props.kind, after).then(
      (answer) => live && (setList(answer), setError(null)),
      (caught) => live && setError(wordsOf(caught))
    )
    return () => {
      live = false
    }
  }, [after, tick])

  const running = list?.rows.some((row) => row.running) ?? false
  useEffect(() => {
    if (!running) return
    const timer = setTimeout(() => setTick((value) => value + 1), POLL_MILLIS)
    return () => clearTimeout(timer)
  }, [running, list])

  const cancel = async (row: BatchRow) => {
    const path = row.kind === "openai" ? "/v1/batches" : "/v1/messages/batches"
    try {
      await publicCall("POST", `${path}/${encodeURIComponent(row.id)}/cancel`)
      setError(null)
    } catch (caught) {
      setError(wordsOf(caught))
    }
    setTick((value) => value + 1)
  }

  const headingId = `batches-${props.kind}`
  return (
    <section class="panel" aria-labelledby={headingId}>
      <h2 id={headingId}>{props.title}</h2>
      <ErrorText error={error} />
      <p class="hint" aria-live="polite">{running ? TEXT.running : ""}</p>
      <TableScroll label={TEXT.caption(props.title, cursors.length)}>
        <table>
          <caption>{TEXT.caption(props.title, cursors.length)}</caption>
          <thead>
            <tr>
              <th scope="col">{TEXT.columns.batch}</th>
              <th scope="col">{TEXT.columns.kind}</th>
              <th scope="col">{TEXT.columns.endpoint}</th>
              <th scope="col">{TEXT.columns.status}</th>
              <th scope="col">{TEXT.columns.counts}</th>
              <th scope="col">{TEXT.columns.created}</th>
              <th scope="col">{TEXT.columns.ended}</th>
              <th scope="col">{TEXT.columns.cost}</th>
              <th scope="col">{TEXT.columns.results}</th>
              <th scope="col">{TEXT.columns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {list?.rows.map((row) => (
              <tr key={row.id} data-testid="batch-row" data-batch-id={row.id}>
                <td>{row.id}</td>
                <td>{row.kind}</td>
                <td>{row.endpoint}</td>
                <td data-testid="batch-status">{row.status}</td>
                <td data-testid="batch-counts">{row.counts}</td>
                <td>{timeText(row.createdAt)}</td>
                <td>{row.endedAt === null ? "" : timeText(row.endedAt)}</td>
                <Cost row={row} />
                <td>
                  {row.downloads.length === 0 ? TEXT.none : row.downloads.map((link) => (
                    <a
                      key={link.href}
                      href={link.href}
                      download={`${row.id}-${link.file}.jsonl`}
                      aria-label={TEXT.downloadOf(TEXT[link.file], row.id)}
                    >
                      {TEXT[link.file]}
                      {" "}
                    </a>
                  ))}
                </td>
                <td>
                  {row.cancellable && (
                    <button
                      type="button"
                      aria-label={TEXT.cancelOf(row.id)}
                      onClick={() => cancel(row)}
                    >
                      {TEXT.cancel}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <nav class="pager" aria-label={TEXT.pages(props.title)}>
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          {TEXT.newer}
        </button>
        <button
          type="button"
          disabled={!(list?.hasMore ?? false) || list?.lastId === null}
          onClick={() => list?.lastId != null && setCursors([...cursors, list.lastId])}
        >
          {TEXT.older}
        </button>
      </nav>
    </section>
  )
}

/** The Batches page: the user's OpenAI batches and Message Batches. */
export const Batches = () => (
  <section>
    <h1>{TEXT.title}</h1>
    <p class="hint">{TEXT.intro}</p>
    <BatchTable kind="openai" title={TEXT.openAi} />
    <BatchTable kind="anthropic" title={TEXT.anthropic} />
  </section>
)
