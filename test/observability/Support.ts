/**
 * Shared by the observability tests: a two-channel bootstrap file and a
 * `/metrics` reader that parses the Prometheus text format with a real
 * parser (`parse-prometheus-text-format`, npm).
 */
import { Result } from "effect"
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"

/** The caller's key. */
export const KEY = "sk-test-alice-obs-0001"
/** The scraper's secret for `/metrics` off loopback. */
export const METRICS_TOKEN = "sk-test-metrics-token-0001"

/** Two openai channels on one emulator: `primary` (tried first) and `secondary`, told apart by their keys. */
export const twoChannels = (emulatorUrl: string, settings: Record<string, unknown> = {}): BootstrapFile => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gpt-test": { input: 2, output: 8 } },
      channels: [
        {
          name: "primary",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-upstream-primary"],
          models: ["gpt-test"],
          priority: 10
        },
        {
          name: "secondary",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-upstream-second"],
          models: ["gpt-test"]
        }
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }],
      settings: { cooldown_failures: 1000, metrics_token: METRICS_TOKEN, ...settings }
    }),
    "observability.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** One sample of the parser's output (counters and gauges: `value`; histograms: `buckets`, `count`, `sum`). */
interface Sample {
  readonly labels?: Record<string, string>
  readonly value?: string
  readonly buckets?: Record<string, string>
  readonly count?: string
  readonly sum?: string
}

/** One metric family of the parser's output. */
interface Family {
  readonly name: string
  readonly type: string
  readonly metrics: ReadonlyArray<Sample>
}

/** A parsed scrape: look samples up by name and exact labels. */
export class Scrape {
  readonly families: ReadonlyMap<string, Family>

  /** The same text with histogram `TYPE` lines left out: their `_bucket`, `_sum`, `_count` series as plain ones. */
  readonly series: ReadonlyMap<string, Family>

  constructor(text: string) {
    const parse = parsePrometheusTextFormat as (text: string) => ReadonlyArray<Family>
    this.families = new Map(parse(text).map((family) => [family.name, family]))
    // The parser folds the series of a labelled histogram into one (it keys buckets by `le` alone and keeps
    // `_count` only without labels), so histograms are also read as untyped series.
    const untyped = text.split("\n").filter((line) => !/^# TYPE \S+ histogram$/.test(line)).join("\n")
    const series = new Map<string, Family>()
    for (const family of parse(untyped)) {
      // A histogram's series interleave (`_bucket`, `_sum`, `_count` of one label set, then the next): join them.
      const seen = series.get(family.name)
      series.set(family.name, seen === undefined ? family : { ...seen, metrics: [...seen.metrics, ...family.metrics] })
    }
    this.series = series
  }

  #sample(name: string, labels: Record<string, string>): Sample | undefined {
    const wanted = Object.entries(labels).sort()
    return this.families.get(name)?.metrics.find((sample) => {
      const have = Object.entries(sample.labels ?? {}).sort()
      return JSON.stringify(have) === JSON.stringify(wanted)
    })
  }

  /** A counter's or gauge's value (0 when the series does not exist yet). */
  value(name: string, labels: Record<string, string> = {}): number {
    return Number(this.#sample(name, labels)?.value ?? 0)
  }

  /** A histogram's count (0 when the series does not exist yet). */
  count(name: string, labels: Record<string, string>): number {
    const wanted = JSON.stringify(Object.entries(labels).sort())
    const sample = this.series.get(`${name}_count`)?.metrics.find((sample) =>
      JSON.stringify(Object.entries(sample.labels ?? {}).sort()) === wanted
    )
    return Number(sample?.value ?? 0)
  }

  /** The type the family was declared with (`COUNTER`, `GAUGE`, `HISTOGRAM`), or `undefined`. */
  type(name: string): string | undefined {
    return this.families.get(name)?.type
  }
}

/** Scrapes `url/metrics` (loopback, so no token) and parses it. */
export const scrape = async (url: string): Promise<Scrape> => {
  const response = await fetch(`${url}/metrics`)
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET /metrics: ${response.status} ${text}`)
  return new Scrape(text)
}
