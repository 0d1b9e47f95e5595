/**
 * Channels, for admins (`/api/channel/`): each channel's type, models,
 * groups, priority and weight, status, this instance's health, its keys
 * (masked, with why a key was disabled) and its last test's latency or error;
 * a test button that shows the latency or the error, enable/disable, which
 * routing follows at once, and a form to add a channel or change every field
 * of one (`ChannelForm.tsx`). The list is paged, searched (name or base
 * URL), filtered (status, type, group, model) and sorted on the server, its
 * view kept in the hash's query; selected channels are enabled, disabled or
 * tested at once (`POST /api/channel/bulk`).
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { type ChannelFields, ChannelForm } from "./ChannelForm.tsx"
import { CHANNEL_TYPES } from "./channelTypes.ts"
import { apiQuery, useHashView } from "./hashQuery.ts"
import { SortHeader } from "./listControls.tsx"
import { CHANNELS, LIST } from "./strings.ts"
import { ErrorText, Field, Pager, timeText } from "./ui.tsx"

/** A channel as the admin API lists it (keys masked). */
interface Channel extends ChannelFields {
  readonly keys: ReadonlyArray<
    { readonly key: string; readonly enabled: boolean; readonly disabled_reason: string | null }
  >
  readonly health: string
  readonly tested_at: number | null
  readonly test_latency_ms: number | null
  readonly test_error: string | null
}

/** One channel's row with its test and enable/disable buttons. */
const ChannelRow = (
  props: {
    item: Channel
    selected: boolean
    onSelect: (on: boolean) => void
    onChanged: () => void
    onEdit: () => void
  }
) => {
  const { item } = props
  const [result, setResult] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const test = async () => {
    setResult(CHANNELS.testing)
    setError(null)
    try {
      const answer = await api<{ status: number; latency_ms: number }>("POST", `/api/channel/test/${item.id}`)
      setResult(CHANNELS.answered(answer.status, answer.latency_ms))
    } catch (caught) {
      setResult(null)
      setError(CHANNELS.testFailed(wordsOf(caught)))
    }
    props.onChanged()
  }
  const toggle = async () => {
    setError(null)
    try {
      await api("PUT", "/api/channel/", { id: item.id, enabled: item.status !== "enabled" })
      props.onChanged()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <tr>
      <td>
        <input
          type="checkbox"
          aria-label={CHANNELS.select(item.name)}
          checked={props.selected}
          onChange={(e) => props.onSelect(e.currentTarget.checked)}
        />
      </td>
      <td>{item.name}</td>
      <td>
        {item.type}
        <br />
        <small>{item.base_url}</small>
      </td>
      <td>{item.models.join(", ")}</td>
      <td>{item.groups.join(", ")}</td>
      <td>{item.priority} / {item.weight}</td>
      <td data-testid="channel-status">{item.status}</td>
      <td data-testid="channel-health">{item.health}</td>
      <td>
        <ul class="plain">
          {item.keys.map((key, index) => (
            <li key={index}>
              <code>{key.key}</code> {key.enabled ? CHANNELS.keyEnabled : CHANNELS.keyDisabled(key.disabled_reason)}
            </li>
          ))}
        </ul>
      </td>
      <td>
        {item.tested_at === null
          ? CHANNELS.never
          : item.test_error === null
          ? CHANNELS.testedAt(`${item.test_latency_ms} ms`, timeText(item.tested_at))
          : CHANNELS.testedAt(item.test_error, timeText(item.tested_at))}
      </td>
      <td>
        <button type="button" aria-label={CHANNELS.named(CHANNELS.test, item.name)} onClick={test}>
          {CHANNELS.test}
        </button>{" "}
        <button type="button" aria-label={CHANNELS.named(CHANNELS.edit, item.name)} onClick={props.onEdit}>
          {CHANNELS.edit}
        </button>{" "}
        <button
          type="button"
          aria-label={CHANNELS.named(item.status === "enabled" ? CHANNELS.disable : CHANNELS.enable, item.name)}
          onClick={toggle}
        >
          {item.status === "enabled" ? CHANNELS.disable : CHANNELS.enable}
        </button>
        {result && <p role="status">{result}</p>}
        <ErrorText error={error} />
      </td>
    </tr>
  )
}

/** The list's view, as the hash's query and the API's parameters hold it. */
const VIEW = { keyword: "", status: "", type: "", group: "", model: "", sort: "id", order: "asc", page: "1" }

/** The filter form: its own drafts, applied on submit. */
const ChannelFilters = (props: { view: typeof VIEW; onApply: (change: Partial<typeof VIEW>) => void }) => {
  const [draft, setDraft] = useState(props.view)
  const text = (name: "keyword" | "group" | "model", label: string) => (
    <Field label={label}>
      <input
        name={name}
        value={draft[name]}
        onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })}
      />
    </Field>
  )
  return (
    <form
      class="filters"
      aria-label={CHANNELS.filters}
      onSubmit={(event) => {
        event.preventDefault()
        const { keyword, status, type, group, model } = draft
        props.onApply({ keyword, status, type, group, model })
      }}
    >
      {text("keyword", CHANNELS.keyword)}
      <Field label={CHANNELS.status}>
        <select
          name="status"
          value={draft.status}
          onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}
        >
          <option value="">{LIST.any}</option>
          <option value="enabled">{LIST.enabled}</option>
          <option value="disabled">{LIST.disabled}</option>
        </select>
      </Field>
      <Field label={CHANNELS.type}>
        <select name="type" value={draft.type} onChange={(e) => setDraft({ ...draft, type: e.currentTarget.value })}>
          <option value="">{LIST.any}</option>
          {CHANNEL_TYPES.map((type) => <option key={type} value={type}>{type}</option>)}
        </select>
      </Field>
      {text("group", CHANNELS.group)}
      {text("model", CHANNELS.model)}
      <button type="submit">{LIST.search}</button>
      <button
        type="button"
        onClick={() => {
          const cleared = { keyword: "", status: "", type: "", group: "", model: "" }
          setDraft({ ...draft, ...cleared })
          props.onApply(cleared)
        }}
      >
        {LIST.clear}
      </button>
    </form>
  )
}

