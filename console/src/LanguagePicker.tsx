/**
 * The language control of the header and the sign-in page: a labelled `<select>` of the languages the console
 * speaks, each named in its own language (and marked with its `lang`); choosing one switches every page at once
 * and keeps the choice (`i18n/language.ts`).
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
    {LANGUAGES.map((tag) => <option key={tag} value={tag} lang={tag}>{APP.languageNames[tag]}</option>)}
  </select>
)
