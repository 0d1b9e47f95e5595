/**
 * Groups and pricing, for admins: each group's price ratio and rate limits
 * (`GET`/`PUT /api/group`), and each model's prices (`GET`/`PUT
 * /api/pricing`): tokens in USD per 1M tokens, images in USD per image, video
 * in USD per second, its image family and whether an unpriced model is free.
 * A model's prices are replaced whole when saved; a restart re-applies the
 * bootstrap file's groups and models over what was set here.
 */
import { useEffect, useState } from "preact/hooks"
import { IMAGE_FAMILIES } from "../../src/formats/images/ImageFamilies.ts"
import { api, wordsOf } from "./api.ts"
import { PRICING } from "./strings.ts"
import { ErrorText, Field, TableScroll } from "./ui.tsx"

/** A group as `/api/group` answers it. */
interface Group {
  readonly name: string
  readonly ratio: number
  readonly limits?: { readonly rpm?: number; readonly tpm?: number; readonly concurrency?: number }
}

/** A model's prices as `/api/pricing` answers it (absent = none). */
interface Price {
  readonly model: string
  readonly input?: number
  readonly output?: number
  readonly cached_input?: number
  readonly cache_write?: number
  readonly per_image?: number
  readonly per_second?: number
  readonly per_1m_characters?: number
  readonly per_search?: number
  readonly audio_input?: number
  readonly audio_output?: number
  readonly cached_audio_input?: number
  readonly family?: string
  readonly free?: boolean
}

/** The price fields, in the order the form shows them; each one's label is `PRICING.fields[name]`. */
const PRICE_FIELDS = [
  "input",
  "output",
  "cached_input",
  "cache_write",
  "per_image",
  "per_second",
  "per_1m_characters",
  "per_search",
  "audio_input",
  "audio_output",
  "cached_audio_input"
] as const

type PriceField = typeof PRICE_FIELDS[number]

/** A typed amount: `undefined` when empty, `null` when not a number ≥ 0, else the number. */
const amountOf = (text: string): number | null | undefined => {
  if (text.trim() === "") return undefined
  return /^\s*\d{1,12}(\.\d{1,12})?\s*$/.test(text) ? Number(text) : null
}

/** A whole count (rate limit): `undefined` when empty, `null` when not a whole number ≥ 0. */
const countOf = (text: string): number | null | undefined => {
  if (text.trim() === "") return undefined
  return /^\s*\d{1,9}\s*$/.test(text) ? Number(text) : null
}

const textOf = (value: number | undefined) => value === undefined ? "" : String(value)

/** The form that adds a group or changes one (`PUT /api/group`). */
const GroupForm = (props: { group: Group | null; onSaved: () => void }) => {
  const start = props.group
  const [name, setName] = useState(start?.name ?? "")
  const [ratio, setRatio] = useState(textOf(start?.ratio))
  const [rpm, setRpm] = useState(textOf(start?.limits?.rpm))
  const [tpm, setTpm] = useState(textOf(start?.limits?.tpm))
  const [concurrency, setConcurrency] = useState(textOf(start?.limits?.concurrency))
  const [error, setError] = useState<string | null>(null)
  const [done, setDone] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    setDone(null)
    const value = amountOf(ratio)
    if (value === undefined || value === null) {
      return setError(PRICING.ratioNumber)
    }
    const limits: Record<string, number> = {}
    for (const [key, text] of [["rpm", rpm], ["tpm", tpm], ["concurrency", concurrency]] as const) {
      const count = countOf(text)
      if (count === null) return setError(PRICING.limitWhole(key))
      if (count !== undefined) limits[key] = count
    }
    try {
      await api("PUT", "/api/group", { name, ratio: value, ...(Object.keys(limits).length > 0 ? { limits } : {}) })
      setDone(PRICING.savedGroup(name))
      props.onSaved()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form class="panel" onSubmit={submit} aria-label={PRICING.group}>
      <h2>{start === null ? PRICING.addGroup : PRICING.changeGroup(start.name)}</h2>
      <Field label={PRICING.groupName}>
        <input
          name="group"
          required
          value={name}
          readOnly={start !== null}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </Field>
      <Field label={PRICING.ratio}>
        <input
          name="ratio"
          inputMode="decimal"
          required
          value={ratio}
          onInput={(e) => setRatio(e.currentTarget.value)}
        />
      </Field>
      <Field label={PRICING.rpm}>
        <input name="rpm" inputMode="numeric" value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} />
      </Field>
      <Field label={PRICING.tpm}>
        <input name="tpm" inputMode="numeric" value={tpm} onInput={(e) => setTpm(e.currentTarget.value)} />
      </Field>
      <Field label={PRICING.concurrency}>
        <input
          name="concurrency"
          inputMode="numeric"
          value={concurrency}
          onInput={(e) => setConcurrency(e.currentTarget.value)}
        />
      </Field>
      <ErrorText error={error} />
      {done && <p role="status">{done}</p>}
      <button type="submit">{PRICING.saveGroup}</button>
    </form>
  )
}

