/**
 * Channels, for admins (`/api/channel/`): each channel's type, models,
 * groups, priority and weight, status, this instance's health, its keys
 * (masked, with why a key was disabled) and its last test's latency or error;
 * a test button that shows the latency or the error, enable/disable, which
 * routing follows at once, and a form to add a channel or change every field
 * of one (`ChannelForm.tsx`).
 */
import { useEffect, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { type ChannelFields, ChannelForm } from "./ChannelForm.tsx"
import { ErrorText, timeText } from "./ui.tsx"

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
const ChannelRow = (props: { item: Channel; onChanged: () => void; onEdit: () => void }) => {
  const { item } = props
  const [result, setResult] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const test = async () => {
    setResult("Testing…")
    setError(null)
    try {
      const answer = await api<{ status: number; latency_ms: number }>("POST", `/api/channel/test/${item.id}`)
      setResult(`Answered ${answer.status} in ${answer.latency_ms} ms.`)
    } catch (caught) {
      setResult(null)
      setError(`Test failed: ${wordsOf(caught)}`)
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
              <code>{key.key}</code>{" "}
              {key.enabled ? "enabled" : `disabled${key.disabled_reason ? `: ${key.disabled_reason}` : ""}`}
            </li>
          ))}
        </ul>
      </td>
      <td>
        {item.tested_at === null
          ? "never"
          : item.test_error === null
          ? `${item.test_latency_ms} ms at ${timeText(item.tested_at)}`
          : `${item.test_error} at ${timeText(item.tested_at)}`}
      </td>
      <td>
        <button type="button" aria-label={`Test ${item.name}`} onClick={test}>Test</button>{" "}
        <button type="button" aria-label={`Edit ${item.name}`} onClick={props.onEdit}>Edit</button>{" "}
        <button
          type="button"
          aria-label={`${item.status === "enabled" ? "Disable" : "Enable"} ${item.name}`}
          onClick={toggle}
        >
          {item.status === "enabled" ? "Disable" : "Enable"}
        </button>
        {result && <p role="status">{result}</p>}
        <ErrorText error={error} />
      </td>
    </tr>
  )
}

/** The channels page. */
export const Channels = () => {
  const [channels, setChannels] = useState<ReadonlyArray<Channel> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [saved, setSaved] = useState<string | null>(null)
  const [editing, setEditing] = useState<{ readonly item: Channel | null; readonly version: number }>({
    item: null,
    version: 0
  })
  const load = () => api<ReadonlyArray<Channel>>("GET", "/api/channel/").then(setChannels, (c) => setError(wordsOf(c)))
  useEffect(() => {
    load()
  }, [])
  const edit = (item: Channel | null) => {
    setSaved(null)
    setEditing({ item, version: editing.version + 1 })
  }
  return (
    <section>
      <h1>Channels</h1>
      <ErrorText error={error} />
      {saved && <p role="status">{saved}</p>}
      <table>
        <caption>Channels ({channels?.length ?? 0}); keys are never shown in full</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Models</th>
            <th scope="col">Groups</th>
            <th scope="col">Priority / weight</th>
            <th scope="col">Status</th>
            <th scope="col">Health</th>
            <th scope="col">Keys</th>
            <th scope="col">Last test (latency or error)</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {channels?.map((item) => (
            <ChannelRow
              key={`${item.id}-${item.status}`}
              item={item}
              onChanged={load}
              onEdit={() => edit(item)}
            />
          ))}
        </tbody>
      </table>
      <ChannelForm
        key={editing.version}
        channel={editing.item}
        onSaved={(name) => {
          edit(null)
          setSaved(`Saved channel ${name}.`)
          load()
        }}
      />
      {editing.item !== null && <button type="button" onClick={() => edit(null)}>Add a new channel instead</button>}
    </section>
  )
}
