/**
 * A channel's settings as form fields — timeouts, switches, extra headers,
 * strip params, test model — each a view of the settings JSON: a field's
 * change rewrites the JSON, and the JSON's edit (the advanced view) shows in
 * the fields, so the two always agree. Names are the bootstrap file's
 * (`settings.*`, `src/config/BootstrapFile.ts`). The settings only one
 * channel type reads (azure `api_version`, bedrock `region` and
 * `bedrock_api`, vertex `project` and `location`: `TYPE_SETTINGS`) show only
 * while that type is chosen, each with its help, and are checked as the
 * server checks them when the form is saved (`typeSettingsProblem`).
 */
import { useEffect, useState } from "preact/hooks"
import { SWITCH_TYPES, TYPE_SETTINGS, type TypeSetting } from "./channelTypes.ts"
import { SETTINGS } from "./strings.ts"
import { ErrorText, Field } from "./ui.tsx"

type Settings = Record<string, unknown>

/** `text` as a settings object, or `undefined` when it is not a JSON object. */
export const settingsOf = (text: string): Settings | undefined => {
  try {
    const parsed = JSON.parse(text.trim() === "" ? "{}" : text)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

/** `settings` with `name` set to `value` (`undefined` removes it), as the JSON view writes it. */
export const withSetting = (settings: Settings, name: string, value: unknown): string => {
  const next: Settings = { ...settings }
  if (value === undefined) delete next[name]
  else next[name] = value
  return JSON.stringify(next, null, 2)
}

/** A text field with its own draft, written through `parse` (an error in words, or the value); synced from `shown`. */
const DraftField = (props: {
  label: string
  help: string
  id: string
  shown: string
  disabled: boolean
  multiline?: boolean
  required?: boolean
  placeholder?: string
  parse: (text: string) => { readonly value: unknown } | string
  onValue: (value: unknown) => void
}) => {
  const [draft, setDraft] = useState(props.shown)
  const [problem, setProblem] = useState<string | null>(null)
  // The JSON changed: unless it now says what the draft says (the draft wrote it), the JSON wins.
  useEffect(() => {
    const mine = props.parse(draft)
    const theirs = props.parse(props.shown)
    const theirValue = typeof theirs === "string" ? undefined : theirs.value
    if (typeof mine === "string" || JSON.stringify(mine.value) !== JSON.stringify(theirValue)) {
      setDraft(props.shown)
      setProblem(null)
    }
  }, [props.shown])
  const input = (text: string) => {
    setDraft(text)
    const parsed = props.parse(text)
    if (typeof parsed === "string") return setProblem(`${props.label}: ${parsed}`)
    setProblem(null)
    props.onValue(parsed.value)
  }
  const common = {
    name: props.id,
    disabled: props.disabled,
    "aria-describedby": `${props.id}-help`,
    "aria-invalid": problem !== null,
    // Said by the form on save (naming the field and its setting), not by the browser's own bubble.
    "aria-required": props.required === true,
    placeholder: props.placeholder,
    value: draft
  }
  return (
    <div>
      <Field label={props.label}>
        {props.multiline
          ? <textarea rows={2} {...common} onInput={(e) => input(e.currentTarget.value)} />
          : <input {...common} onInput={(e) => input(e.currentTarget.value)} />}
      </Field>
      <small id={`${props.id}-help`}>{props.help}</small>
      <ErrorText error={problem} />
    </div>
  )
}

const wholeMs = (text: string) =>
  text.trim() === "" ? { value: undefined } : /^\s*\d{1,9}\s*$/.test(text) ? { value: Number(text) } : SETTINGS.whole

const headersOf = (text: string) => {
  const headers: Record<string, string> = {}
  for (const line of text.split("\n").map((part) => part.trim()).filter((part) => part !== "")) {
    const index = line.indexOf(":")
    if (index <= 0) return SETTINGS.headerLine(line)
    headers[line.slice(0, index).trim()] = line.slice(index + 1).trim()
  }
  return { value: Object.keys(headers).length === 0 ? undefined : headers }
}

const listOf = (text: string) => {
  const items = text.split(",").map((part) => part.trim()).filter((part) => part !== "")
  return { value: items.length === 0 ? undefined : items }
}

const textOf = (text: string) => ({ value: text.trim() === "" ? undefined : text.trim() })

/** The settings `type` reads beyond the common ones (none for most types). */
const typeSettingsOf = (type: string): ReadonlyArray<TypeSetting> =>
  (TYPE_SETTINGS as Readonly<Record<string, ReadonlyArray<TypeSetting> | undefined>>)[type] ?? []

/**
 * What is wrong with `settings` for a `type` channel, in words naming the field and its bootstrap name (a required
 * one missing, a value the server would refuse), or `undefined` when the server would take them.
 */
export const typeSettingsProblem = (type: string, settings: Readonly<Record<string, unknown>>): string | undefined => {
  for (const setting of typeSettingsOf(type)) {
    const [label, , rule] = SETTINGS.typeFields[setting.name]
    const value = settings[setting.name]
    if (value === undefined) {
      if (setting.required) return SETTINGS.required(label, setting.name)
      continue
    }
    const fits = typeof value === "string" &&
      (setting.choices === undefined || setting.choices.includes(value)) &&
      (setting.pattern === undefined || setting.pattern.test(value))
    if (!fits) return SETTINGS.invalid(label, setting.name, rule)
  }
  return undefined
}

/** The fields of `type`'s own settings over `settings`, writing through `write`. */
const TypeFields = (props: {
  type: string
  settings: Readonly<Record<string, unknown>>
  disabled: boolean
  prefix: string
  write: (name: string) => (value: unknown) => void
}) => {
  const fields = typeSettingsOf(props.type)
  if (fields.length === 0) return null
  return (
    <fieldset class="settings">
      <legend>{SETTINGS.typeLegend(props.type)}</legend>
      {fields.map((setting) => {
        const [label, help] = SETTINGS.typeFields[setting.name]
        const id = `${props.prefix}-${setting.name}`
        const value = props.settings[setting.name]
        const shown = typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value)
        if (setting.choices !== undefined) {
          return (
            <div key={setting.name}>
              <Field label={`${label} (${setting.name})`}>
                <select
                  name={setting.name}
                  disabled={props.disabled}
                  aria-describedby={`${id}-help`}
                  value={shown}
                  onChange={(e) => props.write(setting.name)(e.currentTarget.value || undefined)}
                >
                  <option value="">{SETTINGS.unset}</option>
                  {setting.choices.map((choice) => <option key={choice} value={choice}>{choice}</option>)}
                </select>
              </Field>
              <small id={`${id}-help`}>{help}</small>
            </div>
          )
        }
        return (
          <DraftField
            key={setting.name}
            id={id}
            label={`${label} (${setting.name})`}
            help={help}
            shown={shown}
            disabled={props.disabled}
            required={setting.required === true}
            placeholder={setting.placeholder}
            parse={textOf}
            onValue={props.write(setting.name)}
          />
        )
      })}
    </fieldset>
  )
}

/**
 * The settings fields over the JSON `text` for a `type` channel; `onText` gets the rewritten JSON. `prefix` keeps
 * ids unique per form.
 */
export const SettingsFields = (
  props: { text: string; onText: (text: string) => void; prefix: string; type: string }
) => {
  const parsed = settingsOf(props.text)
  const settings = parsed ?? {}
  const disabled = parsed === undefined
  const write = (name: string) => (value: unknown) => {
    const current = settingsOf(props.text)
    if (current !== undefined) props.onText(withSetting(current, name, value))
  }
  const headers = typeof settings.headers === "object" && settings.headers !== null
    ? Object.entries(settings.headers as Record<string, unknown>).map(([name, value]) => `${name}: ${value}`).join("\n")
    : ""
  return (
    <>
      <TypeFields type={props.type} settings={settings} disabled={disabled} prefix={props.prefix} write={write} />
      <fieldset class="settings">
        <legend>{SETTINGS.legend}</legend>
        {disabled && <p class="note">{SETTINGS.invalidJson}</p>}
        {SETTINGS.timeouts.map(([name, label, help]) => (
          <DraftField
            key={name}
            id={`${props.prefix}-${name}`}
            label={`${label} (${name})`}
            help={help}
            shown={typeof settings[name] === "number" ? String(settings[name]) : ""}
            disabled={disabled}
            parse={wholeMs}
            onValue={write(name)}
          />
        ))}
        {SETTINGS.switches.filter(([name]) => SWITCH_TYPES[name]?.includes(props.type) ?? true).map((
          [name, label, help]
        ) => (
          <div key={name}>
            <Field label={`${label} (${name})`}>
              <select
                name={name}
                disabled={disabled}
                aria-describedby={`${props.prefix}-${name}-help`}
                value={settings[name] === true ? "true" : settings[name] === false ? "false" : ""}
                onChange={(e) => {
                  const value = e.currentTarget.value
                  write(name)(value === "" ? undefined : value === "true")
                }}
              >
                <option value="">{SETTINGS.unset}</option>
                <option value="true">{SETTINGS.on}</option>
                <option value="false">{SETTINGS.off}</option>
              </select>
            </Field>
            <small id={`${props.prefix}-${name}-help`}>{help}</small>
          </div>
        ))}
        <DraftField
          id={`${props.prefix}-headers`}
          label={SETTINGS.headers}
          help={SETTINGS.headersHelp}
          shown={headers}
          disabled={disabled}
          multiline
          parse={headersOf}
          onValue={write("headers")}
        />
        <DraftField
          id={`${props.prefix}-strip_params`}
          label={SETTINGS.strip}
          help={SETTINGS.stripHelp}
          shown={Array.isArray(settings.strip_params) ? settings.strip_params.join(", ") : ""}
          disabled={disabled}
          parse={listOf}
          onValue={write("strip_params")}
        />
        <DraftField
          id={`${props.prefix}-test_model`}
          label={SETTINGS.testModel}
          help={SETTINGS.testModelHelp}
          shown={typeof settings.test_model === "string" ? settings.test_model : ""}
          disabled={disabled}
          parse={textOf}
          onValue={write("test_model")}
        />
      </fieldset>
    </>
  )
}
