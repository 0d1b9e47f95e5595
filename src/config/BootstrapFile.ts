/**
 * The bootstrap file (YAML or JSON) of the outer contract (docs/ARCHITECTURE.md, "Outer contract"): groups,
 * model prices, channels, users with their tokens, plus gateway settings and
 * rate limits. Decoded with `Schema`; a bad file is reported with the path of
 * the first bad field (`channels[1].type: …`).
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import { Yaml } from "effect/encoding"
import { IMAGE_FAMILIES } from "../formats/images/ImageFamilies.ts"
import { VIDEO_FAMILIES } from "../formats/videos/VideoFamilies.ts"
import { makeDecoder } from "../domain/SchemaDecode.ts"
import ipaddr from "ipaddr.js"
import { BudgetList } from "../domain/BudgetPeriod.ts"
import { baseUrlOf, settingsProblem } from "../domain/ChannelType.ts"

const NonNegative = Schema.Number.check(Schema.isFinite(), Schema.isGreaterThanOrEqualTo(0))
const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
/** Quota units: a whole, non-negative number of micro-USD that a JS number holds exactly. */
const QuotaAmount = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(0),
  Schema.isLessThanOrEqualTo(Number.MAX_SAFE_INTEGER)
)
const NonEmpty = Schema.String.check(Schema.isNonEmpty())

/**
 * Per-subject rate limits: requests and tokens per minute, requests in flight.
 *
 * @category models
 */
export const LimitsSpec = Schema.Struct({
  rpm: Schema.optional(Count),
  tpm: Schema.optional(Count),
  concurrency: Schema.optional(Count)
})

/** @category models */
export const GroupSpec = Schema.Struct({
  ratio: NonNegative,
  limits: Schema.optional(LimitsSpec)
})

/**
 * Prices: `input`/`output` in USD per 1M tokens, `cached_input` (prompt
 * tokens read from the vendor's cache) and `cache_write` (prompt tokens
 * written to it) in USD per 1M tokens, each `input` when unset,
 * `per_image` and `per_second` in USD, `per_1m_characters` in USD per 1M
 * input characters (speech), `per_search` in USD per search unit (rerank), `audio_input`, `audio_output` and
 * `cached_audio_input` in USD per 1M audio tokens (the Realtime API; `cached_audio_input` is `audio_input` when
 * unset), `batch_input` and `batch_output` in USD per 1M tokens of the lines of a batch delegated to a vendor's batch
 * API (`input` / `output` when unset); `free: true` lets an unpriced model be
 * served at no cost.
 *
 * @category models
 */
export const ModelSpec = Schema.Struct({
  input: Schema.optional(NonNegative),
  output: Schema.optional(NonNegative),
  cached_input: Schema.optional(NonNegative),
  cache_write: Schema.optional(NonNegative),
  per_image: Schema.optional(NonNegative),
  per_second: Schema.optional(NonNegative),
  /** USD per 1M input characters (speech). */
  per_1m_characters: Schema.optional(NonNegative),
  /** USD per search unit (rerank). */
  per_search: Schema.optional(NonNegative),
  /** USD per 1M audio input tokens (Realtime). */
  audio_input: Schema.optional(NonNegative),
  /** USD per 1M audio output tokens (Realtime). */
  audio_output: Schema.optional(NonNegative),
  /** USD per 1M cached audio input tokens (Realtime); `audio_input` when unset. */
  cached_audio_input: Schema.optional(NonNegative),
  /** USD per 1M input tokens of a line of a batch delegated to a vendor's batch API; `input` when unset. */
  batch_input: Schema.optional(NonNegative),
  /** USD per 1M output tokens of a line of a batch delegated to a vendor's batch API; `output` when unset. */
  batch_output: Schema.optional(NonNegative),
  /**
   * The validation rules a model follows: an image family (`formats/images/ImageFamilies.ts`) or a video family
   * (`formats/videos/VideoFamilies.ts`); default from its name.
   */
  family: Schema.optional(Schema.Literals([...IMAGE_FAMILIES, ...VIDEO_FAMILIES])),
  free: Schema.optional(Schema.Boolean)
})

/** The upstream channel types. @category models */
export const ChannelType = Schema.Literals([
  "openai",
  "anthropic",
  "gemini",
  "ark",
  "cohere",
  "jina",
  "midjourney",
  "kling",
  "deepseek",
  "bedrock",
  "azure",
  "vertex"
])

