/**
 * A gateway in front of the emulator for the image tests: image models on
 * each image channel type (`openai`, `ark`, `gemini`), a failover model whose
 * first channel fails, and users with known quotas; prices in USD per image.
 */
import { Result } from "effect"
import OpenAI from "openai"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import type { TestGateway } from "./Gateway.ts"

/** The caller's key (alice, 100 USD of quota). */
export const IMAGE_KEY = "sk-test-images-alice-01"
/** A key with 0.05 USD of quota. */
export const POOR_KEY = "sk-test-images-poor-001"

/** USD per image, by public model name. */
export const PRICES: Record<string, number> = {
  "dall-e-2": 0.02,
  "dall-e-3": 0.04,
  "gpt-image-1": 0.011,
  seedream: 0.03,
  "seedream-pro": 0.045,
  "gemini-image": 0.039,
  "img-failover": 0.05
}

/** The bootstrap file. */
export const imageConfig = (emulatorUrl: string): BootstrapFile => {
  const channel = (name: string, type: string, models: ReadonlyArray<string>, extra: Record<string, unknown> = {}) => ({
    name,
    type,
    base_url: emulatorUrl,
    keys: [`sk-test-up-${name}`],
    models,
    ...extra
  })
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 }, half: { ratio: 0.5 } },
      models: {
        ...Object.fromEntries(Object.entries(PRICES).map(([name, price]) => [name, { per_image: price }])),
        seedream: { per_image: PRICES.seedream, family: "flare" },
        "seedream-pro": { per_image: PRICES["seedream-pro"], family: "pro-image" },
        "img-unpriced": { input: 1, output: 1 }
      },
      channels: [
        channel("openai-images", "openai", ["dall-e-2", "dall-e-3", "gpt-image-1", "img-unpriced"]),
        channel("ark-images", "ark", ["seedream", "seedream-pro"], {
          base_url: `${emulatorUrl}/api/v3`,
          model_mapping: { seedream: "seedream-4-0-250828", "seedream-pro": "seedream-4-0-250828" }
        }),
        channel("gemini-images", "gemini", ["gemini-image"], {
          model_mapping: { "gemini-image": "gemini-2.5-flash-image" }
        }),
        channel("openai-broken", "openai", ["img-failover"], {
          priority: 10,
          model_mapping: { "img-failover": "dall-e-2" }
        }),
        channel("ark-backup", "ark", ["img-failover"], {
          priority: 0,
          model_mapping: { "img-failover": "seedream-4-0-250828" }
        })
      ],
      users: [
        {
          username: "alice",
          group: "default",
          quota: 100_000_000,
          tokens: [{ name: "main", key: IMAGE_KEY }]
        },
        { username: "poor", group: "half", quota: 50_000, tokens: [{ name: "main", key: POOR_KEY }] }
      ],
      settings: { cooldown_failures: 1000 }
    }),
    "images.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** The official SDK pointed at the gateway. */
export const imageClient = (gateway: TestGateway, key = IMAGE_KEY): OpenAI =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 })

/** `/api/usage/token` of `key`: used and available quota units. */
export const usageOf = async (
  gateway: TestGateway,
  key = IMAGE_KEY
): Promise<{ readonly used: number; readonly available: number }> => {
  const response = await fetch(`${gateway.url}/api/usage/token`, { headers: { authorization: `Bearer ${key}` } })
  const body = await response.json()
  return { used: body.data.total_used, available: body.data.total_available }
}

/** Quota units of `count` images of `model` at group ratio `ratio` (ceil(ratio × count × price × 10⁶)). */
export const expectedCost = (model: string, count: number, ratio = 1): number =>
  Math.ceil(Math.round(ratio * count * PRICES[model] * 1e9) / 1000)

/** Waits until `check` holds (the usage log is flushed off the hot path), or fails after ~3 s. */
export const eventually = async (check: () => Promise<boolean>): Promise<void> => {
  for (let tries = 0; tries < 60; tries++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error("The condition never held.")
}