/** The channels page. */
export const Channels = () => {
  const [view, change] = useHashView(VIEW)
  const [listing, setListing] = useState<Page<Channel> | null>(null)
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set())
  const [bulkResult, setBulkResult] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [saved, setSaved] = useState<string | null>(null)
  const [editing, setEditing] = useState<{ readonly item: Channel | null; readonly version: number }>({
    item: null,
    version: 0
  })
  const load = () =>
    api<Page<Channel>>("GET", `/api/channel/?${apiQuery(view)}`).then((page) => {
      setError(null)
      setListing(page)
    }, (c) => setError(wordsOf(c)))
  useEffect(() => {
    load()
  }, [apiQuery(view)])
  const edit = (item: Channel | null) => {
    setSaved(null)
    setEditing({ item, version: editing.version + 1 })
  }
  const items = listing?.items ?? []
  const pages = listing === null ? 1 : Math.max(1, Math.ceil(listing.total / listing.page_size))
  const select = (id: number, on: boolean) => {
    const next = new Set(selected)
    if (on) next.add(id)
    else next.delete(id)
    setSelected(next)
  }
  const bulk = async (action: "enable" | "disable" | "test") => {
    setBulkResult(null)
    setError(null)
    try {
      const results = await api<ReadonlyArray<{ success: boolean }>>("POST", "/api/channel/bulk", {
        ids: [...selected],
        action
      })
      const failed = results.filter((result) => !result.success).length
      setBulkResult(CHANNELS.bulkDone(results.length - failed, failed))
    } catch (caught) {
      setError(wordsOf(caught))
    }
    load()
  }
  const sortable = (label: string, column: string) => (
    <SortHeader
      label={label}
      column={column}
      sort={view.sort}
      order={view.order}
      onSort={(sort, order) => change({ sort, order })}
    />
  )
  const columns = CHANNELS.columns
  return (
    <section>
      <h1>{CHANNELS.title}</h1>
      <ChannelFilters view={view} onApply={change} />
      <ErrorText error={error} />
      {saved && <p role="status">{saved}</p>}
      <div class="bulk" role="group" aria-label={CHANNELS.bulk}>
        <span>{CHANNELS.selected(selected.size)}</span>
        <button type="button" disabled={selected.size === 0} onClick={() => bulk("enable")}>
          {CHANNELS.enableSelected}
        </button>
        <button type="button" disabled={selected.size === 0} onClick={() => bulk("disable")}>
          {CHANNELS.disableSelected}
        </button>
        <button type="button" disabled={selected.size === 0} onClick={() => bulk("test")}>
          {CHANNELS.testSelected}
        </button>
        {bulkResult && <span role="status">{bulkResult}</span>}
      </div>
      <div class="scroll">
        <table>
          <caption>{CHANNELS.caption(listing?.total ?? 0)}</caption>
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label={CHANNELS.selectPage}
                  checked={items.length > 0 && items.every((item) => selected.has(item.id))}
                  onChange={(e) => {
                    const next = new Set(selected)
                    for (const item of items) e.currentTarget.checked ? next.add(item.id) : next.delete(item.id)
                    setSelected(next)
                  }}
                />
              </th>
              {sortable(columns.name, "name")}
              {sortable(columns.type, "type")}
              <th scope="col">{columns.models}</th>
              <th scope="col">{columns.groups}</th>
              {sortable(columns.priority, "priority")}
              {sortable(columns.status, "status")}
              <th scope="col">{columns.health}</th>
              <th scope="col">{columns.keys}</th>
              {sortable(columns.tested, "latency")}
              <th scope="col">{columns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <ChannelRow
                key={`${item.id}-${item.status}`}
                item={item}
                selected={selected.has(item.id)}
                onSelect={(on) => select(item.id, on)}
                onChanged={load}
                onEdit={() => edit(item)}
              />
            ))}
          </tbody>
        </table>
      </div>
      <Pager
        label={CHANNELS.pages}
        page={Number(view.page) || 1}
        pages={pages}
        setPage={(page) => change({ page: String(page) })}
      />
      <ChannelForm
        key={editing.version}
        channel={editing.item}
        onSaved={(name) => {
          edit(null)
          setSaved(CHANNELS.saved(name))
          load()
        }}
      />
      {editing.item !== null && <button type="button" onClick={() => edit(null)}>{CHANNELS.addInstead}</button>}
    </section>
  )
}
