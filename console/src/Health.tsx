/// <reference lib="dom" />
/**
 * The Health page (admins): per channel or per model over the last hour, day or week (`GET /api/health/channels`,
 * `GET /api/health/models`): a table with each one's state now, attempts, error rate, p50/p95 latency, tokens,
 * cost and a sparkline of its attempts; a detail (one channel or model) with charts of attempts and failures by
 * kind, error rate, latency, time to first token (streamed answers), tokens and cost over the window, the channel's events marked on the time axis and
 * listed, its keys and last test. The view is kept in the hash (`#/health?by=model&window=day&model=…`), and
 * read again every 30 seconds.
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import type { ChartEvent, ChartSeries, ChartSpec } from "./charts/TimeChart.ts"
import { TimeChart } from "./Chart.tsx"
import { usd } from "./money.ts"
import { route } from "./state.ts"
import { language } from "./i18n/language.ts"
import { COMMON, HEALTH } from "./strings.ts"
import { ErrorText, TableScroll, timeText } from "./ui.tsx"

/** Aggregates of usage rows, as the API answers them. */
interface Stats {
  readonly requests: number
  readonly errors: number
  readonly errors_by_kind: Readonly<Record<string, number>>
  readonly p50_ms: number | null
  readonly p95_ms: number | null
  /** Time to first token of the streamed successes (milliseconds; `null`: none streamed). */
  readonly ttft_p50_ms: number | null
  readonly ttft_p95_ms: number | null
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
}

interface Series {
  readonly channel_id: number | null
  readonly model: string | null
  readonly name: string | null
  readonly totals: Stats
  readonly buckets: ReadonlyArray<Stats & { readonly t: number }>
}

interface ChannelState {
  readonly channel_id: number
  readonly name: string
  readonly state: "healthy" | "cooling" | "disabled"
  readonly enabled: boolean
  readonly consecutive_failures: number
  readonly cooldown_until: number | null
  readonly unhealthy: boolean
  readonly unhealthy_reason: string | null
  readonly health_changed_at: number | null
  readonly keys: ReadonlyArray<{ readonly position: number; readonly enabled: boolean; readonly reason: string | null }>
  readonly last_probe: {
    readonly at: number
    readonly key_position: number | null
    readonly ok: boolean
    readonly status: number | null
  } | null
  readonly tested_at: number | null
  readonly test_latency_ms: number | null
  readonly test_error: string | null
}

interface HealthEvent {
  readonly at: number
  readonly channel_id: number
  readonly channel: string | null
  readonly type: string
  readonly key_position: number | null
  readonly reason: string | null
}

interface Report {
  readonly by: "channel" | "model"
  readonly window: "hour" | "day" | "week"
  readonly bucket_seconds: number
  readonly start: number
  readonly end: number
  readonly failure_kinds: ReadonlyArray<string>
  readonly series: ReadonlyArray<Series>
  readonly channels: ReadonlyArray<ChannelState>
  readonly events: ReadonlyArray<HealthEvent>
  /** Day and week: the buckets before this (epoch seconds) were read from the rollup; `null` otherwise. */
  readonly rollup_until: number | null
  readonly query_ms: number
}

/** The view in the hash: what, over which window, and one channel or model in detail. */
interface View {
  readonly by: "channel" | "model"
  readonly window: "hour" | "day" | "week"
  readonly channel?: string | undefined
  readonly model?: string | undefined
}

const viewOf = (hash: string): View => {
  const query = new URLSearchParams(hash.includes("?") ? hash.slice(hash.indexOf("?") + 1) : "")
  const window = query.get("window")
  return {
    by: query.get("by") === "model" ? "model" : "channel",
    window: window === "day" || window === "week" ? window : "hour",
    channel: query.get("channel") ?? undefined,
    model: query.get("model") ?? undefined
  }
}

