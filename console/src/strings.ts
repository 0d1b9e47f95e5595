/**
 * The console's words, through one catalogue: `i18n/en.ts` (English, the source) and `i18n/zhCN.ts` (Simplified
 * Chinese, typed against it, so a missing key is a type error). Each section exported here (`CHANNELS`, `KEYS`, …)
 * reads the current language's words on every access, so a page that shows `CHANNELS.title` while rendering
 * re-renders in the other language when the person switches (`i18n/language.ts`). New words go into both
 * catalogues, in the page's section.
 */
import { type Catalogue, en } from "./i18n/en.ts"
import { language } from "./i18n/language.ts"
import { zhCN } from "./i18n/zhCN.ts"

/** Every language's catalogue, by its tag. */
export const CATALOGUES = { en, "zh-CN": zhCN } as const satisfies Record<string, Catalogue>

/** The current language's catalogue (reading it subscribes a rendering component to the language). */
export const words = (): Catalogue => CATALOGUES[language.value]

/** A section whose every key reads the current language's words when it is read. */
const live = <K extends keyof Catalogue>(section: K): Catalogue[K] =>
  Object.defineProperties(
    {},
    Object.fromEntries(
      Object.keys(en[section]).map((key) => [
        key,
        { enumerable: true, get: () => (words()[section] as Record<string, unknown>)[key] }
      ])
    )
  ) as Catalogue[K]

/** The app's frame. */
export const APP = live("APP")
/** The navigation. */
export const NAV = live("NAV")
/** Pieces every page uses. */
export const COMMON = live("COMMON")
/** A chart figure. */
export const CHART = live("CHART")
/** The list controls every list shares. */
export const LIST = live("LIST")
/** The sign-in page. */
export const SIGNIN = live("SIGNIN")
/** The dashboard. */
export const DASHBOARD = live("DASHBOARD")
/** The API keys page. */
export const KEYS = live("KEYS")
/** The budgets editor. */
export const BUDGETS = live("BUDGETS")
/** The account page. */
export const ACCOUNT = live("ACCOUNT")
/** The usage-log pages. */
export const LOGS = live("LOGS")
/** A request's story. */
export const STORY = live("STORY")
/** The audit page. */
export const AUDIT = live("AUDIT")
/** The playground's chat. */
export const PLAYGROUND = live("PLAYGROUND")
/** The playground's image and video modes and task list. */
export const TASKS = live("TASKS")
/** The tasks page. */
export const TASK_LIST = live("TASK_LIST")
/** The batches page. */
export const BATCHES = live("BATCHES")
/** The files page. */
export const FILES = live("FILES")
/** The webhooks page. */
export const WEBHOOKS = live("WEBHOOKS")
/** The channels page. */
export const CHANNELS = live("CHANNELS")
/** The channel form. */
export const CHANNEL_FORM = live("CHANNEL_FORM")
/** A channel type's key hints and the key parser's complaints. */
export const CHANNEL_KEYS = live("CHANNEL_KEYS")
/** The channel form's settings fields. */
export const SETTINGS = live("SETTINGS")
/** The users page. */
export const USERS = live("USERS")
/** The groups and pricing page. */
export const PRICING = live("PRICING")
/** The health page. */
export const HEALTH = live("HEALTH")
