/**
 * The form that adds a channel (`POST /api/channel/`) or changes one (`PUT
 * /api/channel/`): every field of a channel — name, type, base URL, models,
 * groups, priority, weight, model mapping, settings (JSON), enabled, and its
 * keys. Saved keys are never shown again: when changing a channel the keys
 * field starts empty and, left empty, keeps the keys it has; filled, it
 * replaces them. The settings only one type reads (azure's API version,
 * bedrock's region and API, vertex's Google Cloud project and location) are
 * fields of the settings shown only for that type (`SettingsFields.tsx`),
 * checked on save as the server checks them; a vertex channel takes
 * service-account key JSON files as keys.
 */
import { useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { CHANNEL_TYPES, DEFAULT_BASE_URLS, keyHint, keysOf, vertexBaseUrl } from "./channelTypes.ts"
import { SettingsFields, settingsOf, typeSettingsProblem } from "./SettingsFields.tsx"
import { CHANNEL_FORM, SETTINGS } from "./strings.ts"
import { ErrorText, Field } from "./ui.tsx"

/** A channel's fields as the admin API lists them (keys masked, so not here). */
export interface ChannelFields {
  readonly id: number
  readonly name: string
  readonly type: string
  readonly base_url: string
  readonly models: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly model_mapping: Readonly<Record<string, string>>
  readonly settings: unknown
  readonly status: "enabled" | "disabled"
}

/** The channel types the gateway speaks (every one, rerank-only `cohere` and `jina` and video-only `kling` included). */
const TYPES = CHANNEL_TYPES

const listOf = (text: string): Array<string> =>
  text.split(/[,\n]/).map((item) => item.trim()).filter((item) => item !== "")

/** `from=to` lines as a mapping, or the words of the first bad line. */
const mappingOf = (text: string): Record<string, string> | string => {
  const mapping: Record<string, string> = {}
  for (const line of text.split("\n").map((line) => line.trim()).filter((line) => line !== "")) {
    const at = line.indexOf("=")
    if (at <= 0 || at === line.length - 1) return CHANNEL_FORM.badMapping(line.slice(0, 80))
    mapping[line.slice(0, at).trim()] = line.slice(at + 1).trim()
  }
  return mapping
}

/** A whole number in `text`, or `undefined`. */
const wholeOf = (text: string): number | undefined => /^\s*-?\d{1,7}\s*$/.test(text) ? Number(text) : undefined

/** The channel form: `channel` null adds one. `onSaved` runs after a save. */
export const ChannelForm = (props: { channel: ChannelFields | null; onSaved: (name: string) => void }) => {
  const start = props.channel
  const [name, setName] = useState(start?.name ?? "")
  const [type, setType] = useState(start?.type ?? "openai")
  const [baseUrl, setBaseUrl] = useState(start?.base_url ?? "")
  const [models, setModels] = useState(start?.models.join(", ") ?? "")
  const [groups, setGroups] = useState(start?.groups.join(", ") ?? "default")
  const [priority, setPriority] = useState(String(start?.priority ?? 0))
  const [weight, setWeight] = useState(String(start?.weight ?? 1))
  const [mapping, setMapping] = useState(
    Object.entries(start?.model_mapping ?? {}).map(([from, to]) => `${from}=${to}`).join("\n")
  )
  const [settings, setSettings] = useState(
    start?.settings === undefined || start?.settings === null ? "{}" : JSON.stringify(start.settings, null, 2)
  )
  const [keys, setKeys] = useState("")
  const [enabled, setEnabled] = useState(start === null || start.status === "enabled")
  const [error, setError] = useState<string | null>(null)
  // The vertex location the settings hold, for the base URL's placeholder.
  const location = settingsOf(settings)?.location
  const vertexLocation = typeof location === "string" ? location.trim() : ""
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const modelMapping = mappingOf(mapping)
    if (typeof modelMapping === "string") return setError(CHANNEL_FORM.mapping(modelMapping))
    let parsedSettings: unknown
    try {
      parsedSettings = JSON.parse(settings.trim() === "" ? "{}" : settings)
    } catch {
      return setError(CHANNEL_FORM.settingsObject)
    }
    if (typeof parsedSettings !== "object" || parsedSettings === null || Array.isArray(parsedSettings)) {
      return setError(CHANNEL_FORM.settingsObject)
    }
    const typeProblem = typeSettingsProblem(type, parsedSettings as Record<string, unknown>)
    if (typeProblem !== undefined) return setError(typeProblem)
    const priorityValue = wholeOf(priority)
    const weightValue = wholeOf(weight)
    if (priorityValue === undefined) return setError(CHANNEL_FORM.priorityWhole)
    if (weightValue === undefined || weightValue < 0) return setError(CHANNEL_FORM.weightWhole)
    const keyList = keysOf(type, keys)
    if (typeof keyList === "string") return setError(CHANNEL_FORM.keys(keyList))
    if (start === null && keyList.length === 0) return setError(CHANNEL_FORM.needsKey)
    const body = {
      ...(start === null ? {} : { id: start.id }),
      name,
      type,
      // Left empty on a type with a default (deepseek), the server fills it in.
      ...(baseUrl.trim() === "" ? {} : { base_url: baseUrl.trim() }),
      models: listOf(models),
      groups: listOf(groups),
      priority: priorityValue,
      weight: weightValue,
      model_mapping: modelMapping,
      settings: parsedSettings,
      enabled,
      ...(keyList.length === 0 ? {} : { keys: keyList })
    }
    try {
      await api(start === null ? "POST" : "PUT", "/api/channel/", body)
      setKeys("")
      props.onSaved(name)
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form
      class="panel"
      onSubmit={submit}
      aria-label={start === null ? CHANNEL_FORM.add : CHANNEL_FORM.change(start.name)}
    >
      <h2>{start === null ? CHANNEL_FORM.add : CHANNEL_FORM.change(start.name)}</h2>
      <Field label={CHANNEL_FORM.name}>
        <input name="name" required maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label={CHANNEL_FORM.type}>
        <select name="type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          {TYPES.map((item) => <option key={item} value={item}>{item}</option>)}
        </select>
      </Field>
      <Field label={CHANNEL_FORM.baseUrl}>
        <input
          name="base_url"
          type="url"
          required={DEFAULT_BASE_URLS[type as keyof typeof DEFAULT_BASE_URLS] === undefined}
          placeholder={type === "vertex"
            ? vertexBaseUrl(vertexLocation === "" ? "us-central1" : vertexLocation)
            : DEFAULT_BASE_URLS[type as keyof typeof DEFAULT_BASE_URLS]}
          value={baseUrl}
          onInput={(e) => setBaseUrl(e.currentTarget.value)}
        />
      </Field>
      <Field label={CHANNEL_FORM.models}>
        <input name="models" required value={models} onInput={(e) => setModels(e.currentTarget.value)} />
      </Field>
      <Field label={CHANNEL_FORM.groups}>
        <input name="groups" value={groups} onInput={(e) => setGroups(e.currentTarget.value)} />
      </Field>
      <Field label={CHANNEL_FORM.priority}>
        <input
          name="priority"
          inputMode="numeric"
          value={priority}
          onInput={(e) => setPriority(e.currentTarget.value)}
        />
      </Field>
      <Field label={CHANNEL_FORM.weight}>
        <input name="weight" inputMode="numeric" value={weight} onInput={(e) => setWeight(e.currentTarget.value)} />
      </Field>
      <Field
        label={CHANNEL_FORM.mappingField + (type === "azure" ? CHANNEL_FORM.mappingAzure : "")}
      >
        <textarea name="model_mapping" rows={2} value={mapping} onInput={(e) => setMapping(e.currentTarget.value)} />
      </Field>
      <SettingsFields text={settings} onText={setSettings} prefix={`channel-${start?.id ?? "new"}`} type={type} />
      <details>
        <summary>{SETTINGS.advanced}</summary>
        <Field label={CHANNEL_FORM.settings}>
          <textarea name="settings" rows={6} value={settings} onInput={(e) => setSettings(e.currentTarget.value)} />
        </Field>
      </details>
      <Field
        label={(start === null ? CHANNEL_FORM.keysNew : CHANNEL_FORM.keysChange) +
          (keyHint(type) === undefined ? "" : `; ${keyHint(type)}`)}
      >
        <textarea
          name="keys"
          rows={2}
          autocomplete="off"
          spellcheck={false}
          value={keys}
          onInput={(e) => setKeys(e.currentTarget.value)}
        />
      </Field>
      <label class="check">
        <input
          type="checkbox"
          name="enabled"
          checked={enabled}
          onChange={(e) => setEnabled(e.currentTarget.checked)}
        />{" "}
        {CHANNEL_FORM.enabled}
      </label>
      <ErrorText error={error} />
      <button type="submit">{start === null ? CHANNEL_FORM.addButton : CHANNEL_FORM.saveButton}</button>
    </form>
  )
}