const hashOf = (view: View): string => {
  const query = new URLSearchParams({ by: view.by, window: view.window })
  if (view.channel !== undefined) query.set("channel", view.channel)
  if (view.model !== undefined) query.set("model", view.model)
  return `#/health?${query}`
}

/** The chart colours, as CSS variables of `app.css` (light and dark). */
const KIND_COLOURS = ["--chart-2", "--chart-3", "--chart-4", "--chart-5", "--chart-6"]

const msText = (value: number | null): string => value === null ? "–" : `${Math.round(value)} ms`
const percentText = (part: number, whole: number): string =>
  whole === 0 ? "–" : `${(Math.round((part / whole) * 1000) / 10).toFixed(1)} %`
const countText = (value: number): string => COMMON.count(value)
const usdAxis = (units: number): string => `${(units / 1_000_000).toPrecision(3).replace(/\.?0+$/, "")} USD`

/** The window's bucket starts, oldest first. */
const timesOf = (report: Report): Array<number> => {
  const out: Array<number> = []
  for (let t = report.start; t < report.end; t += report.bucket_seconds) out.push(t)
  return out
}

/** One value per bucket of `series`: `pick` of the bucket, `missing` where it has none. */
const valuesOf = (
  times: ReadonlyArray<number>,
  series: Series,
  pick: (bucket: Stats) => number | null,
  missing: number | null
): Array<number | null> => {
  const byTime = new Map(series.buckets.map((bucket) => [bucket.t, bucket]))
  return times.map((t) => {
    const bucket = byTime.get(t)
    return bucket === undefined ? missing : pick(bucket)
  })
}

const eventText = (event: HealthEvent): string =>
  `${event.type.replace("channel.", "")}${event.key_position === null ? "" : HEALTH.keyOf(event.key_position)}${
    event.reason === null ? "" : `: ${event.reason}`
  }`

const StateText = (props: { state: ChannelState | undefined }) => {
  const state = props.state
  if (state === undefined) return <span>–</span>
  const disabledKeys = state.keys.filter((key) => !key.enabled).length
  return (
    <span class={`state state-${state.state}`}>
      {state.state === "cooling" ? HEALTH.coolingUntil(timeText(state.cooldown_until).slice(11)) : state.state}
      {disabledKeys > 0 && HEALTH.keysDisabled(disabledKeys, state.keys.length)}
    </span>
  )
}

/** The table of every channel or model in the window. */
const Overview = (props: { report: Report; view: View }) => {
  const { report, view } = props
  const times = useMemo(() => timesOf(report), [report])
  const states = new Map(report.channels.map((state) => [state.channel_id, state]))
  if (report.series.length === 0) {
    return <p class="empty">{HEALTH.noRequests(HEALTH.windowsInline[view.window])}</p>
  }
  return (
    <TableScroll label={HEALTH.tableRegion}>
      <table>
        <caption>
          {HEALTH.caption(report.by === "channel", HEALTH.windowsInline[view.window])}
        </caption>
        <thead>
          <tr>
            <th scope="col">{report.by === "channel" ? HEALTH.columns.channel : HEALTH.columns.model}</th>
            {report.by === "channel" && <th scope="col">{HEALTH.columns.state}</th>}
            <th scope="col">{HEALTH.columns.attempts}</th>
            <th scope="col">{HEALTH.columns.errorRate}</th>
            <th scope="col">{HEALTH.columns.p50}</th>
            <th scope="col">{HEALTH.columns.p95}</th>
            <th scope="col">{HEALTH.columns.tokens}</th>
            <th scope="col">{HEALTH.columns.cost}</th>
            <th scope="col">{HEALTH.columns.overTime}</th>
          </tr>
        </thead>
        <tbody>
          {report.series.map((series) => {
            const name = series.name ?? HEALTH.channelNamed(series.channel_id)
            const detail = report.by === "channel"
              ? { ...view, channel: String(series.channel_id), model: undefined }
              : { ...view, model: series.model ?? "", channel: undefined }
            const spec: ChartSpec = {
              times,
              series: [{
                label: HEALTH.attempts,
                values: valuesOf(times, series, (b) => b.requests, 0),
                colour: "--chart-1"
              }],
              unit: HEALTH.attemptsUnit,
              format: countText,
              height: 28,
              sparkline: true
            }
            return (
              <tr key={name}>
                <th scope="row">
                  <a href={hashOf(detail)}>{name}</a>
                </th>
                {report.by === "channel" && (
                  <td>
                    <StateText state={states.get(series.channel_id ?? 0)} />
                  </td>
                )}
                <td>{countText(series.totals.requests)}</td>
                <td>{percentText(series.totals.errors, series.totals.requests)}</td>
                <td>{msText(series.totals.p50_ms)}</td>
                <td>{msText(series.totals.p95_ms)}</td>
                <td>{countText(series.totals.prompt_tokens + series.totals.completion_tokens)}</td>
                <td>{usd(series.totals.quota)}</td>
                <td class="spark-cell">
                  <TimeChart
                    sparkline
                    title={HEALTH.attemptsOf(name)}
                    summary={HEALTH.attemptsInWindow(series.totals.requests)}
                    spec={spec}
                  />
                </td>
              </tr>
            )
          })}
        </tbody>
      </table>
    </TableScroll>
  )
}

