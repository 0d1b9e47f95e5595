/**
 * The console's words in English: the source catalogue, one section per page or shared piece. Every other
 * language is typed against it (`Catalogue`), so a key missing there is a type error. A function takes the values
 * a sentence shows; counts go through `Intl` (`Intl.PluralRules` for the plural, `Intl.NumberFormat` for the
 * digits). Values the API names (statuses, roles, kinds, event names) and messages the server sends are shown as
 * they come, in no catalogue.
 */

const numbers = new Intl.NumberFormat("en-US")
const plurals = new Intl.PluralRules("en-US")

/** `count` with the noun in the plural English needs (`1 channel`, `2 channels`), digits grouped. */
const counted = (count: number, one: string, other: string): string =>
  `${numbers.format(count)} ${plurals.select(count) === "one" ? one : other}`

/** A budget period as a phrase (`per day`, `in total`). */
const per = (period: string) => period === "total" ? "in total" : `per ${period}`

/** The English catalogue. */
export const en = {
  /** The app's frame: the navigation, the header, the states before a page. */
  APP: {
    pages: {
      dashboard: "Dashboard",
      keys: "API keys",
      logs: "Usage logs",
      playground: "Playground",
      batches: "Batches",
      files: "Files",
      tasks: "Tasks",
      webhooks: "Webhooks",
      account: "Account",
      channels: "Channels",
      health: "Health",
      users: "Users",
      pricing: "Groups and pricing",
      "all-logs": "All logs",
      audit: "Audit log"
    },
    notFound: "Not found",
    noPage: (name: string) => `There is no page “${name}”.`,
    toDashboard: "Go to the dashboard",
    afterLink: ".",
    title: (page: string) => `${page} · Sluice`,
    signInTitle: "Sign in · Sluice",
    loading: "Loading…",
    skip: "Skip to content",
    signOut: "Sign out",
    language: "Language",
    languageNames: { en: "English", "zh-CN": "简体中文" },
    languageShort: { en: "EN", "zh-CN": "中文" }
  },
  /** The navigation. */
  NAV: {
    pages: "Pages",
    menu: "Menu",
    closeMenu: "Close menu"
  },
  /** Pieces every page uses. */
  COMMON: {
    never: "never",
    /** A whole number with the language's digit grouping. */
    count: (value: number) => numbers.format(value),
    previous: "Previous",
    next: "Next",
    pageOf: (page: number, pages: number) => `Page ${page} of ${pages}`,
    unreachable: "The gateway cannot be reached.",
    unreadable: (status: number) => `The gateway answered ${status} without a readable body.`,
    answered: (status: number) => `The gateway answered ${status}.`,
    deleted: "(deleted)"
  },
  /** A chart figure. */
  CHART: {
    failed: "The chart could not be loaded.",
    noData: "No data",
    nothing: "Nothing to show in this window.",
    day: "Day (UTC)",
    time: "Time (UTC)"
  },
  /** The list controls every list shares: sorting, paging, selecting. */
  LIST: {
    sortBy: (column: string, order: "ascending" | "descending" | "none") =>
      order === "none" ? `Sort by ${column}` : `Sort by ${column}, now ${order}`,
    any: "Any",
    enabled: "enabled",
    disabled: "disabled",
    search: "Search",
    clear: "Clear filters",
    pageSize: "Rows per page",
    answeredIn: (ms: number) => `Listed in ${ms} ms.`,
    enableSelected: "Enable selected",
    disableSelected: "Disable selected",
    deleteSelected: "Delete selected",
    deleteConfirm: "Yes, delete them",
    keep: "Keep them",
    selected: (count: number) => `${numbers.format(count)} selected`
  },
  /** The sign-in page and the identity-provider buttons. */
  SIGNIN: {
    providerFailed: "The sign-in with the provider failed.",
    providers: "Identity providers",
    withProvider: (verb: string, provider: string) => `${verb} with ${provider}`,
    username: "Username",
    password: "Password",
    signIn: "Sign in",
    link: "Link",
    hintBefore: "First start: sign in as ",
    hintMiddle: " with the password from ",
    hintAfter: " or the one printed once to the gateway's log, then change it under Account."
  },
  /** The dashboard. */
  DASHBOARD: {
    title: "Dashboard",
    chartTitle: "Spend per day by model, last 30 UTC days",
    inAll: (amount: string) => `${amount} in all`,
    chartEmpty: "No usage in the last 30 days.",
    balance: "Balance",
    today: "Spent today",
    week: "Spent, 7 days",
    month: "Spent, 30 days",
    requests: "Requests, 30 days",
    total: "Spent in all",
    chartHeading: "Spend per day by model",
    loading: "Loading…"
  },
  /** The API keys page. */
  KEYS: {
    filters: "Filter keys",
    keyword: "Name contains, or key starts with",
    status: "Status",
    group: "Group",
    model: "Model on the key's list",
    select: (name: string) => `Select ${name}`,
    selectPage: "Select every key on this page",
    bulk: "Selected keys",
    bulkDone: (done: number, failed: number) =>
      failed === 0
        ? `Done for ${counted(done, "key", "keys")}.`
        : `Done for ${counted(done, "key", "keys")}; ${numbers.format(failed)} failed.`,
    deleteQuestion: (count: number) => `Revoke ${counted(count, "key", "keys")}? Requests with them fail at once.`,
    title: "API keys",
    none: "none",
    budget: (spent: string, amount: number, period: string) => `$${spent} of $${amount} ${per(period)}`,
    resets: (time: string) => `, resets ${time}`,
    limitLabels: { rpm: "requests per minute", tpm: "tokens per minute", concurrency: "requests at once" },
    limitWhole: (limit: string) => `The ${limit} limit must be a whole number (empty: no limit).`,
    limitField: (prefix: string, limit: string) => `${prefix}Limit: ${limit} (empty: no limit)`,
    perMinute: (count: number) => `${count} requests/min`,
    tokensPerMinute: (count: number) => `${count} tokens/min`,
    atOnce: (count: number) => `${count} at once`,
    quotaUsd: "The quota must be an amount in USD, such as 5 or 0.25.",
    create: "Create a key",
    name: "Name",
    quota: "Quota in USD (empty: no limit)",
    expires: "Expires (UTC date; empty: never)",
    models: "Models, comma-separated (empty: every model of your group)",
    ips: "Allowed addresses or CIDR ranges, comma-separated (empty: anywhere)",
    beingCreated: "the key being created",
    createButton: "Create key",
    copied: "Copied.",
    copyRefused: "Copying was refused by the browser; select the key and copy it.",
    newTitle: "Your new key",
    onlyOnce: "This is the only time the full key is shown. Copy it now.",
    newKey: "New key",
    copy: "Copy",
    done: "Done",
    playground: "no key: the playground's, used by your browser session",
    noLimit: "no limit",
    all: "all",
    edit: (name: string) => `Edit key ${name}`,
    editQuota: "Quota in USD",
    editExpires: "Expires (UTC date)",
    editModels: "Models (empty: all)",
    save: "Save",
    cancel: "Cancel",
    confirmRevoke: (name: string) => `Confirm revoking ${name}`,
    revokeQuestion: (name: string) => `Revoke ${name}? Requests with it fail at once.`,
    revoke: "Revoke",
    keep: "Keep",
    editShort: "Edit",
    enable: "Enable",
    disable: "Disable",
    named: (verb: string, name: string) => `${verb} ${name}`,
    caption: (total: number) => `Your keys (${total})`,
    columns: {
      name: "Name",
      key: "Key",
      status: "Status",
      quota: "Quota left",
      used: "Used",
      models: "Models",
      expires: "Expires",
      limits: "Rate limits",
      budgets: "Budgets",
      actions: "Actions"
    },
    pages: "Key pages"
  },
  /** The budgets editor of a key's and a user's form. */
  BUDGETS: {
    amount: (period: string) => `The ${period} budget must be an amount in USD, such as 5 or 0.25 (empty: none).`,
    legend: (owner: string) => `Budgets of ${owner} (USD per period; empty: none)`,
    field: (owner: string, period: string) =>
      `${owner}: ${period === "total" ? "total" : `per ${period}`} budget (USD)`,
    timezone: (owner: string, period: string) => `${owner}: ${period} budget's time zone (empty: UTC)`
  },
  /** The account page. */
  ACCOUNT: {
    title: "Account",
    saved: "Saved.",
    unlinked: (provider: string) => `Unlinked ${provider}.`,
    passwordChanged: "Password changed; your other sessions have ended.",
    username: "Username",
    roleGroup: "Role and group",
    balance: "Balance",
    displayName: "Display name",
    saveName: "Save name",
    password: "Password",
    current: "Current password",
    fresh: "New password (8 characters or more)",
    change: "Change password",
    identities: "Linked identities",
    noIdentity: "No linked identity.",
    unlink: (provider: string) => `Unlink ${provider}`
  },
  /** The usage-log pages' words. */
  LOGS: {
    status: "Outcome",
    success: "succeeded (2xx)",
    failed: "failed",
    deletedChannel: (id: number) => `#${id} (deleted)`,
    exporting: "Exporting…",
    own: "Usage logs",
    all: "All logs",
    filters: "Filters",
    from: "From (UTC date)",
    to: "To (UTC date)",
    model: "Model",
    key: "Key name",
    username: "Username",
    channel: "Channel",
    everyChannel: "every channel",
    filter: "Filter",
    exportCsv: "Export CSV",
    caption: (total: number) => `Requests (${total})`,
    columns: {
      time: "Time",
      user: "User",
      channel: "Channel",
      key: "Key",
      model: "Model",
      tokens: "Tokens in / out",
      cost: "Cost",
      latency: "Latency",
      status: "Status"
    },
    pages: "Log pages"
  },
  /** A request's story, opened from a usage-log row. */
  STORY: {
    open: (id: string) => `Details of request ${id}`,
    openShort: "Details",
    close: "Close",
    title: (id: string) => `Request ${id}`,
    grep: "The request id, as the access log and the answer's x-request-id header carry it:",
    path: "Failover path",
    pathNone: "no channel answered",
    total: "Charged in all",
    prices: "List prices now (USD per 1M tokens; the charge used the prices and group ratio of its time)",
    listed: (input: string, output: string, cachedInput: string, cacheWrite: string) =>
      `input ${input}, output ${output}, cached input ${cachedInput}, cache write ${cacheWrite}`,
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
    /** After an attempt's latency, a streamed answer's time to first token. */
    firstToken: (ms: number) => ` · first token ${ms} ms`,
    loading: "Loading…"
  },
  /** The audit page. */
  AUDIT: {
    title: "Audit log",
    filters: "Filter changes",
    action: "Action (or a prefix such as channel.)",
    actor: "Who (username)",
    target: "Target contains",
    from: "From (UTC date)",
    to: "Until (UTC date, included)",
    order: "Order",
    newest: "newest first",
    oldest: "oldest first",
    caption: (total: number, oldest: boolean) => `Changes (${total}), ${oldest ? "oldest" : "newest"} first`,
    columns: { time: "Time", who: "Who", action: "Action", target: "Target", before: "Before", after: "After" },
    pages: "Audit pages"
  },
  /** The playground's chat. */
  PLAYGROUND: {
    title: "Playground",
    usage: (prompt: number, completion: number, cost: string, channel: string) =>
      `${prompt} prompt + ${completion} completion tokens · cost ${cost} (as charged) · channel ${channel}`,
    unknown: "unknown",
    notYet: "The usage of this answer is not in the log yet; see Usage logs.",
    modes: { chat: "Chat", image: "Image", video: "Video" },
    stopped: "The answer stopped with an error.",
    reading: "Reading the cost from the ledger…",
    noId: "The answer carried no id.",
    hintBefore: "Requests here use your browser session, no key: they are billed to your ",
    hintKey: "Playground",
    hintAfter: " key (listed under API keys, with no key text), at the prices of your group.",
    mode: "Mode",
    chat: "Chat",
    model: "Model",
    noModel: "no model is open to your group",
    conversation: "Conversation",
    you: "You",
    assistant: "Model",
    message: "Message",
    answering: "Answering…",
    send: "Send",
    newConversation: "New conversation"
  },
  /** The tasks page. */
  TASK_LIST: {
    title: "Tasks",
    intro: "Your asynchronous tasks (videos, images made as tasks, Midjourney), searched and sorted on the server. " +
      "The playground shows their previews.",
    filters: "Filter tasks",
    keyword: "Task id starts with, or model contains",
    status: "Status",
    kind: "Kind",
    model: "Model (its exact name)",
    from: "Created from (UTC date)",
    to: "Created until (UTC date, included)",
    statuses: { queued: "queued", in_progress: "in progress", completed: "completed", failed: "failed" },
    kinds: { video: "video", image: "image", midjourney: "Midjourney" },
    caption: (total: number) => `Tasks (${total})`,
    columns: {
      task: "Task",
      kind: "Kind",
      model: "Model",
      status: "Status",
      progress: "Progress",
      created: "Created",
      completed: "Completed",
      cost: "Cost (charged)"
    },
    progressOf: (id: string) => `Progress of task ${id}`,
    pages: "Task pages"
  },
  /** The playground's image and video modes and the task list. */
  TASKS: {
    noRequestId: "The answer carried no request id; see Usage logs.",
    charged: (cost: string) => `cost ${cost} (as charged)`,
    costNotYet: "The cost is not in the log yet; see Usage logs.",
    openImage: (alt: string) => `Open the image (${alt})`,
    none: "none",
    whenDone: "when it is done",
    video: (id: string) => `Video of task ${id}`,
    image: (id: string) => `Image of task ${id}`,
    loading: "Loading…",
    imageOf: (index: number, id: string) => `Image ${index} of task ${id}`,
    title: "Your tasks",
    running: "Tasks are running: the list refreshes every few seconds.",
    caption: (total: number) => `Tasks (${total})`,
    columns: {
      task: "Task",
      kind: "Kind",
      model: "Model",
      status: "Status",
      progress: "Progress",
      created: "Created",
      cost: "Cost (charged)",
      preview: "Preview"
    },
    progressOf: (id: string) => `Progress of task ${id}`,
    pages: "Task pages",
    model: "Model",
    noModel: "no model is open to your group",
    generated: (count: number, rest: string) => `${count} image(s) generated · ${rest}`,
    readingCost: "reading the cost from the ledger…",
    submitted: (id: string) => `Task ${id} submitted: see it below.`,
    imageForm: "Image",
    prompt: "Prompt",
    imageSize: "Size (optional, e.g. 1024x1024)",
    working: "Working…",
    generate: "Generate image",
    asTask: "Submit as a task",
    generatedImage: (index: number) => `Generated image ${index}`,
    videoForm: "Video",
    seconds: "Seconds",
    videoSize: "Size (optional, e.g. 1280x720)",
    submitting: "Submitting…",
    submitVideo: "Submit video"
  },
  /** The batches page. */
  BATCHES: {
    title: "Batches",
    intro: "Your batches, whichever of your keys made them, newest first. The cost is what the ledger charged their " +
      "lines.",
    openAi: "OpenAI batches",
    anthropic: "Message Batches (Anthropic)",
    newer: "Newer",
    older: "Older",
    cancel: "Cancel",
    none: "none",
    costPending: "reading…",
    output: "Output",
    errors: "Errors",
    results: "Results",
    running: "Batches are running: the list refreshes every few seconds.",
    openAiCounts: (total: number, completed: number, failed: number) =>
      `total ${total} · completed ${completed} · failed ${failed}`,
    messageCounts: (processing: number, succeeded: number, errored: number, canceled: number, expired: number) =>
      `processing ${processing} · succeeded ${succeeded} · errored ${errored} · canceled ${canceled}` +
      ` · expired ${expired}`,
    caption: (title: string, page: number) => `${title} (page ${page})`,
    columns: {
      batch: "Batch",
      kind: "Kind",
      endpoint: "Endpoint",
      status: "Status",
      counts: "Counts",
      created: "Created",
      ended: "Ended",
      cost: "Cost (charged)",
      results: "Results",
      actions: "Actions"
    },
    downloadOf: (label: string, id: string) => `${label} of ${id}`,
    cancelOf: (id: string) => `Cancel ${id}`,
    pages: (title: string) => `${title} pages`
  },
  /** The files page. */
  FILES: {
    title: "Files",
    intro: "Your files, whichever of your keys uploaded them, newest first.",
    caption: (page: number) => `Files (page ${page})`,
    download: "Download",
    remove: "Delete",
    keep: "Keep",
    confirm: (name: string) => `Delete ${name}? A batch that reads it can no longer start.`,
    confirmOf: (id: string) => `Confirm deleting ${id}`,
    named: (verb: string, id: string) => `${verb} ${id}`,
    deleted: (id: string) => `Deleted ${id}.`,
    bytes: (count: number) => numbers.format(count),
    newer: "Newer",
    older: "Older",
    columns: {
      file: "File",
      name: "Name",
      purpose: "Purpose",
      bytes: "Bytes",
      created: "Created",
      expires: "Expires",
      actions: "Actions"
    },
    pages: "File pages"
  },
  /** The webhooks page. */
  WEBHOOKS: {
    filters: "Filter endpoints",
    keyword: "URL contains",
    status: "Status",
    event: "Event",
    select: (url: string) => `Select ${url}`,
    selectPage: "Select every endpoint on this page",
    bulk: "Selected endpoints",
    bulkDone: (done: number, failed: number) =>
      failed === 0
        ? `Done for ${counted(done, "endpoint", "endpoints")}.`
        : `Done for ${counted(done, "endpoint", "endpoints")}; ${numbers.format(failed)} failed.`,
    deleteQuestion: (count: number) =>
      `Delete ${counted(count, "endpoint", "endpoints")} and their delivery logs? This cannot be undone.`,
    disabledNote: "disabled: no new event is sent",
    enable: "Enable",
    disable: "Disable",
    named: (verb: string, url: string) => `${verb} ${url}`,
    pages: "Endpoint pages",
    title: "Webhooks",
    threshold: "Each threshold must be a percentage above 0 and at most 100, such as 50, 80, 100.",
    balanceUsd: "The balance for balance.low must be an amount in USD, such as 5 or 0.25.",
    add: "Add a webhook endpoint",
    addTitle: "Add an endpoint",
    url: "Endpoint URL (http or https)",
    events: "Events",
    thresholds: "Budget thresholds in percent, comma-separated (empty: 50, 80, 100)",
    below: "balance.low fires under this balance (USD; required with balance.low)",
    addButton: "Add endpoint",
    secretTitle: "The endpoint's signing secret",
    secretBefore: "This is the only time the secret is shown. Verify each delivery's ",
    secretAfter: " with it (Standard Webhooks).",
    secret: "Signing secret",
    done: "Done",
    deliveriesCaption: (url: string, count: number) => `Deliveries to ${url} (${count}, latest 100)`,
    deliveryColumns: {
      event: "Event",
      status: "Status",
      attempts: "Attempts",
      lastStatus: "Last HTTP status",
      lastError: "Last error",
      raised: "Raised",
      delivered: "Delivered",
      id: "Message id"
    },
    queued: (id: string) => `Test event ${id} queued.`,
    counts: (delivered: number, pending: number, failed: number) =>
      `${delivered} delivered, ${pending} pending, ${failed} failed`,
    hide: "Hide deliveries",
    deliveries: "Deliveries",
    sendTest: "Send test event",
    confirmOf: (url: string) => `Confirm deleting the endpoint ${url}`,
    confirm: "Delete this endpoint and its delivery log?",
    remove: "Delete",
    keep: "Keep",
    refresh: "Refresh deliveries",
    introBefore: "Signed alerts (Standard Webhooks): budget thresholds, a low balance, keys about to expire",
    introAdmin: ", and the channels' health",
    introAfter: ". Each delivery is retried for 24 hours; receivers deduplicate by ",
    introEnd: ".",
    caption: (count: number) => `Your endpoints (${count})`,
    columns: {
      url: "URL",
      events: "Events",
      status: "Status",
      deliveries: "Deliveries",
      added: "Added",
      actions: "Actions"
    }
  },
  /** The channels page. */
  CHANNELS: {
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
    selected: (count: number) => `${numbers.format(count)} selected`,
    bulk: "Selected channels",
    enableSelected: "Enable selected",
    disableSelected: "Disable selected",
    testSelected: "Test selected",
    bulkDone: (done: number, failed: number) =>
      failed === 0
        ? `Done for ${counted(done, "channel", "channels")}.`
        : `Done for ${counted(done, "channel", "channels")}; ${numbers.format(failed)} failed.`,
    pages: "Channel pages",
    testing: "Testing…",
    answered: (status: number, ms: number) => `Answered ${status} in ${ms} ms.`,
    testFailed: (words: string) => `Test failed: ${words}`,
    keyEnabled: "enabled",
    keyDisabled: (reason: string | null) => `disabled${reason ? `: ${reason}` : ""}`,
    never: "never",
    testedAt: (what: string, time: string) => `${what} at ${time}`,
    test: "Test",
    edit: "Edit",
    enable: "Enable",
    disable: "Disable",
    named: (verb: string, name: string) => `${verb} ${name}`,
    saved: (name: string) => `Saved channel ${name}.`,
    addInstead: "Add a new channel instead",
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
  },
  /** The channel form. */
  CHANNEL_FORM: {
    badMapping: (line: string) => `“${line}” is not a line “asked-model=upstream-model”.`,
    mapping: (words: string) => `Model mapping: ${words}`,
    settingsObject: 'Settings must be a JSON object, such as {"auto_disable": true}.',
    priorityWhole: "Priority must be a whole number (higher is tried first).",
    weightWhole: "Weight must be a whole number of 0 or more.",
    keys: (words: string) => `Keys: ${words}`,
    needsKey: "A channel needs at least one key, one a line.",
    add: "Add a channel",
    change: (name: string) => `Change channel ${name}`,
    name: "Channel name",
    type: "Type",
    baseUrl: "Base URL",
    models: "Models, comma-separated",
    groups: "Groups, comma-separated",
    priority: "Priority (higher is tried first)",
    weight: "Weight (share among channels of one priority)",
    mappingField: "Model mapping, one “asked-model=upstream-model” a line",
    mappingAzure: " (on azure the upstream model is the deployment name)",
    settings: "Settings (JSON: timeouts in ms, headers, auto_disable, test_model…)",
    keysNew: "Keys, one a line",
    keysChange: "New keys, one a line (empty: keep the saved keys, which are never shown)",
    enabled: "Enabled",
    addButton: "Add channel",
    saveButton: "Save channel"
  },
  /** What a key entry of a channel type holds (beside the keys field), and the key parser's complaints. */
  CHANNEL_KEYS: {
    notClosed: "A service-account key JSON is not closed (a “}” is missing).",
    notJson: "A service-account key is not valid JSON: paste the key file as Google Cloud gave it.",
    hints: {
      kling: "a kling key is accessKey|secretKey",
      azure:
        "an azure key is an API key (sent as api-key), or entra:<token> for a Microsoft Entra ID token (sent as Bearer)",
      vertex: "a vertex key is a service-account key JSON file pasted whole (a secret, never shown again), or a " +
        "Vertex AI API key on its own line",
      bedrock:
        "a bedrock key is accessKeyId|secretAccessKey or accessKeyId|secretAccessKey|sessionToken (signed with " +
        "SigV4), or a Bedrock API key (no |, sent as Bearer)"
    }
  },
  /**
   * The channel form's settings fields: each one's label (with the bootstrap file's name under `settings`) and help.
   * The JSON view of the same settings stays, as the advanced view. The first of each triple is the setting's name
   * and stays as it is in every language.
   */
  SETTINGS: {
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
    testModelHelp: "The model a channel test asks; the first model when empty.",
    typeLegend: (type: string) => `Settings of a ${type} channel`,
    required: (label: string, name: string) => `${label} (${name}) is required on this type.`,
    invalid: (label: string, name: string, rule: string) => `${label} (${name}) ${rule}`,
    typeFields: {
      api_version: [
        "API version",
        "Azure OpenAI's API version: a date such as 2024-10-21 (optionally -preview) calls the deployment paths; v1 " +
        "calls the v1 API. Empty: 2024-10-21. The deployment is the model mapping's upstream model.",
        "must be a date YYYY-MM-DD (optionally with -preview) or v1."
      ],
      region: [
        "AWS region",
        "The calls are signed for it, and the base URL defaults to its endpoint. The key is an access key id and " +
        "secret, or a Bedrock API key.",
        "must be an AWS region such as us-east-1."
      ],
      bedrock_api: [
        "Bedrock API",
        "converse (every model) or invoke (Claude models through InvokeModel with the Messages body).",
        "must be converse or invoke."
      ],
      project: [
        "Google Cloud project",
        "The project's id or number. The keys are service-account key JSON files or Vertex API keys.",
        "must be a project id or number (letters, digits, '-', '.', ':')."
      ],
      location: [
        "Location",
        "us-central1 when empty; global, us, eu or a region. The base URL defaults to its endpoint.",
        "must be a Vertex AI location such as us-central1 or global."
      ]
    }
  },
  /** The users page. */
  USERS: {
    title: "Users",
    filters: "Search users",
    keyword: "Name contains",
    keywordHelp: "Matches the username, the display name or the e-mail address.",
    role: "Role",
    status: "Status",
    group: "Group",
    none: "none",
    add: "Add a user",
    newUsername: "New user's username",
    newPassword: "New user's password (8 characters or more)",
    newGroup: "New user's group",
    newRole: "New user's role",
    addButton: "Add user",
    edit: (name: string) => `Edit ${name}`,
    roleOf: (name: string) => `Role of ${name}`,
    groupOf: (name: string) => `Group of ${name}`,
    save: "Save",
    cancel: "Cancel",
    amountUsd: "The amount must be USD above zero, such as 5 or 0.25.",
    editShort: "Edit",
    enable: "Enable",
    disable: "Disable",
    named: (verb: string, name: string) => `${verb} ${name}`,
    topUpOf: (name: string) => `Top up ${name}`,
    topUpField: (name: string) => `Top up ${name} (USD)`,
    topUp: "Top up",
    caption: (total: number) => `Users (${total})`,
    columns: {
      username: "Username",
      role: "Role",
      group: "Group",
      balance: "Balance",
      used: "Used",
      budgets: "Budgets",
      status: "Status",
      actions: "Actions"
    },
    pages: "User pages",
    added: (name: string) => `Added user ${name}.`
  },
  /** The groups and pricing page. */
  PRICING: {
    title: "Groups and pricing",
    fields: {
      input: "Input (USD per 1M tokens)",
      output: "Output (USD per 1M tokens)",
      cached_input: "Cached input (USD per 1M tokens)",
      cache_write: "Cache write (USD per 1M tokens)",
      per_image: "Per image (USD per image)",
      per_second: "Per second (USD per second of video or audio)",
      per_1m_characters: "Per 1M characters (USD, speech input)",
      per_search: "Per search unit (USD, rerank)",
      audio_input: "Audio input (USD per 1M tokens, Realtime)",
      audio_output: "Audio output (USD per 1M tokens, Realtime)",
      cached_audio_input: "Cached audio input (USD per 1M tokens, Realtime)"
    },
    ratioNumber: "The ratio must be a number of 0 or more, such as 1 or 0.8.",
    limitWhole: (key: string) => `The ${key} limit must be a whole number (empty: no limit).`,
    savedGroup: (name: string) => `Saved group ${name}.`,
    group: "Group",
    addGroup: "Add a group",
    changeGroup: (name: string) => `Change group ${name}`,
    groupName: "Group name",
    ratio: "Price ratio (prices are multiplied by it)",
    rpm: "Requests per minute per user (empty: no limit)",
    tpm: "Tokens per minute per user (empty: no limit)",
    concurrency: "Requests at once per user (empty: no limit)",
    saveGroup: "Save group",
    amountNumber: (label: string) => `${label} must be a number of 0 or more (empty: none).`,
    savedPrices: (model: string) => `Saved the prices of ${model}.`,
    prices: "Model prices",
    priceModel: "Price a model",
    changePrices: (model: string) => `Change the prices of ${model}`,
    model: "Model",
    family: "Image family (empty: from the model's name)",
    fromName: "from the name",
    free: "Free (served at no cost when it has no price)",
    savePrices: "Save prices",
    groupsCaption: (count: number) => `Groups (${count})`,
    groupColumns: {
      group: "Group",
      ratio: "Price ratio",
      rpm: "Requests / minute",
      tpm: "Tokens / minute",
      concurrency: "At once",
      actions: "Actions"
    },
    noLimit: "no limit",
    edit: "Edit",
    editGroup: (name: string) => `Edit group ${name}`,
    addGroupInstead: "Add a new group instead",
    pricesCaption: (count: number) => `Model prices (${count}); tokens in USD per 1M tokens`,
    priceColumns: {
      model: "Model",
      input: "Input",
      output: "Output",
      cached_input: "Cached input",
      cache_write: "Cache write",
      per_image: "Per image",
      per_second: "Per second",
      per_1m_characters: "Per 1M characters",
      per_search: "Per search",
      audio_input: "Audio input",
      audio_output: "Audio output",
      cached_audio_input: "Cached audio input",
      family: "Family",
      actions: "Actions"
    },
    freeMark: " (free)",
    units: {
      perMillion: "USD / 1M",
      perImage: "USD / image",
      perSecond: "USD / s",
      perCharacters: "USD / 1M chars",
      perSearch: "USD / search"
    },
    editPrices: (model: string) => `Edit prices of ${model}`,
    anotherInstead: "Price another model instead"
  },
  /** The health page. */
  HEALTH: {
    title: "Health",
    windows: { hour: "Last hour", day: "Last day", week: "Last week" },
    /** A window inside a sentence ("in the last hour"). */
    windowsInline: { hour: "last hour", day: "last day", week: "last week" },
    keyOf: (position: number) => ` (key ${position})`,
    coolingUntil: (time: string) => `cooling until ${time}`,
    keysDisabled: (disabled: number, all: number) => `, ${disabled} of ${all} keys disabled`,
    noRequests: (window: string) => `No requests in the ${window}.`,
    tableRegion: "Health table (scrolls sideways on a narrow screen)",
    caption: (byChannel: boolean, window: string) => `${byChannel ? "Channels" : "Models"}, ${window}, busiest first`,
    columns: {
      channel: "Channel",
      model: "Model",
      state: "State now",
      attempts: "Attempts",
      errorRate: "Error rate",
      p50: "p50",
      p95: "p95",
      tokens: "Tokens",
      cost: "Cost",
      overTime: "Attempts over time"
    },
    channelNamed: (id: number | string | null | undefined) => `channel ${id}`,
    attempts: "Attempts",
    attemptsUnit: "attempts",
    attemptsOf: (name: string) => `Attempts of ${name}`,
    attemptsInWindow: (count: number) => `${count} attempts in the window`,
    state: "State now",
    failures: "Failures in a row",
    unhealthy: "Marked unhealthy",
    since: (time: string, reason: string) => `since ${time} (${reason})`,
    noReason: "no reason",
    no: "no",
    probe: "Last probe",
    none: "none",
    probed: (time: string, key: number | null, ok: boolean, status: number | null) =>
      `${time}, key ${key}: ${ok ? "passed" : "failed"} (${status === 0 ? "no answer" : `HTTP ${status}`})`,
    test: "Last test",
    never: "never",
    passedIn: (ms: number | null) => `passed in ${ms} ms`,
    keys: "Keys",
    keyState: (position: number, enabled: boolean, reason: string | null) =>
      `key ${position}: ${enabled ? "enabled" : `disabled (${reason ?? "no reason"})`}`,
    failedKind: (kind: string) => `Failed: ${kind}`,
    errorRate: "Error rate",
    prompt: "Prompt",
    completion: "Completion",
    cost: "Cost",
    tokensUnit: "tokens",
    all: (byChannel: boolean) => `All ${byChannel ? "channels" : "models"}`,
    p50p95: "p50 / p95",
    tokens: "Tokens",
    chartAttempts: "Attempts and failures by kind",
    noFailed: "No failed attempts in this window.",
    chartLatency: "Latency of successful attempts",
    noSuccess: "No successful attempts.",
    firstTokenP50p95: "First token p50 / p95",
    chartFirstToken: "Time to first token of streamed answers",
    noStreamed: "No streamed answers in this window.",
    noTokens: "No tokens in this window.",
    noCost: "Nothing charged in this window.",
    events: "Events",
    noEvents: "No channel events in this window.",
    eventsCaption: "Channel events, newest first (dashed lines on the charts)",
    eventColumns: { time: "Time", channel: "Channel", event: "Event" },
    by: "By",
    channels: "Channels",
    models: "Models",
    window: "Window",
    loading: "Loading…",
    span: (start: string, end: string, minutes: number, ms: number) =>
      `${start} to ${end}, in ${minutes} minute buckets; attempts are usage rows (a request that failed over counts ` +
      `on each channel it tried). Read in ${ms} ms.`,
    /** Day and week: the percentiles before `until` come from the rollup's latency histograms. */
    estimated: (until: string) =>
      `Before ${until}, p50 and p95 are estimated from latency histograms (within one histogram bucket, at most a ` +
      `third of the value); counts, tokens and cost are exact.`
  }
}

/** `T` with every string literal widened to `string`, so another language's catalogue can say other words. */
type Widen<T> = T extends string ? string
  : T extends (...args: infer A) => infer R ? (...args: A) => Widen<R>
  : { readonly [K in keyof T]: Widen<T[K]> }

/** The shape every language's catalogue has: `en`'s sections and keys, each string any words. */
export type Catalogue = Widen<typeof en>