/**
 * Per-channel settings. Timeouts in milliseconds.
 *
 * @category models
 */
export const ChannelSettings = Schema.Struct({
  /** The upstream has `/v1/responses` (openai channels); otherwise Responses requests go through chat completions. */
  responses_api: Schema.optional(Schema.Boolean),
  /**
   * With `responses_api` (openai channels): a response asked for over a client's Responses WebSocket
   * (`GET /v1/responses`) reaches the upstream over the channel's own Responses socket (`wss://<base>/v1/responses`,
   * one per client socket and channel key, opened on first use and reused by the socket's later responses) instead
   * of one `POST` each. Requests over HTTP still use HTTP.
   */
  responses_websocket: Schema.optional(Schema.Boolean),
  /** The upstream has `/v1/responses/compact`. */
  responses_compact: Schema.optional(Schema.Boolean),
  connect_timeout_ms: Schema.optional(Count),
  first_byte_timeout_ms: Schema.optional(Count),
  idle_timeout_ms: Schema.optional(Count),
  total_timeout_ms: Schema.optional(Count),
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  strip_params: Schema.optional(Schema.Array(Schema.String)),
  auto_disable: Schema.optional(Schema.Boolean),
  test_model: Schema.optional(Schema.String),
  /** The upstream needs images (on gemini channels, files too) inline (Base64): URLs are downloaded by the gateway. */
  inline_images: Schema.optional(Schema.Boolean),
  /**
   * Forward the caller's `store` (Responses, chat completions) to the upstream (default true); false leaves it out
   * of every request to this channel, passthrough or translated, so the upstream's own default applies.
   */
  forward_store: Schema.optional(Schema.Boolean),
  /** The AWS region of a `bedrock` channel (required there): its calls are signed for it, its default host is in it. */
  region: Schema.optional(NonEmpty),
  /**
   * Which Bedrock Runtime API a `bedrock` channel's text calls use: `converse` (default, every model) or `invoke`
   * (Anthropic models through InvokeModel with the Messages body; other models still through Converse).
   */
  bedrock_api: Schema.optional(Schema.Literals(["converse", "invoke"])),
  /**
   * Azure OpenAI (`azure` channels): the API version, a date `YYYY-MM-DD` or `YYYY-MM-DD-preview` (calls go to the
   * deployment paths with `?api-version=`; default `2024-10-21`), or `v1` (calls go to the v1 API,
   * `/openai/v1/…`, the deployment as `model`). See `upstreams/AzureTarget.ts`.
   */
  api_version: Schema.optional(
    Schema.String.check(
      Schema.isPattern(/^(?:\d{4}-\d{2}-\d{2}(?:-preview)?|v1)$/, {
        message: "must be a date YYYY-MM-DD (optionally with -preview) or v1"
      })
    )
  ),
  /**
   * Delegates batches to the vendor's own batch API (`openai` channels: Files + Batch API; `anthropic` channels:
   * Message Batches) when every line's models are served by channels of the batch's type and this channel serves them
   * all (`batches/vendor/VendorTarget.ts`), each line then billed at the model's `batch_input` / `batch_output` prices
   * (docs/BILLING.md, "Batches"; docs/ROUTES.md, "Vendor delegation"). Default false: the gateway runs the lines.
   */
  vendor_batches: Schema.optional(Schema.Boolean),
  /** The Google Cloud project a `vertex` channel calls (required there): its id or number. */
  project: Schema.optional(
    Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9.:-]{0,99}$/, {
      message: "a Google Cloud project id or number (letters, digits, '-', '.', ':')"
    }))
  ),
  /** The Vertex AI location of a `vertex` channel (`us-central1` when unset; `global`, `us`, `eu`, a region). */
  location: Schema.optional(
    Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9-]{0,62}$/, {
      message: "a Vertex AI location such as us-central1 or global (lower-case letters, digits, '-')"
    }))
  )
})

/**
 * A channel. `base_url` may be left out only where the type has a default (`deepseek`: `https://api.deepseek.com`,
 * `domain/ChannelType.ts` `DEFAULT_BASE_URLS`; `bedrock`: its region's endpoint); its path is kept
 * (`upstreams/BaseUrl.ts`).
 *
 * @category models
 */