/** The form that prices a model or changes its prices (`PUT /api/pricing`, replaced whole). */
const PriceForm = (props: { price: Price | null; onSaved: () => void }) => {
  const start = props.price
  const [model, setModel] = useState(start?.model ?? "")
  const [amounts, setAmounts] = useState<Record<PriceField, string>>({
    input: textOf(start?.input),
    output: textOf(start?.output),
    cached_input: textOf(start?.cached_input),
    cache_write: textOf(start?.cache_write),
    per_image: textOf(start?.per_image),
    per_second: textOf(start?.per_second),
    per_1m_characters: textOf(start?.per_1m_characters),
    per_search: textOf(start?.per_search),
    audio_input: textOf(start?.audio_input),
    audio_output: textOf(start?.audio_output),
    cached_audio_input: textOf(start?.cached_audio_input)
  })
  const [family, setFamily] = useState(start?.family ?? "")
  const [free, setFree] = useState(start?.free === true)
  const [error, setError] = useState<string | null>(null)
  const [done, setDone] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    setDone(null)
    const body: Record<string, unknown> = { model }
    for (const name of PRICE_FIELDS) {
      const value = amountOf(amounts[name])
      if (value === null) return setError(PRICING.amountNumber(PRICING.fields[name]))
      if (value !== undefined) body[name] = value
    }
    if (family !== "") body.family = family
    if (free) body.free = true
    try {
      await api("PUT", "/api/pricing", body)
      setDone(PRICING.savedPrices(model))
      props.onSaved()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form class="panel" onSubmit={submit} aria-label={PRICING.prices}>
      <h2>{start === null ? PRICING.priceModel : PRICING.changePrices(start.model)}</h2>
      <Field label={PRICING.model}>
        <input
          name="model"
          required
          value={model}
          readOnly={start !== null}
          onInput={(e) => setModel(e.currentTarget.value)}
        />
      </Field>
      {PRICE_FIELDS.map((name) => (
        <Field key={name} label={PRICING.fields[name]}>
          <input
            name={name}
            inputMode="decimal"
            value={amounts[name]}
            onInput={(e) => setAmounts({ ...amounts, [name]: e.currentTarget.value })}
          />
        </Field>
      ))}
      <Field label={PRICING.family}>
        <select name="family" value={family} onChange={(e) => setFamily(e.currentTarget.value)}>
          <option value="">{PRICING.fromName}</option>
          {IMAGE_FAMILIES.map((name) => <option key={name} value={name}>{name}</option>)}
        </select>
      </Field>
      <label class="check">
        <input type="checkbox" name="free" checked={free} onChange={(e) => setFree(e.currentTarget.checked)} />{" "}
        {PRICING.free}
      </label>
      <ErrorText error={error} />
      {done && <p role="status">{done}</p>}
      <button type="submit">{PRICING.savePrices}</button>
    </form>
  )
}

const money = (value: number | undefined, unit: string) => value === undefined ? "—" : `${value} ${unit}`

