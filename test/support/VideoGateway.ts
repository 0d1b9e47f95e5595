/**
 * A gateway in front of the emulator for the video and task tests: video
 * models on each video channel type (one row per type in `VIDEO_CHANNELS`),
 * two users (alice and bob) with known quotas, a fast poller (100 ms) and a
 * fast emulator (100 ms per task phase: a task completes 400 ms after its
 * submit). Prices in USD per second.
 */
import { Result } from "effect"
import OpenAI from "openai"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { startGateway, type Store, type TestGateway } from "./Gateway.ts"

/** Alice's key (100 USD). */
export const ALICE = "sk-test-video-alice-0001"
/** Bob's key (100 USD): another user. */
export const BOB = "sk-test-video-bob-00001"

/** A key with 0.01 USD of quota. */
export const POOR = "sk-test-video-poor-0001"
/** A key whose user may make one request a minute. */
export const LIMITED = "sk-test-video-limited-01"

/** The users' console passwords (browser sessions). */
export const PASSWORDS = { alice: "alice-video-password-1", bob: "bob-video-password-1" } as const

/** USD per second of every video model. */
export const PER_SECOND = 0.1

/**
 * The video channel types under test: the channel's type, base URL suffix,
 * the public model served on it and the upstream model it maps to. A new
 * video wire is one more row.
 */
export const VIDEO_CHANNELS: ReadonlyArray<{
  readonly type: string
  readonly suffix: string
  readonly model: string
  readonly upstream: string
  /** The vendor has a remix call. */
  readonly remix: boolean
}> = [
  { type: "openai", suffix: "", model: "sora-2", upstream: "sora-2", remix: true },
  { type: "ark", suffix: "/api/v3", model: "seedance-video", upstream: "doubao-seedance-1-0-pro-250528", remix: false },
  { type: "gemini", suffix: "", model: "veo-video", upstream: "veo-3.0-generate-001", remix: false }
]

/** The bootstrap file; `settings` overrides the task settings. */
export const videoConfig = (settings: Record<string, unknown> = {}) => (emulatorUrl: string): BootstrapFile => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: {
        ...Object.fromEntries(VIDEO_CHANNELS.map((row) => [row.model, { per_second: PER_SECOND }])),
        "videoa-2-0-260128": { per_second: PER_SECOND },
        "mini-2.0": { per_second: PER_SECOND },
        "video-unpriced": { input: 1, output: 1 },
        "dall-e-2": { per_image: 0.02 }
      },
      channels: [
        ...VIDEO_CHANNELS.map((row) => ({
          name: `video-${row.type}`,
          type: row.type,
          base_url: emulatorUrl + row.suffix,
          keys: [`sk-test-up-video-${row.type}`],
          models: [row.model],
          model_mapping: { [row.model]: row.upstream }
        })),
        {
          name: "video-compatible",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-up-video-compatible"],
          models: ["videoa-2-0-260128", "mini-2.0", "video-unpriced", "dall-e-2"],
          model_mapping: { "videoa-2-0-260128": "vendor-video-a", "mini-2.0": "vendor-video-mini" }
        }
      ],
      users: [
        {
          username: "alice",
          password: PASSWORDS.alice,
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: ALICE }]
        },
        { username: "poor", group: "default", quota: 10_000, tokens: [{ name: "main", key: POOR }] },
        {
          username: "limited",
          group: "default",
          quota: 100_000_000,
          limits: { rpm: 1 },
          tokens: [{ name: "main", key: LIMITED }]
        },
        {
          username: "bob",
          password: PASSWORDS.bob,
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: BOB }]
        }
      ],
      settings: { cooldown_failures: 1000, task_poll_interval_ms: 100, ...settings }
    }),
    "videos.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/**
 * Starts a gateway on `options.emulator`, or on an emulator of its own (100 ms
 * per task phase) that its `close` stops too.
 */
export const startVideoGateway = async (options: {
  readonly store?: Store
  readonly databaseUrl?: string
  readonly settings?: Record<string, unknown>
  readonly emulator?: ReturnType<typeof startEmulator>
} = {}): Promise<TestGateway> => {
  const emulator = options.emulator ?? startEmulator({ videoStepMs: 100 })
  return await startGateway({
    config: videoConfig(options.settings),
    store: options.store,
    databaseUrl: options.databaseUrl,
    emulator,
    ownsEmulator: options.emulator === undefined
  })
}

/** The official SDK pointed at the gateway. */
export const videoClient = (gateway: TestGateway, key = ALICE): OpenAI =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 })

/** `/api/usage/token` of `key`: used and available quota units. */
export const usageOf = async (gateway: TestGateway, key = ALICE): Promise<{ used: number; available: number }> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${key}` } })
  const body = await response.json()
  return { used: body.data.total_used, available: body.data.total_available }
}

/** Quota units of `seconds` of video at `PER_SECOND` (ratio 1). */
export const videoCostOf = (seconds: number): number => Math.round(seconds * PER_SECOND * 1_000_000)

/** Waits until `check` holds, or fails after `ms` (default 8 s). */
export const eventually = async (check: () => Promise<boolean>, ms = 8000): Promise<void> => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("The condition never held.")
}

/** The upstream task ids the emulator handed out, of every vendor (from the paths the gateway polled). */
export const upstreamIdsOf = (gateway: TestGateway): ReadonlyArray<string> => {
  const ids = new Set<string>()
  for (const request of gateway.emulator.requests) {
    const match = /^\/v1\/videos\/([^/]+)/.exec(request.path) ??
      /^\/api\/v3\/contents\/generations\/tasks\/([^/]+)/.exec(request.path) ??
      /^\/v1beta\/models\/[^/]+\/operations\/([^/]+)/.exec(request.path)
    if (match !== null) ids.add(decodeURIComponent(match[1]))
  }
  return [...ids]
}
