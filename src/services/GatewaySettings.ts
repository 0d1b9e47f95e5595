/**
 * Gateway-wide settings, from the bootstrap file's `settings` with defaults
 * sized for LLM upstreams (a reasoning model may think for minutes before its
 * first byte). Times in milliseconds unless the name says seconds.
 *
 * @since 0.1.0
 */
import { Context, Layer } from "effect"
import { DEFAULT_OUTPUT_TOKENS } from "../canonical/Estimate.ts"
import type { BootstrapFile } from "../config/BootstrapFile.ts"
import { DEFAULT_WEBSOCKET_LIMITS, type WebSocketLimits } from "../http/WebSocketUpgrade.ts"

/** @category models */
export interface Settings {
  /** Extra attempts after the first (default 2). */
  readonly retryTimes: number
  /** Output tokens assumed for the quota hold when a request names no limit (default `DEFAULT_OUTPUT_TOKENS`). */
  readonly defaultMaxTokens: number
  /** Request bodies above this many bytes get 413 (default 32 MiB). */
  readonly maxBodyBytes: number
  /** The limits of each WebSocket (`websocket_*`; `http/WebSocketUpgrade.ts`). */
  readonly websocket: WebSocketLimits
  /** No new attempt starts after this long (default 10 min). */
  readonly requestDeadlineMs: number
  /** Default per-channel timeouts: head of the answer 5 min, gap between events 2 min, whole call 30 min. */
  readonly firstByteTimeoutMs: number
  readonly idleTimeoutMs: number
  readonly totalTimeoutMs: number
  readonly cooldownFailures: number
  readonly cooldownSeconds: number
  readonly cooldownMaxSeconds: number
  readonly probeIntervalSeconds: number
  /** How often this instance folds closed usage buckets into the health rollup, seconds (default 60; 0: never). */
  readonly healthRollupIntervalSeconds: number
  readonly keyCacheTtlMs: number
  /**
   * Largest image the gateway downloads for an inline-only channel, or relays from a Midjourney proxy's image
   * URL, in bytes (default 20 MiB).
   */
  readonly mediaMaxBytes: number
  /** Time limit of one such image download, redirects included (default 10 s). */
  readonly mediaTimeoutMs: number
  /** Host names whose downloads skip the private-address check (default none). */
  readonly mediaAllowHosts: ReadonlyArray<string>
  /**
   * Largest video the content route relays from a vendor, in bytes (default 512 MiB): a larger announced
   * `Content-Length` is refused, a body that grows past it is cut.
   */
  readonly videoContentMaxBytes: number
  /** Time limit of one video content download from a vendor, redirects and body included (default 10 min). */
  readonly videoContentTimeoutMs: number
  /** The charge journal file waits for a group-committed `fdatasync` (`journal_fsync`, default false). */
  readonly journalFsync: boolean
  /**
   * The operator's secret for the per-channel detail of `GET /api/status`
   * (`settings.status_token`); `undefined` (the default) shows it to nobody.
   */
  readonly statusToken: string | undefined
  /** Distinct image and file downloads one caller request may need, failover attempts included (default 16). */
  readonly mediaMaxCount: number
  /** Bytes the downloads of one caller request may total, failover attempts included (default 50 MiB). */
  readonly mediaMaxTotalBytes: number
  /** The scraper's secret for `GET /metrics` off loopback (`settings.metrics_token`); `undefined`: loopback only. */
  readonly metricsToken: string | undefined
  /** `POST /api/user/register` is open (default true). */
  readonly registration: boolean
  /** Quota units and group a registered user starts with (default 0, `default`). */
  readonly newUserQuota: number
  readonly newUserGroup: string
  /** Browser sessions: idle limit (default 12 h) and absolute limit (default 7 days), in milliseconds. */
  readonly sessionIdleMillis: number
  readonly sessionMaxMillis: number
  /** Login attempts per username within `loginWindowMillis` before it is throttled (default 5 in 15 min). */
  readonly loginMaxFailures: number
  readonly loginWindowMillis: number
  /** Login attempts per client address within `loginWindowMillis` (default 30). */
  readonly loginAddressMaxFailures: number
  /** Registrations per client address within `registrationWindowMillis` (default 10 per hour). */
  readonly registrationsPerAddress: number
  readonly registrationWindowMillis: number
  /** Threads that run bcrypt (default 1) and checks that may wait for one (default 32). */
  readonly hashWorkers: number
  readonly hashQueue: number
  /** Reverse proxies (addresses or CIDRs) whose forwarded headers are believed (default none). */
  readonly trustedProxies: ReadonlyArray<string>
  /** Video and image tasks a user may have unfinished at once (default 16). */
  readonly maxTasksInFlight: number
  /** Asset checks a user may have pending at once (default 8). */
  readonly maxPendingAssets: number
  /** How often unfinished tasks are polled upstream (default 5 s), in milliseconds. */
  readonly taskPollMillis: number
  /** A task unfinished this long after its submit fails and is refunded (default 24 h), in milliseconds. */
  readonly taskDeadlineMillis: number
  /** Lines of one batch an instance runs at once (`batch_concurrency`, default 8). */
  readonly batchConcurrency: number
  /** Lines of one key's batches an instance runs at once (`batch_key_concurrency`, default 16). */
  readonly batchKeyConcurrency: number
  /** A batch unfinished this long after its creation ends expired (`batch_window_seconds`, default 24 h), in ms. */
  readonly batchWindowMillis: number
  /** A claimed line's lease without a heartbeat (`batch_lease_seconds`, default 30 s), in milliseconds. */
  readonly batchLeaseMillis: number
  /** How often an instance looks for batch lines to run (`batch_poll_ms`, default 500), in milliseconds. */
  readonly batchPollMillis: number
  /** How often a batch delegated to a vendor is retrieved there (`batch_vendor_poll_ms`, default 15000), in ms. */
  readonly batchVendorPollMillis: number
  /** Batches one user may have unfinished at once (`batch_max_in_progress`, default 100). */
  readonly batchMaxInProgress: number
  /** The HTTP status of `model_not_found`: 503 (the spec's, default) or 404 (OpenAI's; clients do not retry it). */
  readonly unknownModelStatus: 503 | 404
  /**
   * The gateway's address as clients reach it, without a trailing `/`
   * (`settings.public_url`, else `oauth.public_url`); `undefined`: the address
   * each request came to.
   */
  readonly publicUrl: string | undefined
  /**
   * Frames a Realtime caller may send per second (`realtime_max_events_per_second`, default 200: 20 ms audio
   * appends are 50 a second); 0: no limit.
   */
  readonly realtimeMaxEventsPerSecond: number
  /** Input and output tokens of the one response a Realtime session's float covers (defaults 32,768 and 4,096). */
  readonly realtimeFloatInputTokens: number
  readonly realtimeFloatOutputTokens: number
  /** `/v1/files`: largest upload (default 200 MiB) and largest total per user (default 10 GiB), in bytes. */
  readonly fileMaxBytes: number
  readonly fileStoragePerUserBytes: number
  /** How often each instance sweeps expired and deleted files (default 60 s), in milliseconds; 0: never. */
  readonly fileSweepIntervalMillis: number
  /** Uploads one user may have running at once on one instance (default 4). */
  readonly fileMaxUploadsInFlight: number
}

