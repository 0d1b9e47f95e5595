/**
 * Webhooks (`/api/webhook/`): the caller's alert endpoints with their
 * delivery counts; add one (URL, events, the budget thresholds and the
 * balance under which `balance.low` fires), whose signing secret
 * (`whsec_…`, Standard Webhooks) is shown once; delete one after a
 * confirmation; its delivery log (`GET /api/webhook/{id}/deliveries`:
 * event, status, attempts, last HTTP status and error) and a "send test
 * event" button (`POST /api/webhook/{id}/test`). Admins also see the
 * operator's events (`channel.*`); the API checks again. The list is paged,
 * searched (in the URL), filtered (status, event) and sorted on the server,
 * its view kept in the hash's query; selected endpoints are enabled, disabled
 * (no new event is written for a disabled one) or deleted at once (`POST
 * /api/webhook/bulk`).
 */
import { useEffect, useState } from "preact/hooks"
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
import { WEBHOOKS } from "./strings.ts"
import { ErrorText, Field, Pager, timeText } from "./ui.tsx"

/** The user's own events, and the operator's (admins only), as the API names them. */
const USER_EVENTS = ["budget.threshold", "balance.low", "key.expiring"] as const
const OPERATOR_EVENTS = ["channel.key_disabled", "channel.unhealthy", "channel.recovered"] as const

/** An endpoint as listed. */
interface Endpoint {
  readonly id: number
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly thresholds: ReadonlyArray<number>
  readonly balance_below: number | null
  readonly status: "enabled" | "disabled"
  readonly created_at: number
  readonly deliveries: { readonly pending: number; readonly delivered: number; readonly failed: number }
}

/** One delivery of an endpoint's log. */
interface Delivery {
  readonly id: string
  readonly event: string
  readonly status: "pending" | "delivered" | "failed"
  readonly attempts: number
  readonly last_status: number | null
  readonly last_error: string | null
  readonly created_at: number
  readonly delivered_at: number | null
}

/** Fractions typed as percentages ("50, 80, 100"), or the words of the first bad one. */
const thresholdsOf = (text: string): Array<number> | undefined | string => {
  const parts = text.split(",").map((part) => part.trim()).filter((part) => part !== "")
  if (parts.length === 0) return undefined
  const out: Array<number> = []
  for (const part of parts) {
    if (!/^\d{1,3}(\.\d{1,2})?$/.test(part) || Number(part) <= 0 || Number(part) > 100) {
      return WEBHOOKS.threshold
    }
    out.push(Number(part) / 100)
  }
  return out
}

/** The form that adds an endpoint; answers the secret, shown once. */
const CreateEndpoint = (props: { admin: boolean; onCreated: (secret: string) => void }) => {
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState<ReadonlyArray<string>>(["budget.threshold"])
  const [thresholds, setThresholds] = useState("")
  const [below, setBelow] = useState("")
  const [error, setError] = useState<string | null>(null)
  const offered: ReadonlyArray<string> = props.admin ? [...USER_EVENTS, ...OPERATOR_EVENTS] : USER_EVENTS
  const toggle = (event: string, on: boolean) =>
    setEvents(on ? [...events.filter((name) => name !== event), event] : events.filter((name) => name !== event))
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const typed = thresholdsOf(thresholds)
    if (typeof typed === "string") return setError(typed)
    if (below.trim() !== "" && !/^\d{1,9}(\.\d{1,6})?$/.test(below.trim())) {
      return setError(WEBHOOKS.balanceUsd)
    }
    try {
      const created = await api<{ secret: string }>("POST", "/api/webhook/", {
        url,
        events,
        ...(typed === undefined ? {} : { thresholds: typed }),
        ...(below.trim() === "" ? {} : { balance_below: Number(below.trim()) })
      })
      setUrl("")
      setThresholds("")
      setBelow("")
      props.onCreated(created.secret)
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form class="panel" onSubmit={submit} aria-label={WEBHOOKS.add}>
      <h2>{WEBHOOKS.addTitle}</h2>
      <Field label={WEBHOOKS.url}>
        <input
          name="url"
          type="url"
          required
          maxLength={2048}
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
      </Field>
      <fieldset>
        <legend>{WEBHOOKS.events}</legend>
        {offered.map((name) => (
          <label class="check" key={name}>
            <input
              type="checkbox"
              name="events"
              value={name}
              checked={events.includes(name)}
              onChange={(e) => toggle(name, e.currentTarget.checked)}
            />{" "}
            {name}
          </label>
        ))}
      </fieldset>
      <Field label={WEBHOOKS.thresholds}>
        <input name="thresholds" value={thresholds} onInput={(e) => setThresholds(e.currentTarget.value)} />
      </Field>
      <Field label={WEBHOOKS.below}>
        <input
          name="balance_below"
          inputMode="decimal"
          value={below}
          onInput={(e) => setBelow(e.currentTarget.value)}
        />
      </Field>
      <ErrorText error={error} />
      <button type="submit">{WEBHOOKS.addButton}</button>
    </form>
  )
}

