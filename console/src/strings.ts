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

/**
 * The channel form's settings fields: each one's label (with the bootstrap file's name under `settings`) and help.
 * The JSON view of the same settings stays, as the advanced view.
 */
export const SETTINGS = {
  legend: "Channel settings",
  invalidJson: "The settings JSON below is not a JSON object; fix it there to use these fields.",
  advanced: "Settings (JSON, the advanced view: every field above, and the same names as the bootstrap file)",
  whole: "must be a whole number of milliseconds, 0 or more",
  headerLine: (line: string) => `“${line}” is not “Name: value”`,
  unset: "default",
  on: "on",
  off: "off",
  timeouts: [
    ["connect_timeout_ms", "Connect timeout, ms", "How long to wait for the upstream's connection."],
    [
      "first_byte_timeout_ms",
      "First byte timeout, ms",
      "How long to wait for the answer to begin (then the next channel)."
    ],
    ["idle_timeout_ms", "Idle timeout, ms", "The longest silence inside a streamed answer."],
    ["total_timeout_ms", "Total timeout, ms", "The longest a whole request may take."]
  ],
  switches: [
    [
      "responses_api",
      "Responses API",
      "The upstream has /v1/responses (openai channels); otherwise via chat completions."
    ],
    [
      "responses_websocket",
      "Responses over WebSocket",
      "With the Responses API: a client's Responses socket reaches the upstream over its own socket."
    ],
    ["responses_compact", "Responses compact", "The upstream has /v1/responses/compact."],
    ["auto_disable", "Auto-disable", "Disable a key the upstream refuses (401, 403, no quota)."],
    [
      "inline_images",
      "Inline images",
      "Send images (and on gemini files) as Base64: URLs are downloaded by the gateway."
    ],
    ["forward_store", "Forward store", "Forward the caller's store flag (default on)."]
  ],
  headers: "Extra headers, one “Name: value” a line (headers)",
  headersHelp: "Sent with every request to this channel; saved values are shown masked and kept when left so.",
  strip: "Strip params, comma-separated (strip_params)",
  stripHelp: "Request fields removed before the request goes upstream, such as temperature.",
  testModel: "Test model (test_model)",
  testModelHelp: "The model a channel test asks; the first model when empty."
} as const

/** The audit page's filters. */
export const AUDIT = {
  filters: "Filter changes",
  action: "Action (or a prefix such as channel.)",
  actor: "Who (username)",
  target: "Target contains",
  order: "Order",
  newest: "newest first",
  oldest: "oldest first",
  caption: (total: number, oldest: boolean) => `Changes (${total}), ${oldest ? "oldest" : "newest"} first`
} as const

/** The usage-log pages' new words. */
export const LOGS = {
  status: "Outcome",
  success: "succeeded (2xx)",
  failed: "failed"
} as const
