/// <reference lib="dom" />
/**
 * The console's language: English (`en`) or Simplified Chinese (`zh-CN`). Chosen once from the browser
 * (`navigator.languages`: the first of them that is English or Chinese decides, any `zh*` giving `zh-CN`; `en`
 * when none is), unless the person chose one in the header, which is kept in `localStorage` under
 * `STORAGE_KEY`. The choice is a signal, so every page that reads a string re-renders when it changes, and
 * `<html lang>` follows it.
 */
import { effect, signal } from "@preact/signals"

/** The languages the console speaks, as BCP 47 tags. */
export const LANGUAGES = ["en", "zh-CN"] as const

/** One of `LANGUAGES`. */
export type Language = typeof LANGUAGES[number]

/** The `localStorage` key that keeps a person's choice (the only thing the console stores). */
export const STORAGE_KEY = "sluice.language"

/** Whether `value` names one of `LANGUAGES` exactly (a stored choice). */
export const isLanguage = (value: unknown): value is Language => LANGUAGES.some((language) => language === value)

/**
 * The language to show: the `stored` choice when it is one of `LANGUAGES`, else the first of the browser's
 * `preferred` languages that is English (`en*` → `en`) or Chinese (`zh*` → `zh-CN`), else `en`.
 */
export const languageOf = (stored: string | null, preferred: ReadonlyArray<string>): Language => {
  if (isLanguage(stored)) return stored
  for (const tag of preferred) {
    const lower = tag.toLowerCase()
    if (lower === "zh" || lower.startsWith("zh-")) return "zh-CN"
    if (lower === "en" || lower.startsWith("en-")) return "en"
  }
  return "en"
}

/** `localStorage`'s stored choice, or `null` where storage is refused (a private window may refuse it). */
const storedChoice = (): string | null => {
  try {
    return globalThis.localStorage?.getItem(STORAGE_KEY) ?? null
  } catch {
    return null
  }
}

/** The language the console shows now. */
export const language = signal<Language>(
  languageOf(storedChoice(), typeof navigator === "undefined" ? [] : navigator.languages ?? [navigator.language])
)

/** Switches the console to `next` and keeps the choice for the next visit. */
export const chooseLanguage = (next: Language): void => {
  try {
    localStorage.setItem(STORAGE_KEY, next)
  } catch {
    // Storage refused: the choice holds for this page only.
  }
  language.value = next
}

// `<html lang>` follows the choice (outside a page, as in a plain Deno test, there is no document).
if (typeof document !== "undefined") {
  effect(() => {
    document.documentElement.lang = language.value
  })
}