/** The signing secret, shown once. */
const NewSecret = (props: { value: string; onDone: () => void }) => (
  <div class="panel notice" role="status">
    <h2>{WEBHOOKS.secretTitle}</h2>
    <p>
      {WEBHOOKS.secretBefore}
      <code>webhook-signature</code>
      {WEBHOOKS.secretAfter}
    </p>
    <Field label={WEBHOOKS.secret}>
      <input readOnly name="new_secret" value={props.value} onFocus={(e) => e.currentTarget.select()} />
    </Field>
    <button type="button" onClick={props.onDone}>{WEBHOOKS.done}</button>
  </div>
)

/** An endpoint's delivery log, newest first. */
const DeliveryLog = (props: { endpoint: Endpoint; version: number }) => {
  const [rows, setRows] = useState<ReadonlyArray<Delivery> | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api<ReadonlyArray<Delivery>>("GET", `/api/webhook/${props.endpoint.id}/deliveries`).then(
      setRows,
      (caught) => setError(wordsOf(caught))
    )
  }, [props.endpoint.id, props.version])
  return (
    <>
      <ErrorText error={error} />
      <table>
        <caption>{WEBHOOKS.deliveriesCaption(props.endpoint.url, rows?.length ?? 0)}</caption>
        <thead>
          <tr>
            <th scope="col">{WEBHOOKS.deliveryColumns.event}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.status}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.attempts}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.lastStatus}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.lastError}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.raised}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.delivered}</th>
            <th scope="col">{WEBHOOKS.deliveryColumns.id}</th>
          </tr>
        </thead>
        <tbody>
          {rows?.map((row) => (
            <tr key={row.id} data-testid="delivery">
              <td>{row.event}</td>
              <td>{row.status}</td>
              <td>{row.attempts}</td>
              <td>{row.last_status ?? ""}</td>
              <td>{row.last_error ?? ""}</td>
              <td>{timeText(row.created_at)}</td>
              <td>{timeText(row.delivered_at)}</td>
              <td>
                <code>{row.id}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  )
}

/** One endpoint's row: its selection box, its log, a test event, enable or disable, delete after a confirmation. */
const EndpointRow = (
  props: { item: Endpoint; selected: boolean; onSelect: (on: boolean) => void; onChanged: () => void }
) => {
  const { item } = props
  const [open, setOpen] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const [version, setVersion] = useState(0)
  const [note, setNote] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const sendTest = async () => {
    setError(null)
    try {
      const sent = await api<{ id: string }>("POST", `/api/webhook/${item.id}/test`)
      setNote(WEBHOOKS.queued(sent.id))
      setOpen(true)
      setVersion(version + 1)
      props.onChanged()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  const remove = async () => {
    setError(null)
    try {
      await api("DELETE", `/api/webhook/${item.id}`)
      props.onChanged()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  const toggle = async () => {
    setError(null)
    try {
      await api("POST", "/api/webhook/bulk", {
        ids: [item.id],
        action: item.status === "enabled" ? "disable" : "enable"
      })
      props.onChanged()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <>
      <tr>
        <td>
          <input
            type="checkbox"
            aria-label={WEBHOOKS.select(item.url)}
            checked={props.selected}
            onChange={(e) => props.onSelect(e.currentTarget.checked)}
          />
        </td>
        <td>
          <code>{item.url}</code>
        </td>
        <td>{item.events.join(", ")}</td>
        <td data-testid="endpoint-status">
          {item.status === "enabled" ? item.status : `${item.status} (${WEBHOOKS.disabledNote})`}
        </td>
        <td data-testid="endpoint-deliveries">
          {WEBHOOKS.counts(item.deliveries.delivered, item.deliveries.pending, item.deliveries.failed)}
        </td>
        <td>{timeText(item.created_at)}</td>
        <td>
          <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? WEBHOOKS.hide : WEBHOOKS.deliveries}
          </button>{" "}
          <button type="button" onClick={sendTest}>{WEBHOOKS.sendTest}</button>{" "}
          <button
            type="button"
            aria-label={WEBHOOKS.named(item.status === "enabled" ? WEBHOOKS.disable : WEBHOOKS.enable, item.url)}
            onClick={toggle}
          >
            {item.status === "enabled" ? WEBHOOKS.disable : WEBHOOKS.enable}
          </button>{" "}
          {confirming
            ? (
              <span role="group" aria-label={WEBHOOKS.confirmOf(item.url)}>
                {WEBHOOKS.confirm} <button type="button" class="danger" onClick={remove}>{WEBHOOKS.remove}</button>{" "}
                <button
                  type="button"
                  onClick={() => setConfirming(false)}
                >
                  {WEBHOOKS.keep}
                </button>
              </span>
            )
            : <button type="button" onClick={() => setConfirming(true)}>{WEBHOOKS.remove}</button>}
          {note && <p role="status">{note}</p>}
          <ErrorText error={error} />
        </td>
      </tr>
      {open && (
        <tr>
          <td colSpan={7}>
            <button
              type="button"
              onClick={() => {
                setVersion(version + 1)
                props.onChanged()
              }}
            >
              {WEBHOOKS.refresh}
            </button>
            <DeliveryLog endpoint={item} version={version} />
          </td>
        </tr>
      )}
    </>
  )
}

/** The list's view, as the hash's query and the API's parameters hold it. */
const VIEW = { keyword: "", status: "", event: "", sort: "id", order: "asc", page: "1" }

/** The view's fields the filter form sets. */
const ENDPOINT_FILTERS = ["keyword", "status", "event"] as const

/** The filter form: its own drafts, applied on submit; `events` are those the caller may subscribe to. */
const EndpointFilters = (
  props: { view: typeof VIEW; events: ReadonlyArray<string>; onApply: (change: Partial<typeof VIEW>) => void }
) => (
  <FilterForm label={WEBHOOKS.filters} view={props.view} fields={ENDPOINT_FILTERS} onApply={props.onApply}>
    {(draft, set) => (
      <>
        <Field label={WEBHOOKS.keyword}>
          <input name="keyword" value={draft.keyword} onInput={set("keyword")} />
        </Field>
        <ChoiceField
          label={WEBHOOKS.status}
          name="status"
          value={draft.status}
          onChange={set("status")}
          options={statusChoices()}
        />
        <ChoiceField
          label={WEBHOOKS.event}
          name="event"
          value={draft.event}
          onChange={set("event")}
          options={props.events.map((name) => [name, name] as const)}
        />
      </>
    )}
  </FilterForm>
)

/** The webhooks page; `admin` offers the operator's events. */
export const Webhooks = (props: { admin: boolean }) => {
  const [view, change] = useHashView(VIEW)
  const [secret, setSecret] = useState<string | null>(null)
  const selection = useSelection()
  const list = useServerPage<Endpoint>("/api/webhook/", apiQuery(view))
  const { listing, items, pages, error, load } = list
  const bulk = useBulk({
    path: "/api/webhook/bulk",
    selection,
    words: WEBHOOKS.bulkDone,
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
      <h1>{WEBHOOKS.title}</h1>
      <p>
        {WEBHOOKS.introBefore}
        {props.admin ? WEBHOOKS.introAdmin : ""}
        {WEBHOOKS.introAfter}
        <code>webhook-id</code>
        {WEBHOOKS.introEnd}
      </p>
      {secret !== null && <NewSecret value={secret} onDone={() => setSecret(null)} />}
      <CreateEndpoint
        admin={props.admin}
        onCreated={(made) => {
          setSecret(made)
          load()
        }}
      />
      <EndpointFilters
        view={view}
        events={props.admin ? [...USER_EVENTS, ...OPERATOR_EVENTS] : USER_EVENTS}
        onApply={change}
      />
      <ErrorText error={error} />
      <BulkBar
        label={WEBHOOKS.bulk}
        count={selection.selected.size}
        deleteQuestion={WEBHOOKS.deleteQuestion(selection.selected.size)}
        result={bulk.result}
        onAction={bulk.run}
      />
      <div class="scroll">
        <table>
          <caption>{WEBHOOKS.caption(listing?.total ?? 0)}</caption>
          <thead>
            <tr>
              <SelectPage
                label={WEBHOOKS.selectPage}
                ids={items.map((item) => item.id)}
                selected={selection.selected}
                onPage={selection.page}
              />
              {sortable(WEBHOOKS.columns.url, "url")}
              <th scope="col">{WEBHOOKS.columns.events}</th>
              {sortable(WEBHOOKS.columns.status, "status")}
              <th scope="col">{WEBHOOKS.columns.deliveries}</th>
              {sortable(WEBHOOKS.columns.added, "created_at")}
              <th scope="col">{WEBHOOKS.columns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <EndpointRow
                key={`${item.id}-${item.status}`}
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
        label={WEBHOOKS.pages}
        page={Number(view.page) || 1}
        pages={pages}
        setPage={(page) => change({ page: String(page) })}
      />
    </section>
  )
}
