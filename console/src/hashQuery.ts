/// <reference lib="dom" />
/**
 * A list's view kept in the URL: the query after `?` in the hash
 * (`#/channels?page=2&status=disabled&sort=name&order=desc`), read when the
 * page opens and written back (without a new history entry) as the view
 * changes, so a reload or a shared link shows the same rows.
 */
import { useState } from "preact/hooks"

/** The query of the current hash (empty when it has none). */
export const hashQuery = (): URLSearchParams => {
  const index = location.hash.indexOf("?")
  return new URLSearchParams(index < 0 ? "" : location.hash.slice(index + 1))
}

/** Replaces the hash's query with `view`'s non-empty values, keeping the page name. */
export const writeHashQuery = (view: Readonly<Record<string, string>>): void => {
  const name = location.hash.replace(/\?.*$/, "") || "#/"
  const query = new URLSearchParams(Object.entries(view).filter(([, value]) => value !== ""))
  const text = query.toString()
  history.replaceState(history.state, "", text === "" ? name : `${name}?${text}`)
}

/**
 * A list's view (`defaults`' keys, each a string) read from the hash's query,
 * and a setter that merges a change, writes it to the hash and answers the new
 * view. `page` goes back to `1` when anything but `page` changes.
 */
export const useHashView = <K extends string>(
  defaults: Readonly<Record<K, string>>
): [Readonly<Record<K, string>>, (change: Partial<Record<K, string>>) => void] => {
  const [view, setView] = useState<Readonly<Record<K, string>>>(() => {
    const query = hashQuery()
    const read: Record<K, string> = { ...defaults }
    for (const key of Object.keys(defaults) as Array<K>) {
      const value = query.get(key)
      if (value !== null) read[key] = value
    }
    return read
  })
  const change = (patch: Partial<Record<K, string>>) => {
    const resetsPage = Object.keys(patch).some((key) => key !== "page") && "page" in defaults
    const next = { ...view, ...(resetsPage ? { page: "1" } : {}), ...patch } as Record<K, string>
    setView(next)
    const written: Record<string, string> = {}
    for (const key of Object.keys(next) as Array<K>) {
      if (next[key] !== defaults[key]) written[key] = next[key]
    }
    writeHashQuery(written)
  }
  return [view, change]
}

/** The list query for `/api/*` of `view`: its non-empty values, URL-encoded. */
export const apiQuery = (view: Readonly<Record<string, string>>): string =>
  new URLSearchParams(Object.entries(view).filter(([, value]) => value !== "")).toString()

/** A UTC date (`YYYY-MM-DD`) as epoch seconds at its start, `""` when empty or not a date. */
const dayStart = (date: string): string => {
  const millis = Date.parse(`${date}T00:00:00Z`)
  return date === "" || Number.isNaN(millis) ? "" : String(millis / 1000)
}

/**
 * A list's date range (UTC dates `from` and `to`, `to` included; either may be empty) as the API's
 * `start_timestamp` (inclusive) and `end_timestamp` (exclusive), epoch seconds, `""` where not set.
 */
export const dayRange = (from: string, to: string): { start_timestamp: string; end_timestamp: string } => {
  const end = dayStart(to)
  return { start_timestamp: dayStart(from), end_timestamp: end === "" ? "" : String(Number(end) + 86_400) }
}