export const ChannelSpec = Schema.Struct({
  name: NonEmpty,
  type: ChannelType,
  base_url: Schema.optional(NonEmpty),
  keys: Schema.Array(NonEmpty).check(Schema.isMinLength(1)),
  models: Schema.Array(NonEmpty),
  groups: Schema.optional(Schema.Array(NonEmpty)),
  priority: Schema.optional(Schema.Int),
  weight: Schema.optional(Count),
  model_mapping: Schema.optional(Schema.Record(Schema.String, NonEmpty)),
  settings: Schema.optional(ChannelSettings),
  enabled: Schema.optional(Schema.Boolean)
})

/**
 * `expires_at`: an ISO 8601 date-time, or epoch seconds. `budgets`: `[{amount (USD), period: day | week | month |
 * total, timezone?}]`, at most one per period.
 *
 * @category models
 */
export const TokenSpec = Schema.Struct({
  name: NonEmpty,
  key: NonEmpty.check(Schema.isMinLength(8)),
  quota: Schema.optional(QuotaAmount),
  models: Schema.optional(Schema.Array(NonEmpty)),
  group: Schema.optional(NonEmpty),
  expires_at: Schema.optional(Schema.Union([Schema.String, Count])),
  limits: Schema.optional(LimitsSpec),
  budgets: Schema.optional(BudgetList)
})

/** `budgets`: as a token's (`TokenSpec`), applying to all of the user's keys together. @category models */
export const UserSpec = Schema.Struct({
  username: NonEmpty,
  password: Schema.optional(NonEmpty),
  role: Schema.optional(Schema.Literals(["root", "admin", "user"])),
  group: NonEmpty,
  quota: QuotaAmount,
  tokens: Schema.optional(Schema.Array(TokenSpec)),
  limits: Schema.optional(LimitsSpec),
  budgets: Schema.optional(BudgetList)
})

