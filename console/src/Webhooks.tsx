/**
 * Webhooks (`/api/webhook/`): the caller's alert endpoints with their
 * delivery counts; add one (URL, events, the budget thresholds and the
 * balance under which `balance.low` fires), whose signing secret
 * (`whsec_…`, Standard Webhooks) is shown once; delete one after a
 * confirmation; its delivery log (`GET /api/webhook/{id}/deliveries`:
 * event, status, attempts, last HTTP status and error) and a "send test
 * event" button (`POST /api/webhook/{id}/test`). Admins also see the
 * operator's events (`channel.*`); the API checks again.
 */
import { useEffect, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { ErrorText, Field, timeText } from "./ui.tsx"

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
      return "Each threshold must be a percentage above 0 and at most 100, such as 50, 80, 100."
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
      return setError("The balance for balance.low must be an amount in USD, such as 5 or 0.25.")
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
    <form class="panel" onSubmit={submit} aria-label="Add a webhook endpoint">
      <h2>Add an endpoint</h2>
      <Field label="Endpoint URL (http or https)">
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
        <legend>Events</legend>
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
      <Field label="Budget thresholds in percent, comma-separated (empty: 50, 80, 100)">
        <input name="thresholds" value={thresholds} onInput={(e) => setThresholds(e.currentTarget.value)} />
      </Field>
      <Field label="balance.low fires under this balance (USD; required with balance.low)">
        <input
          name="balance_below"
          inputMode="decimal"
          value={below}
          onInput={(e) => setBelow(e.currentTarget.value)}
        />
      </Field>
      <ErrorText error={error} />
      <button type="submit">Add endpoint</button>
    </form>
  )
}

/** The signing secret, shown once. */
const NewSecret = (props: { value: string; onDone: () => void }) => (
  <div class="panel notice" role="status">
    <h2>The endpoint's signing secret</h2>
    <p>
      This is the only time the secret is shown. Verify each delivery's <code>webhook-signature</code>{" "}
      with it (Standard Webhooks).
    </p>
    <Field label="Signing secret">
      <input readOnly name="new_secret" value={props.value} onFocus={(e) => e.currentTarget.select()} />
    </Field>
    <button type="button" onClick={props.onDone}>Done</button>
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
        <caption>Deliveries to {props.endpoint.url} ({rows?.length ?? 0}, latest 100)</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last HTTP status</th>
            <th scope="col">Last error</th>
            <th scope="col">Raised</th>
            <th scope="col">Delivered</th>
            <th scope="col">Message id</th>
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

/** One endpoint's row: its log, a test event, delete after a confirmation. */
const EndpointRow = (props: { item: Endpoint; onChanged: () => void }) => {
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
      setNote(`Test event ${sent.id} queued.`)
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
  return (
    <>
      <tr>
        <td>
          <code>{item.url}</code>
        </td>
        <td>{item.events.join(", ")}</td>
        <td data-testid="endpoint-deliveries">
          {item.deliveries.delivered} delivered, {item.deliveries.pending} pending, {item.deliveries.failed} failed
        </td>
        <td>{timeText(item.created_at)}</td>
        <td>
          <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? "Hide deliveries" : "Deliveries"}
          </button>{" "}
          <button type="button" onClick={sendTest}>Send test event</button> {confirming
            ? (
              <span role="group" aria-label={`Confirm deleting the endpoint ${item.url}`}>
                Delete this endpoint and its delivery log?{" "}
                <button type="button" class="danger" onClick={remove}>Delete</button>{" "}
                <button
                  type="button"
                  onClick={() => setConfirming(false)}
                >
                  Keep
                </button>
              </span>
            )
            : <button type="button" onClick={() => setConfirming(true)}>Delete</button>}
          {note && <p role="status">{note}</p>}
          <ErrorText error={error} />
        </td>
      </tr>
      {open && (
        <tr>
          <td colSpan={5}>
            <button
              type="button"
              onClick={() => {
                setVersion(version + 1)
                props.onChanged()
              }}
            >
              Refresh deliveries
            </button>
            <DeliveryLog endpoint={item} version={version} />
          </td>
        </tr>
      )}
    </>
  )
}

/** The webhooks page; `admin` offers the operator's events. */
export const Webhooks = (props: { admin: boolean }) => {
  const [items, setItems] = useState<ReadonlyArray<Endpoint> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [secret, setSecret] = useState<string | null>(null)
  const load = () =>
    api<ReadonlyArray<Endpoint>>("GET", "/api/webhook/").then(setItems, (caught) => setError(wordsOf(caught)))
  useEffect(() => {
    load()
  }, [])
  return (
    <section>
      <h1>Webhooks</h1>
      <p>
        Signed alerts (Standard Webhooks): budget thresholds, a low balance, keys about to expire
        {props.admin ? ", and the channels' health" : ""}. Each delivery is retried for 24 hours; receivers deduplicate
        by <code>webhook-id</code>.
      </p>
      {secret !== null && <NewSecret value={secret} onDone={() => setSecret(null)} />}
      <CreateEndpoint
        admin={props.admin}
        onCreated={(made) => {
          setSecret(made)
          load()
        }}
      />
      <ErrorText error={error} />
      <table>
        <caption>Your endpoints ({items?.length ?? 0})</caption>
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">Deliveries</th>
            <th scope="col">Added</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {items?.map((item) => <EndpointRow key={item.id} item={item} onChanged={load} />)}
        </tbody>
      </table>
    </section>
  )
}