/** One channel's state now: cooldown, the shared unhealthy mark, keys, the last test. */
const ChannelPanel = (props: { state: ChannelState }) => {
  const state = props.state
  return (
    <dl class="cards health-state">
      <div>
        <dt>{HEALTH.state}</dt>
        <dd>
          <StateText state={state} />
        </dd>
      </div>
      <div>
        <dt>{HEALTH.failures}</dt>
        <dd>{state.consecutive_failures}</dd>
      </div>
      <div>
        <dt>{HEALTH.unhealthy}</dt>
        <dd>
          {state.unhealthy
            ? HEALTH.since(timeText(state.health_changed_at), state.unhealthy_reason ?? HEALTH.noReason)
            : HEALTH.no}
        </dd>
      </div>
      <div>
        <dt>{HEALTH.probe}</dt>
        <dd>
          {state.last_probe === null ? HEALTH.none : HEALTH.probed(
            timeText(state.last_probe.at),
            state.last_probe.key_position,
            state.last_probe.ok,
            state.last_probe.status
          )}
        </dd>
      </div>
      <div>
        <dt>{HEALTH.test}</dt>
        <dd>
          {state.tested_at === null
            ? HEALTH.never
            : `${timeText(state.tested_at)}: ${state.test_error ?? HEALTH.passedIn(state.test_latency_ms)}`}
        </dd>
      </div>
      <div>
        <dt>{HEALTH.keys}</dt>
        <dd>
          <ul class="keys">
            {state.keys.map((key) => (
              <li key={key.position}>
                {HEALTH.keyState(key.position, key.enabled, key.reason)}
              </li>
            ))}
          </ul>
        </dd>
      </div>
    </dl>
  )
}