/**
 * Gateway-wide settings. `retry_times`: extra attempts after the first;
 * `default_max_tokens`: the output estimate when a request names none;
 * `media_max_bytes`, `media_timeout_ms`: limits of one image or file download made for
 * an inline-only channel, and of a Midjourney image fetched from the proxy's
 * image URL; `media_allow_hosts`: host names trusted although
 * they resolve to private addresses (e.g. an intranet image server);
 * `video_content_max_bytes` (default 512 MiB) and `video_content_timeout_ms`
 * (default 600000): limits of one video content download relayed from a
 * vendor's URL (`GET /v1/videos/{id}/content`);
 * `status_token`: the secret an operator presents (`Authorization: Bearer …`)
 * to see per-channel health in `GET /api/status` (absent: nobody sees it).
 * `media_max_count`, `media_max_total_bytes`: per caller request, the count of
 * distinct downloads and their bytes in total. `metrics_token`: the secret a
 * scraper presents (`Authorization: Bearer …`) to read `GET /metrics` from
 * anywhere but loopback (absent: loopback only).
 * distinct downloads and their bytes in total.
 * Accounts: `registration` (`POST /api/user/register` open, default true),
 * `new_user_quota` and `new_user_group` (what a registered user starts with:
 * 0 and `default`), `session_idle_minutes` (720) and `session_max_hours`
 * (168), `login_max_failures` login attempts per username within
 * `login_window_seconds` (5 in 900) before that name is throttled (counted
 * before the password is checked, forgotten on a success),
 * `login_address_max_failures` login attempts per client address in the same
 * window (30), `registrations_per_address` sign-ups per client address per
 * `registration_window_seconds` (10 per 3600), `hash_workers` threads that
 * run bcrypt (1) and `hash_queue` password checks that may wait for one (32;
 * more are answered 429 with `Retry-After`).
 * `trusted_proxies`: addresses or CIDR ranges of reverse proxies whose
 * `X-Forwarded-For`, `X-Forwarded-Proto` and `X-Forwarded-Host` are believed
 * (default none: those headers are ignored).
 * `max_tasks_in_flight`: video and image tasks a user may have unfinished at
 * once (default 16; more are answered 429); `max_pending_assets`: asset
 * checks a user may have pending at once (default 8).
 * Tasks: `task_poll_interval_ms` (how often unfinished tasks are polled
 * upstream, default 5000) and `task_deadline_seconds` (a task unfinished this
 * long after its submit fails and is refunded, default 86400).
 * `unknown_model_status`: the HTTP status of `model_not_found` (a model the
 * key cannot use): 503, the spec's and the default, or 404, OpenAI's own.
 * Clients retry a 503 (LangChain's 7 times over 81–108 s, the AI SDK's 3
 * times) whatever `x-should-retry: false` says; they do not retry a 404.
 * `public_url`: the gateway's address as clients reach it (e.g. behind a
 * reverse proxy), from which the URLs it hands out are built (a video's
 * `/content` URL); unset: `oauth.public_url`, else the address the request
 * came to (forwarded headers are not trusted).
 * WebSockets (README, "WebSockets"): `websocket_max_frame_bytes` (largest
 * text frame a caller may send, default 16 MiB), `websocket_max_events_per_second`
 * (frames a caller may send per second on a Responses socket, default 20; 0: no
 * limit), `realtime_max_events_per_second` (the same on a Realtime socket,
 * default 200: a voice client streams its microphone in 20 ms
 * `input_audio_buffer.append` events, 50 a second, beside its other events) and
 * `websocket_idle_seconds` (a socket with no frame either way and nothing in
 * flight this long is closed, default 300; 0: never).
 * `journal_fsync`: the charge journal file waits for a group-committed
 * `fdatasync` before an answer's end leaves, so a charge survives a power cut,
 * not only a crash (default false; docs/BILLING.md, "The journal").
 * `realtime_float_input_tokens` (default 32,768)
 * and `realtime_float_output_tokens` (default 4,096): the one response a Realtime session's float is sized for
 * (docs/BILLING.md, "Realtime sessions").
 * Batches (docs/ROUTES.md, "Batches"): `batch_concurrency` (lines of one batch an instance runs at once, default 8),
 * `batch_key_concurrency` (lines of one key's batches an instance runs at once, default 16),
 * `batch_window_seconds` (a batch unfinished this long after its creation ends expired, default 86400),
 * `batch_lease_seconds` (how long a claimed line stays claimed without its instance's heartbeat, default 30) and
 * `batch_poll_ms` (how often an instance looks for lines to run, default 500), `batch_vendor_poll_ms` (how often a batch
 * delegated to a vendor's batch API is retrieved there, default 15000) and `batch_max_in_progress` (batches one
 * user may have unfinished at once, default 100; more are answered 429).
 * Files (README, "Files"): `file_max_bytes` (largest file a caller may upload to `/v1/files`, default 200 MiB),
 * `file_storage_per_user_bytes` (largest total of one user's files, default 10 GiB) and
 * `file_sweep_interval_seconds` (how often each instance removes expired and deleted files, default 60; 0: never) and
 * `file_max_uploads_in_flight` (uploads one user may have running at once on one instance, default 4).
 * Health (docs/CONSOLE.md, "Health"): `health_rollup_interval_seconds` (how often each instance folds closed usage
 * buckets into the rollup the day and week views read, default 60; 0: never, those views then read every usage row).
 *
 * @category models
 */