/**
 * The settings of a file (defaults for what it leaves out).
 *
 * @category constructors
 */
export const settingsOf = (file: BootstrapFile | undefined): Settings => {
  const given = file?.settings ?? {}
  return {
    retryTimes: given.retry_times ?? 2,
    defaultMaxTokens: given.default_max_tokens ?? DEFAULT_OUTPUT_TOKENS,
    maxBodyBytes: given.max_body_bytes ?? 32 * 1024 * 1024,
    websocket: {
      maxFrameBytes: given.websocket_max_frame_bytes ?? DEFAULT_WEBSOCKET_LIMITS.maxFrameBytes,
      maxEventsPerSecond: given.websocket_max_events_per_second ?? DEFAULT_WEBSOCKET_LIMITS.maxEventsPerSecond,
      idleSeconds: given.websocket_idle_seconds ?? DEFAULT_WEBSOCKET_LIMITS.idleSeconds
    },
    requestDeadlineMs: given.request_deadline_ms ?? 10 * 60_000,
    firstByteTimeoutMs: 5 * 60_000,
    idleTimeoutMs: 2 * 60_000,
    totalTimeoutMs: 30 * 60_000,
    cooldownFailures: given.cooldown_failures ?? 3,
    cooldownSeconds: given.cooldown_seconds ?? 30,
    cooldownMaxSeconds: given.cooldown_max_seconds ?? 600,
    probeIntervalSeconds: given.probe_interval_seconds ?? 60,
    healthRollupIntervalSeconds: given.health_rollup_interval_seconds ?? 60,
    keyCacheTtlMs: given.key_cache_ttl_ms ?? 5000,
    mediaMaxBytes: given.media_max_bytes ?? 20 * 1024 * 1024,
    mediaTimeoutMs: given.media_timeout_ms ?? 10_000,
    mediaAllowHosts: given.media_allow_hosts ?? [],
    videoContentMaxBytes: given.video_content_max_bytes ?? 512 * 1024 * 1024,
    journalFsync: given.journal_fsync ?? false,
    videoContentTimeoutMs: given.video_content_timeout_ms ?? 10 * 60_000,
    statusToken: given.status_token,
    mediaMaxCount: given.media_max_count ?? 16,
    mediaMaxTotalBytes: given.media_max_total_bytes ?? 50 * 1024 * 1024,
    metricsToken: given.metrics_token,
    registration: given.registration ?? true,
    newUserQuota: given.new_user_quota ?? 0,
    newUserGroup: given.new_user_group ?? "default",
    sessionIdleMillis: (given.session_idle_minutes ?? 720) * 60_000,
    sessionMaxMillis: (given.session_max_hours ?? 168) * 3_600_000,
    loginMaxFailures: given.login_max_failures ?? 5,
    loginWindowMillis: (given.login_window_seconds ?? 900) * 1000,
    loginAddressMaxFailures: given.login_address_max_failures ?? 30,
    registrationsPerAddress: given.registrations_per_address ?? 10,
    registrationWindowMillis: (given.registration_window_seconds ?? 3600) * 1000,
    hashWorkers: given.hash_workers ?? 1,
    hashQueue: given.hash_queue ?? 32,
    realtimeMaxEventsPerSecond: given.realtime_max_events_per_second ?? 200,
    realtimeFloatInputTokens: given.realtime_float_input_tokens ?? 32_768,
    realtimeFloatOutputTokens: given.realtime_float_output_tokens ?? 4_096,
    fileMaxBytes: given.file_max_bytes ?? 200 * 1024 * 1024,
    fileStoragePerUserBytes: given.file_storage_per_user_bytes ?? 10 * 1024 * 1024 * 1024,
    fileSweepIntervalMillis: (given.file_sweep_interval_seconds ?? 60) * 1000,
    fileMaxUploadsInFlight: given.file_max_uploads_in_flight ?? 4,
    trustedProxies: given.trusted_proxies ?? [],
    maxTasksInFlight: given.max_tasks_in_flight ?? 16,
    maxPendingAssets: given.max_pending_assets ?? 8,
    taskPollMillis: given.task_poll_interval_ms ?? 5000,
    taskDeadlineMillis: (given.task_deadline_seconds ?? 86_400) * 1000,
    batchConcurrency: given.batch_concurrency ?? 8,
    batchKeyConcurrency: given.batch_key_concurrency ?? 16,
    batchWindowMillis: (given.batch_window_seconds ?? 86_400) * 1000,
    batchLeaseMillis: (given.batch_lease_seconds ?? 30) * 1000,
    batchPollMillis: given.batch_poll_ms ?? 500,
    batchVendorPollMillis: given.batch_vendor_poll_ms ?? 15_000,
    batchMaxInProgress: given.batch_max_in_progress ?? 100,
    unknownModelStatus: given.unknown_model_status ?? 503,
    publicUrl: (given.public_url ?? file?.oauth?.public_url)?.replace(/\/+$/, "")
  }
}

/** @category services */
export class GatewaySettings extends Context.Service<GatewaySettings, Settings>()("sluice/services/GatewaySettings") {
  /** The settings of `file`. */
  static readonly layer = (file: BootstrapFile | undefined) => Layer.succeed(GatewaySettings, settingsOf(file))
}
