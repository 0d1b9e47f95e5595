/**
 * The dashboard: balance and spend (today, 7 and 30 days) in USD, requests,
 * and a daily chart of spend by model (uPlot, loaded on demand: `Chart.tsx`), from `GET /api/user/self`
 * and `GET /api/user/self/usage?days=30`.
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import type { ChartSpec } from "./charts/TimeChart.ts"
import { TimeChart } from "./Chart.tsx"
import { usd } from "./money.ts"
import { type Me, me } from "./state.ts"
import { COMMON, DASHBOARD } from "./strings.ts"
import { ErrorText } from "./ui.tsx"

/** One day and model of usage. */
interface Daily {
  readonly date: string
  readonly model: string
  readonly requests: number
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
}

/** The chart colours, as CSS variables of `app.css` (light and dark). */
const COLOURS = ["--chart-1", "--chart-2", "--chart-3", "--chart-4", "--chart-5", "--chart-6"]

/** The UTC date `daysAgo` days before today, `YYYY-MM-DD`. */
const dayText = (daysAgo: number): string => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)

/** A USD amount for an axis tick or the legend (quota units in, at most 4 significant digits out). */
const usdTick = (units: number): string => `${Number((units / 1_000_000).toPrecision(4))} USD`

/** Spend per UTC day over 30 days, one line per model, with axes (day, USD), a legend and hover values. */
const Chart = (props: { rows: ReadonlyArray<Daily> }) => {
  const spec = useMemo((): ChartSpec => {
    const days = Array.from({ length: 30 }, (_, index) => dayText(29 - index))
    const models = [...new Set(props.rows.map((row) => row.model))].sort()
    return {
      times: days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000),
      series: models.map((model, index) => ({
        label: model,
        values: days.map((day) => props.rows.find((row) => row.date === day && row.model === model)?.quota ?? 0),
        colour: COLOURS[index % COLOURS.length]
      })),
      unit: "USD",
      format: usdTick,
      height: 200,
      days: true
    }
  }, [props.rows])
  const total = props.rows.reduce((sum, row) => sum + row.quota, 0)
  return (
    <TimeChart
      title={DASHBOARD.chartTitle}
      summary={DASHBOARD.inAll(usd(total))}
      spec={spec}
      empty={DASHBOARD.chartEmpty}
    />
  )
}

/** The dashboard page. */
export const Dashboard = () => {
  const [rows, setRows] = useState<ReadonlyArray<Daily> | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    Promise.all([api<Me>("GET", "/api/user/self"), api<ReadonlyArray<Daily>>("GET", "/api/user/self/usage?days=30")])
      .then(([self, usage]) => {
        me.value = self
        setRows(usage)
      })
      .catch((caught) => setError(wordsOf(caught)))
  }, [])
  const user = me.value
  const spendSince = (daysAgo: number) =>
    (rows ?? []).filter((row) => row.date >= dayText(daysAgo)).reduce((sum, row) => sum + row.quota, 0)
  const requests = (rows ?? []).reduce((sum, row) => sum + row.requests, 0)
  return (
    <section>
      <h1>{DASHBOARD.title}</h1>
      <ErrorText error={error} />
      {user && (
        <dl class="cards">
          <div>
            <dt>{DASHBOARD.balance}</dt>
            <dd data-testid="balance">{usd(user.quota)}</dd>
          </div>
          <div>
            <dt>{DASHBOARD.today}</dt>
            <dd data-testid="spend-today">{usd(spendSince(0))}</dd>
          </div>
          <div>
            <dt>{DASHBOARD.week}</dt>
            <dd data-testid="spend-7">{usd(spendSince(6))}</dd>
          </div>
          <div>
            <dt>{DASHBOARD.month}</dt>
            <dd data-testid="spend-30">{usd(spendSince(29))}</dd>
          </div>
          <div>
            <dt>{DASHBOARD.requests}</dt>
            <dd>{COMMON.count(requests)}</dd>
          </div>
          <div>
            <dt>{DASHBOARD.total}</dt>
            <dd>{usd(user.used_quota)}</dd>
          </div>
        </dl>
      )}
      <h2>{DASHBOARD.chartHeading}</h2>
      {rows === null ? <p>{DASHBOARD.loading}</p> : <Chart rows={rows} />}
    </section>
  )
}
