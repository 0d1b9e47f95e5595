/**
 * The console's words, one catalogue per page, so that a translation replaces
 * them in one place. Pages written before this catalogue keep theirs inline;
 * new strings go here. A function takes the values a sentence shows.
 */

/** The list controls every list shares: sorting, paging, selecting. */
export const LIST = {
  sortBy: (column: string, order: "ascending" | "descending" | "none") =>
    order === "none" ? `Sort by ${column}` : `Sort by ${column}, now ${order}`,
  any: "Any",
  enabled: "enabled",
  disabled: "disabled",
  search: "Search",
  clear: "Clear filters",
  pageSize: "Rows per page",
  answeredIn: (ms: number) => `Listed in ${ms} ms.`
} as const

/** The channels page. */
export const CHANNELS = {
  title: "Channels",
  caption: (total: number) => `Channels (${total}); keys are never shown in full`,
  filters: "Filter channels",
  keyword: "Name or base URL contains",
  status: "Status",
  type: "Type",
  group: "Group",
  model: "Model",
  select: (name: string) => `Select ${name}`,
  selectPage: "Select every channel on this page",
  selected: (count: number) => `${count} selected`,
  bulk: "Selected channels",
  enableSelected: "Enable selected",
  disableSelected: "Disable selected",
  testSelected: "Test selected",
  bulkDone: (done: number, failed: number) =>
    failed === 0 ? `Done for ${done} channels.` : `Done for ${done} channels; ${failed} failed.`,
  pages: "Channel pages",
  columns: {
    name: "Name",
    type: "Type",
    models: "Models",
    groups: "Groups",
    priority: "Priority / weight",
    status: "Status",
    health: "Health",
    keys: "Keys",
    tested: "Last test (latency or error)",
    actions: "Actions"
  }
} as const

/** The users page's new words. */
export const USERS = {
  filters: "Search users",
  keyword: "Name contains",
  keywordHelp: "Matches the username, the display name or the e-mail address.",
  role: "Role",
  status: "Status",
  group: "Group"
} as const

/** The navigation. */
export const NAV = {
  pages: "Pages",
  menu: "Menu",
  closeMenu: "Close menu"
} as const

/** A request's story, opened from a usage-log row. */
export const STORY = {
  open: (id: string) => `Details of request ${id}`,
  openShort: "Details",
  close: "Close",
  title: (id: string) => `Request ${id}`,
  grep: "The request id, as the access log and the answer's x-request-id header carry it:",
  path: "Failover path",
  pathNone: "no channel answered",
  total: "Charged in all",
  prices: "List prices now (USD per 1M tokens; the charge used the prices and group ratio of its time)",
  notPriced: "not priced",
  free: "free",
  attempts: "Attempts",
  columns: {
    attempt: "Attempt",
    channel: "Channel",
    status: "Status",
    failure: "Failure",
    latency: "Latency",
    input: "Input tokens (cached)",
    output: "Output tokens (reasoning)",
    audio: "Audio in / out",
    cost: "Cost"
  },
  adjustment: "adjustment",
  loading: "Loading…"
} as const
