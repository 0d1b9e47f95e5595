/**
 * The dashboard: balance and spend (today, 7 and 30 days) in USD, requests,
 * and a daily chart of spend by model (plain SVG), from `GET /api/user/self`
 * and `GET /api/user/self/usage?days=30`.
 */
import { useEffect, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { type Me, me } from "./state.ts"
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

const COLOURS = ["#1f6feb", "#b35900", "#1a7f37", "#8250df", "#cf222e", "#0e7490"]

/** The UTC date `daysAgo` days before today, `YYYY-MM-DD`. */
const dayText = (daysAgo: number): string => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)

/** Spend per day by model as stacked bars, with a legend. */
const Chart = (props: { rows: ReadonlyArray<Daily> }) => {
  const days = Array.from({ length: 30 }, (_, index) => dayText(29 - index))
  const models = [...new Set(props.rows.map((row) => row.model))].sort()
  const totals = days.map((day) =>
    props.rows.filter((row) => row.date === day).reduce((sum, row) => sum + row.quota, 0)
  )
  const max = Math.max(1, ...totals)
  const width = 600, height = 160, bar = width / days.length
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label="Spend per day over 30 days, by model"
        preserveAspectRatio="none"
      >
        {days.flatMap((day, index) => {
          let y = height
          return models.map((model, colour) => {
            const row = props.rows.find((r) => r.date === day && r.model === model)
            if (row === undefined || row.quota === 0) return null
            const h = Math.max(1, (row.quota / max) * (height - 10))
            y -= h
            return (
              <rect
                key={`${day}-${model}`}
                x={index * bar + 1}
                y={y}
                width={bar - 2}
                height={h}
                fill={COLOURS[colour % COLOURS.length]}
              >
                <title>{`${day} ${model}: ${usd(row.quota)}, ${row.requests} requests`}</title>
              </rect>
            )
          })
        })}
      </svg>
      <figcaption>
        <span class="axis">{days[0]} to {days[days.length - 1]} (UTC days; peak {usd(Math.max(0, ...totals))})</span>
        {" "}
        {models.length === 0
          ? "No usage in the last 30 days."
          : models.map((model, colour) => (
            <span key={model} class="legend">
              <span class="swatch" style={{ background: COLOURS[colour % COLOURS.length] }} /> {model}
            </span>
          ))}
      </figcaption>
    </figure>
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
      <h1>Dashboard</h1>
      <ErrorText error={error} />
      {user && (
        <dl class="cards">
          <div>
            <dt>Balance</dt>
            <dd data-testid="balance">{usd(user.quota)}</dd>
          </div>
          <div>
            <dt>Spent today</dt>
            <dd data-testid="spend-today">{usd(spendSince(0))}</dd>
          </div>
          <div>
            <dt>Spent, 7 days</dt>
            <dd data-testid="spend-7">{usd(spendSince(6))}</dd>
          </div>
          <div>
            <dt>Spent, 30 days</dt>
            <dd data-testid="spend-30">{usd(spendSince(29))}</dd>
          </div>
          <div>
            <dt>Requests, 30 days</dt>
            <dd>{requests}</dd>
          </div>
          <div>
            <dt>Spent in all</dt>
            <dd>{usd(user.used_quota)}</dd>
          </div>
        </dl>
      )}
      <h2>Spend per day by model</h2>
      {rows === null ? <p>Loading…</p> : <Chart rows={rows} />}
    </section>
  )
}