/** One channel's or model's charts over the window, events marked, and the events listed. */
const Detail = (props: { report: Report; view: View }) => {
  const { report, view } = props
  const series = report.series[0]
  const times = useMemo(() => timesOf(report), [report])
  const events: Array<ChartEvent> = report.events.map((event) => ({ at: event.at, label: eventText(event) }))
  const days = report.window === "week"
  const specs = useMemo(() => {
    if (series === undefined) return undefined
    const kinds = report.failure_kinds.filter((kind) => (series.totals.errors_by_kind[kind] ?? 0) > 0)
    const failures: Array<ChartSeries> = kinds.map((kind, index) => ({
      label: HEALTH.failedKind(kind),
      values: valuesOf(times, series, (b) => b.errors_by_kind[kind] ?? 0, 0),
      colour: KIND_COLOURS[index % KIND_COLOURS.length]
    }))
    const base = { times, height: 180, days, events }
    return {
      attempts: {
        ...base,
        series: [
          {
            label: HEALTH.attempts,
            values: valuesOf(times, series, (b) => b.requests, 0),
            colour: "--chart-1",
            bars: true
          },
          ...failures
        ],
        unit: HEALTH.attemptsUnit,
        format: countText
      },
      errorRate: {
        ...base,
        series: [{
          label: HEALTH.errorRate,
          values: valuesOf(times, series, (b) => b.requests === 0 ? null : (b.errors / b.requests) * 100, null),
          colour: "--chart-2"
        }],
        unit: "%",
        format: (value: number) => `${Math.round(value * 10) / 10} %`
      },
      latency: {
        ...base,
        series: [
          { label: "p50", values: valuesOf(times, series, (b) => b.p50_ms, null), colour: "--chart-1" },
          { label: "p95", values: valuesOf(times, series, (b) => b.p95_ms, null), colour: "--chart-4" }
        ],
        unit: "ms",
        format: (value: number) => `${Math.round(value)} ms`
      },
      firstToken: {
        ...base,
        series: [
          { label: "p50", values: valuesOf(times, series, (b) => b.ttft_p50_ms, null), colour: "--chart-1" },
          { label: "p95", values: valuesOf(times, series, (b) => b.ttft_p95_ms, null), colour: "--chart-4" }
        ],
        unit: "ms",
        format: (value: number) => `${Math.round(value)} ms`
      },
      tokens: {
        ...base,
        series: [
          { label: HEALTH.prompt, values: valuesOf(times, series, (b) => b.prompt_tokens, 0), colour: "--chart-1" },
          {
            label: HEALTH.completion,
            values: valuesOf(times, series, (b) => b.completion_tokens, 0),
            colour: "--chart-3"
          }
        ],
        unit: HEALTH.tokensUnit,
        format: countText
      },
      cost: {
        ...base,
        series: [{ label: HEALTH.cost, values: valuesOf(times, series, (b) => b.quota, 0), colour: "--chart-5" }],
        unit: "USD",
        format: usdAxis
      }
    } satisfies Record<string, ChartSpec>
  }, [report, language.value])
  const name = series?.name ?? view.model ?? HEALTH.channelNamed(view.channel)
  const state = report.channels[0]
  const empty = HEALTH.noRequests(HEALTH.windowsInline[view.window])
  return (
    <>
      <p>
        <a href={hashOf({ by: view.by, window: view.window })}>
          {HEALTH.all(view.by === "channel")}
        </a>
      </p>
      <h2>{name}</h2>
      {state !== undefined && <ChannelPanel state={state} />}
      {series === undefined || specs === undefined ? <p class="empty">{empty}</p> : (
        <>
          <dl class="cards">
            <div>
              <dt>{HEALTH.attempts}</dt>
              <dd>{countText(series.totals.requests)}</dd>
            </div>
            <div>
              <dt>{HEALTH.errorRate}</dt>
              <dd>{percentText(series.totals.errors, series.totals.requests)}</dd>
            </div>
            <div>
              <dt>{HEALTH.p50p95}</dt>
              <dd>{msText(series.totals.p50_ms)} / {msText(series.totals.p95_ms)}</dd>
            </div>
            <div>
              <dt>{HEALTH.firstTokenP50p95}</dt>
              <dd>{msText(series.totals.ttft_p50_ms)} / {msText(series.totals.ttft_p95_ms)}</dd>
            </div>
            <div>
              <dt>{HEALTH.tokens}</dt>
              <dd>{countText(series.totals.prompt_tokens + series.totals.completion_tokens)}</dd>
            </div>
            <div>
              <dt>{HEALTH.cost}</dt>
              <dd>{usd(series.totals.quota)}</dd>
            </div>
          </dl>
          <div class="chart-grid">
            <TimeChart title={HEALTH.chartAttempts} spec={specs.attempts} empty={empty} />
            <TimeChart title={HEALTH.errorRate} spec={specs.errorRate} empty={HEALTH.noFailed} />
            <TimeChart title={HEALTH.chartLatency} spec={specs.latency} empty={HEALTH.noSuccess} />
            <TimeChart title={HEALTH.chartFirstToken} spec={specs.firstToken} empty={HEALTH.noStreamed} />
            <TimeChart title={HEALTH.tokens} spec={specs.tokens} empty={HEALTH.noTokens} />
            <TimeChart title={HEALTH.cost} spec={specs.cost} empty={HEALTH.noCost} />
          </div>
        </>
      )}
      <h3>{HEALTH.events}</h3>
      {report.events.length === 0 ? <p class="empty">{HEALTH.noEvents}</p> : (
        <table>
          <caption>{HEALTH.eventsCaption}</caption>
          <thead>
            <tr>
              <th scope="col">{HEALTH.eventColumns.time}</th>
              <th scope="col">{HEALTH.eventColumns.channel}</th>
              <th scope="col">{HEALTH.eventColumns.event}</th>
            </tr>
          </thead>
          <tbody>
            {report.events.map((event, index) => (
              <tr key={index}>
                <td>{timeText(event.at)}</td>
                <td>{event.channel ?? event.channel_id}</td>
                <td>{eventText(event)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  )
}

/** The Health page. */
export const Health = () => {
  const [hash, setHash] = useState(location.hash)
  const [report, setReport] = useState<Report | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    const changed = () => setHash(location.hash)
    addEventListener("hashchange", changed)
    return () => removeEventListener("hashchange", changed)
  }, [])
  const view = viewOf(route.value === "health" ? hash : "")
  const detail = view.channel !== undefined || view.model !== undefined
  const path = useMemo(() => {
    const query = new URLSearchParams({ window: view.window })
    if (view.channel !== undefined) query.set("channel", view.channel)
    if (view.model !== undefined) query.set("model", view.model)
    return `/api/health/${view.by === "channel" ? "channels" : "models"}?${query}`
  }, [view.by, view.window, view.channel, view.model])
  useEffect(() => {
    let live = true
    const load = () =>
      api<Report>("GET", path).then(
        (answer) => {
          if (!live) return
          setReport(answer)
          setError(null)
        },
        (caught) => live && setError(wordsOf(caught))
      )
    setReport(null)
    load()
    const timer = setInterval(load, 30_000)
    return () => {
      live = false
      clearInterval(timer)
    }
  }, [path])
  const go = (next: View) => (location.hash = hashOf(next))
  return (
    <section>
      <h1>{HEALTH.title}</h1>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <fieldset>
          <legend>{HEALTH.by}</legend>
          {(["channel", "model"] as const).map((by) => (
            <label key={by}>
              <input
                type="radio"
                name="by"
                checked={view.by === by}
                onChange={() => go({ by, window: view.window })}
              />{" "}
              {by === "channel" ? HEALTH.channels : HEALTH.models}
            </label>
          ))}
        </fieldset>
        <label class="field">
          <span>{HEALTH.window}</span>
          <select
            value={view.window}
            onChange={(event) => go({ ...view, window: (event.target as HTMLSelectElement).value as View["window"] })}
          >
            {(["hour", "day", "week"] as const).map((window) => (
              <option key={window} value={window}>{HEALTH.windows[window]}</option>
            ))}
          </select>
        </label>
      </form>
      <ErrorText error={error} />
      {report === null ? <p>{HEALTH.loading}</p> : (
        <>
          <p class="axis">
            {HEALTH.span(timeText(report.start), timeText(report.end), report.bucket_seconds / 60, report.query_ms)}
            {report.rollup_until !== null && report.rollup_until > report.start &&
              ` ${HEALTH.estimated(timeText(report.rollup_until))}`}
          </p>
          {detail ? <Detail report={report} view={view} /> : <Overview report={report} view={view} />}
        </>
      )}
    </section>
  )
}