export const GatewaySettings = Schema.Struct({
  file_max_bytes: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  file_storage_per_user_bytes: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  file_sweep_interval_seconds: Schema.optional(Count),
  file_max_uploads_in_flight: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  realtime_float_input_tokens: Schema.optional(Count),
  realtime_float_output_tokens: Schema.optional(Count),
  journal_fsync: Schema.optional(Schema.Boolean),
  retry_times: Schema.optional(Count),
  default_max_tokens: Schema.optional(Count),
  max_body_bytes: Schema.optional(Count),
  websocket_max_frame_bytes: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  websocket_max_events_per_second: Schema.optional(Count),
  realtime_max_events_per_second: Schema.optional(Count),
  websocket_idle_seconds: Schema.optional(Count),
  request_deadline_ms: Schema.optional(Count),
  cooldown_failures: Schema.optional(Count),
  cooldown_seconds: Schema.optional(Count),
  cooldown_max_seconds: Schema.optional(Count),
  probe_interval_seconds: Schema.optional(Count),
  health_rollup_interval_seconds: Schema.optional(Count),
  key_cache_ttl_ms: Schema.optional(Count),
  media_max_bytes: Schema.optional(Count),
  media_timeout_ms: Schema.optional(Count),
  media_allow_hosts: Schema.optional(Schema.Array(NonEmpty)),
  video_content_max_bytes: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  video_content_timeout_ms: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  /** Host names webhook deliveries may reach although they resolve to non-public addresses (the SSRF guard's). */
  webhook_allow_hosts: Schema.optional(Schema.Array(NonEmpty)),
  status_token: Schema.optional(NonEmpty),
  media_max_count: Schema.optional(Count),
  media_max_total_bytes: Schema.optional(Count),
  metrics_token: Schema.optional(NonEmpty),
  registration: Schema.optional(Schema.Boolean),
  new_user_quota: Schema.optional(QuotaAmount),
  new_user_group: Schema.optional(NonEmpty),
  session_idle_minutes: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  session_max_hours: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  login_max_failures: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  login_window_seconds: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  login_address_max_failures: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  registrations_per_address: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  registration_window_seconds: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  hash_workers: Schema.optional(Count.check(Schema.isBetween({ minimum: 1, maximum: 64 }))),
  hash_queue: Schema.optional(Count.check(Schema.isLessThanOrEqualTo(100_000))),
  trusted_proxies: Schema.optional(Schema.Array(NonEmpty.check(
    Schema.makeFilter((value: string) =>
      value.length <= 64 && (ipaddr.isValid(value) || ipaddr.isValidCIDR(value))
        ? true
        : "must be an IP address or CIDR range"
    )
  ))),
  max_tasks_in_flight: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  max_pending_assets: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  task_poll_interval_ms: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(10))),
  task_deadline_seconds: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  batch_concurrency: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  batch_key_concurrency: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  batch_window_seconds: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  batch_lease_seconds: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  batch_poll_ms: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(10))),
  batch_vendor_poll_ms: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(10))),
  batch_max_in_progress: Schema.optional(Count.check(Schema.isGreaterThanOrEqualTo(1))),
  unknown_model_status: Schema.optional(Schema.Literals([503, 404])),
  public_url: Schema.optional(NonEmpty.check(Schema.isPattern(/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/)))
})

/**
 * One OAuth/OIDC login provider. `oidc`: any OpenID Provider, found by
 * discovery at `issuer` (its ID tokens are checked: signature, issuer,
 * audience, nonce, expiry). `github`: plain OAuth 2 and the user API;
 * `authorize_url`, `token_url` and `api_url` default to GitHub's. `scopes`
 * default to `openid email profile` (oidc) and `read:user user:email`
 * (github). `allow_insecure_http` lets a provider be reached over plain HTTP
 * (development and tests only).
 *
 * @category models
 */
export const OAuthProviderSpec = Schema.Struct({
  type: Schema.Literals(["oidc", "github"]),
  client_id: NonEmpty,
  client_secret: NonEmpty,
  issuer: Schema.optional(NonEmpty),
  scopes: Schema.optional(Schema.Array(NonEmpty)),
  authorize_url: Schema.optional(NonEmpty),
  token_url: Schema.optional(NonEmpty),
  api_url: Schema.optional(NonEmpty),
  allow_insecure_http: Schema.optional(Schema.Boolean)
})

/**
 * OAuth login: `providers` by name (the `{provider}` of `/api/oauth/{provider}`:
 * lower-case letters, digits, `-` and `_`), and `public_url`, the gateway's
 * address as browsers reach it, from which each redirect URI
 * `<public_url>/api/oauth/<name>` is made (unset: the address the request
 * came to).
 *
 * @category models
 */
export const OAuthSpec = Schema.Struct({
  public_url: Schema.optional(NonEmpty),
  providers: Schema.Record(Schema.String.check(Schema.isPattern(/^[a-z0-9_-]{1,32}$/)), OAuthProviderSpec)
})

/**
 * The whole file.
 *
 * @category models
 */
export const BootstrapFile = Schema.Struct({
  groups: Schema.optional(Schema.Record(NonEmpty, GroupSpec)),
  models: Schema.optional(Schema.Record(NonEmpty, ModelSpec)),
  channels: Schema.optional(Schema.Array(ChannelSpec)),
  users: Schema.optional(Schema.Array(UserSpec)),
  settings: Schema.optional(GatewaySettings),
  limits: Schema.optional(Schema.Struct({ default: Schema.optional(LimitsSpec) })),
  oauth: Schema.optional(OAuthSpec)
})

/** @category models */
export type BootstrapFile = typeof BootstrapFile.Type

const decodeFile = makeDecoder(BootstrapFile)

