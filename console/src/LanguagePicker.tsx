/**
 * The language control of the header and the sign-in page: a labelled `<select>` of the languages the console
 * speaks, each shown short (`EN`, `中文`, so the header keeps to one line at 1280 px) and named in full in its own
 * language in its title (marked with its `lang`); choosing one switches every page at once and keeps the
 * choice (`i18n/language.ts`).
 */
import { chooseLanguage, isLanguage, language, LANGUAGES } from "./i18n/language.ts"
import { APP } from "./strings.ts"

/** The language `<select>`. */
export const LanguagePicker = () => (
  <select
    class="language"
    name="language"
    aria-label={APP.language}
    title={APP.language}
    value={language.value}
    onChange={(event) => {
      const chosen = event.currentTarget.value
      if (isLanguage(chosen)) chooseLanguage(chosen)
    }}
  >
    {LANGUAGES.map((tag) => (
      <option key={tag} value={tag} lang={tag} title={APP.languageNames[tag]}>
        {APP.languageShort[tag]}
      </option>
    ))}
  </select>
)
