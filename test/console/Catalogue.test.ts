/**
 * The console's catalogue (`console/src/i18n/`): every key of the English catalogue is in the Simplified Chinese one
 * (and no key is there that English lacks), nested sections and lists alike; no string of either is empty or only
 * spaces, and every sentence function answers words in both; a list keeps its length and its setting names; the
 * Chinese words really are Chinese where English is a sentence. The language is chosen from the browser as the
 * brief says (`zh*` → `zh-CN`, else `en`), and a kept choice wins.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { type Catalogue, en } from "../../console/src/i18n/en.ts"
import { languageOf } from "../../console/src/i18n/language.ts"
import { zhCN } from "../../console/src/i18n/zhCN.ts"

/** Every leaf of a catalogue as `path → value` (functions kept, arrays indexed). */
const leaves = (value: unknown, path = ""): Map<string, unknown> => {
  const out = new Map<string, unknown>()
  if (typeof value === "object" && value !== null) {
    for (const [key, child] of Object.entries(value)) {
      for (const [leaf, found] of leaves(child, path === "" ? key : `${path}.${key}`)) out.set(leaf, found)
    }
  } else out.set(path, value)
  return out
}

const english = leaves(en)
const chinese = leaves(zhCN)

/** A function's words, called with `1` for each parameter (every parameter is a number, a string or a flag). */
const said = (fn: (...args: Array<unknown>) => unknown) => fn(...Array.from({ length: fn.length }, () => 1))

Deno.test("console catalogue: zh-CN has every key of en and no other", () => {
  const missing = [...english.keys()].filter((key) => !chinese.has(key))
  const extra = [...chinese.keys()].filter((key) => !english.has(key))
  deepStrictEqual(missing, [], "keys of en missing in zh-CN")
  deepStrictEqual(extra, [], "keys of zh-CN that en does not have")
  ok(english.size > 500, `the catalogue holds the console's words (${english.size} entries)`)
})

Deno.test("console catalogue: no string is empty, and each sentence function answers words in both languages", () => {
  for (const [name, catalogue] of [["en", english], ["zh-CN", chinese]] as const) {
    for (const [key, value] of catalogue) {
      if (typeof value === "function") {
        strictEqual(value.length, (english.get(key) as (...args: Array<unknown>) => unknown).length, `${key} arity`)
        const words = said(value as (...args: Array<unknown>) => unknown)
        ok(typeof words === "string" && words.trim() !== "", `${name} ${key}() answers words: ${String(words)}`)
      } else {
        ok(typeof value === "string" && value.trim() !== "", `${name} ${key} is words: ${JSON.stringify(value)}`)
      }
    }
  }
})

Deno.test("console catalogue: the settings keep their names; sentences are translated", () => {
  for (const list of ["timeouts", "switches"] as const) {
    strictEqual(zhCN.SETTINGS[list].length, en.SETTINGS[list].length)
    zhCN.SETTINGS[list].forEach((row, index) => strictEqual(row[0], en.SETTINGS[list][index][0]))
  }
  const han = /\p{Script=Han}/u
  const sentences = [...english].filter(([, value]) => typeof value === "string" && /^[A-Z][a-z]+ [a-z]+ /.test(value))
  ok(sentences.length > 100, `${sentences.length} English sentences`)
  const untranslated = sentences.filter(([key]) => !han.test(String(chinese.get(key))))
  deepStrictEqual(untranslated.map(([key]) => key), [], "every English sentence has Chinese words")
  // Counts are formatted through Intl, plurals through Intl.PluralRules.
  strictEqual(en.CHANNELS.bulkDone(1, 0), "Done for 1 channel.")
  strictEqual(en.CHANNELS.bulkDone(1200, 3), "Done for 1,200 channels; 3 failed.")
  strictEqual(zhCN.CHANNELS.bulkDone(1200, 0), "已完成 1,200 个渠道。")
  strictEqual(en.COMMON.count(1234567), "1,234,567")
})

Deno.test("console language: chosen from the browser (zh* is zh-CN, else en), a kept choice first", () => {
  strictEqual(languageOf(null, ["zh-CN", "en"]), "zh-CN")
  strictEqual(languageOf(null, ["zh-TW"]), "zh-CN")
  strictEqual(languageOf(null, ["zh"]), "zh-CN")
  strictEqual(languageOf(null, ["fr-FR", "zh-Hans-CN", "en"]), "zh-CN", "the first English or Chinese one decides")
  strictEqual(languageOf(null, ["en-GB", "zh-CN"]), "en")
  strictEqual(languageOf(null, ["fr", "de"]), "en")
  strictEqual(languageOf(null, []), "en")
  strictEqual(languageOf("en", ["zh-CN"]), "en", "the kept choice wins over the browser")
  strictEqual(languageOf("zh-CN", ["en-US"]), "zh-CN")
  strictEqual(languageOf("klingon", ["zh-CN"]), "zh-CN", "a stored value that is no language is ignored")
})

// A catalogue that lacks a key of en is not a `Catalogue`: the compiler refuses it (`deno task check` runs this file).
const { signOut: _dropped, ...withoutSignOut } = zhCN.APP
// @ts-expect-error `APP.signOut` is missing
const _incomplete: Catalogue = { ...zhCN, APP: withoutSignOut }