/** The groups and pricing page. */
export const Pricing = () => {
  const [groups, setGroups] = useState<ReadonlyArray<Group> | null>(null)
  const [prices, setPrices] = useState<ReadonlyArray<Price> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [group, setGroup] = useState<{ readonly item: Group | null; readonly version: number }>({
    item: null,
    version: 0
  })
  const [price, setPrice] = useState<{ readonly item: Price | null; readonly version: number }>({
    item: null,
    version: 0
  })
  const load = () => {
    api<ReadonlyArray<Group>>("GET", "/api/group").then(setGroups, (caught) => setError(wordsOf(caught)))
    api<ReadonlyArray<Price>>("GET", "/api/pricing").then(setPrices, (caught) => setError(wordsOf(caught)))
  }
  useEffect(load, [])
  return (
    <section>
      <h1>{PRICING.title}</h1>
      <ErrorText error={error} />
      <TableScroll label={PRICING.groupsCaption(groups?.length ?? 0)}>
        <table>
          <caption>{PRICING.groupsCaption(groups?.length ?? 0)}</caption>
          <thead>
            <tr>
              <th scope="col">{PRICING.groupColumns.group}</th>
              <th scope="col">{PRICING.groupColumns.ratio}</th>
              <th scope="col">{PRICING.groupColumns.rpm}</th>
              <th scope="col">{PRICING.groupColumns.tpm}</th>
              <th scope="col">{PRICING.groupColumns.concurrency}</th>
              <th scope="col">{PRICING.groupColumns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {groups?.map((item) => (
              <tr key={item.name}>
                <td>{item.name}</td>
                <td data-testid="group-ratio">×{item.ratio}</td>
                <td>{item.limits?.rpm ?? PRICING.noLimit}</td>
                <td>{item.limits?.tpm ?? PRICING.noLimit}</td>
                <td>{item.limits?.concurrency ?? PRICING.noLimit}</td>
                <td>
                  <button
                    type="button"
                    aria-label={PRICING.editGroup(item.name)}
                    onClick={() => setGroup({ item, version: group.version + 1 })}
                  >
                    {PRICING.edit}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <GroupForm key={`group-${group.version}`} group={group.item} onSaved={load} />
      {group.item !== null && (
        <button
          type="button"
          onClick={() => setGroup({ item: null, version: group.version + 1 })}
        >
          {PRICING.addGroupInstead}
        </button>
      )}
      <TableScroll label={PRICING.pricesCaption(prices?.length ?? 0)}>
        <table>
          <caption>{PRICING.pricesCaption(prices?.length ?? 0)}</caption>
          <thead>
            <tr>
              <th scope="col">{PRICING.priceColumns.model}</th>
              {PRICE_FIELDS.map((name) => <th key={name} scope="col">{PRICING.priceColumns[name]}</th>)}
              <th scope="col">{PRICING.priceColumns.family}</th>
              <th scope="col">{PRICING.priceColumns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {prices?.map((item) => (
              <tr key={item.model}>
                <td>{item.model}{item.free === true ? PRICING.freeMark : ""}</td>
                <td data-testid="price-input">{money(item.input, PRICING.units.perMillion)}</td>
                <td data-testid="price-output">{money(item.output, PRICING.units.perMillion)}</td>
                <td>{money(item.cached_input, PRICING.units.perMillion)}</td>
                <td>{money(item.cache_write, PRICING.units.perMillion)}</td>
                <td>{money(item.per_image, PRICING.units.perImage)}</td>
                <td>{money(item.per_second, PRICING.units.perSecond)}</td>
                <td>{money(item.per_1m_characters, PRICING.units.perCharacters)}</td>
                <td>{money(item.per_search, PRICING.units.perSearch)}</td>
                <td>{money(item.audio_input, PRICING.units.perMillion)}</td>
                <td>{money(item.audio_output, PRICING.units.perMillion)}</td>
                <td>{money(item.cached_audio_input, PRICING.units.perMillion)}</td>
                <td>{item.family ?? PRICING.fromName}</td>
                <td>
                  <button
                    type="button"
                    aria-label={PRICING.editPrices(item.model)}
                    onClick={() => setPrice({ item, version: price.version + 1 })}
                  >
                    {PRICING.edit}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <PriceForm key={`price-${price.version}`} price={price.item} onSaved={load} />
      {price.item !== null && (
        <button
          type="button"
          onClick={() => setPrice({ item: null, version: price.version + 1 })}
        >
          {PRICING.anotherInstead}
        </button>
      )}
    </section>
  )
}