/**
 * Parses the file text (JSON when the path ends in `.json` or the text starts
 * with `{`, YAML otherwise) and decodes it. Fails with a message that starts
 * with the path of the bad field.
 *
 * @category decoding
 */
export const parseBootstrap = (text: string, path: string): Result.Result<BootstrapFile, string> => {
  let raw: unknown
  try {
    raw = path.endsWith(".json") || text.trimStart().startsWith("{") ? JSON.parse(text) : Yaml.parse(text)
  } catch (error) {
    return Result.fail(`${path}: cannot be parsed: ${(error as Error).message}`)
  }
  const decoded = decodeFile(raw ?? {})
  if (Result.isFailure(decoded)) {
    const param = decoded.failure.param
    const detail = decoded.failure.message.replace(/^Invalid [^:]*: /, "")
    return Result.fail(param === "" ? detail : `${param}: ${detail}`)
  }
  const file = decoded.success
  const problem = unknownGroup(file) ?? badExpiry(file) ?? oidcWithoutIssuer(file) ?? missingBaseUrl(file) ??
    missingProject(file)
  return problem === undefined ? Result.succeed(file) : Result.fail(problem)
}

/** The first `vertex` channel without `settings.project`, as `channels[i].settings.project: …`. */
const missingProject = (file: BootstrapFile): string | undefined => {
  for (const [index, channel] of (file.channels ?? []).entries()) {
    if (channel.type === "vertex" && channel.settings?.project === undefined) {
      return `channels[${index}].settings.project: missing (a vertex channel calls one Google Cloud project)`
    }
  }
  return undefined
}

/**
 * The first channel whose settings its type cannot use (`settingsProblem`: a `bedrock` channel without a valid
 * `settings.region`), as `channels[i].settings.region: …`, or without a `base_url` whose type has no default, as
 * `channels[i].base_url: …`.
 */
const missingBaseUrl = (file: BootstrapFile): string | undefined => {
  for (const [index, channel] of (file.channels ?? []).entries()) {
    const problem = settingsProblem(channel.type, channel.settings)
    if (problem !== undefined) return `channels[${index}].${problem.param}: ${problem.message}`
    if (baseUrlOf(channel.type, channel.base_url, channel.settings) === undefined) {
      return `channels[${index}].base_url: missing (channel type ${channel.type} has no default base URL)`
    }
  }
  return undefined
}

/** The first `oidc` provider without an `issuer`, as `oauth.providers.<name>.issuer: …`. */
const oidcWithoutIssuer = (file: BootstrapFile): string | undefined => {
  for (const [name, provider] of Object.entries(file.oauth?.providers ?? {})) {
    if (provider.type === "oidc" && provider.issuer === undefined) {
      return `oauth.providers.${name}.issuer: an oidc provider needs its issuer`
    }
  }
  return undefined
}

/**
 * The first token `expires_at` string that is not a date-time, as
 * `path: not a date-time "value"` (left unchecked, it would be stored as
 * "never expires").
 */
const badExpiry = (file: BootstrapFile): string | undefined => {
  for (const [index, user] of (file.users ?? []).entries()) {
    for (const [position, token] of (user.tokens ?? []).entries()) {
      const value = token.expires_at
      if (typeof value === "string" && Number.isNaN(new Date(value).getTime())) {
        return `users[${index}].tokens[${position}].expires_at: not a date-time "${value}"`
      }
    }
  }
  return undefined
}

/**
 * The first reference to a group the file does not define (a user's, a
 * token's or a channel's), as `path: unknown group "name"`. A file without
 * `groups` defines none, so any name is accepted there.
 */
const unknownGroup = (file: BootstrapFile): string | undefined => {
  const groups = file.groups
  if (groups === undefined) return undefined
  const known = (name: string) => Object.hasOwn(groups, name)
  for (const [index, channel] of (file.channels ?? []).entries()) {
    for (const [position, group] of (channel.groups ?? []).entries()) {
      if (!known(group)) return `channels[${index}].groups[${position}]: unknown group "${group}"`
    }
  }
  for (const [index, user] of (file.users ?? []).entries()) {
    if (!known(user.group)) return `users[${index}].group: unknown group "${user.group}"`
    for (const [position, token] of (user.tokens ?? []).entries()) {
      if (token.group !== undefined && !known(token.group)) {
        return `users[${index}].tokens[${position}].group: unknown group "${token.group}"`
      }
    }
  }
  return undefined
}
