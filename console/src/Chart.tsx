/// <reference lib="dom" />
/**
 * A time chart in a page: a figure with its title, the chart (drawn by the chart module, loaded from
 * `/console/charts.js` on first use so the first page stays small) and, when there is nothing to draw, an empty
 * state in words. The chart's values are also in the figure's accessible name, so a screen reader hears the same.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import type { ChartSpec, DrawnChart } from "./charts/TimeChart.ts"
import { CHART } from "./strings.ts"

type ChartModule = typeof import("./charts/TimeChart.ts")

/** Where the chart module is served (a fixed, same-origin file: the CSP's `script-src 'self'`). */
const CHARTS_URL = "/console/charts.js"

let loading: Promise<ChartModule> | undefined

/** The chart module, loaded once. */
export const chartModule = (): Promise<ChartModule> => {
  loading ??= import(CHARTS_URL) as Promise<ChartModule>
  return loading
}

/** Props of `TimeChart`: the spec to draw, the figure's title, and the words shown when `empty`. */
export interface TimeChartProps {
  readonly title: string
  readonly spec: ChartSpec
  readonly empty?: string | undefined
  /** A summary read by assistive technology (e.g. the totals), added to the title. */
  readonly summary?: string
  readonly sparkline?: boolean
}

/** A chart figure; the chart is drawn once the module has loaded. */
export const TimeChart = (props: TimeChartProps) => {
  const target = useRef<HTMLDivElement>(null)
  const [failed, setFailed] = useState<string | null>(null)
  const hasData = props.spec.series.some((series) => series.values.some((value) => value !== null && value !== 0))
  useEffect(() => {
    if (!hasData || target.current === null) return
    let drawn: DrawnChart | undefined
    let live = true
    chartModule().then(
      (module) => {
        if (live && target.current !== null) {
          drawn = module.drawTimeChart(target.current, {
            ...props.spec,
            timeLabel: props.spec.days ? CHART.day : CHART.time
          })
        }
      },
      () => setFailed(CHART.failed)
    )
    return () => {
      live = false
      drawn?.destroy()
    }
  }, [props.spec, hasData, CHART.day])
  const label = props.summary === undefined ? props.title : `${props.title}: ${props.summary}`
  if (props.sparkline) {
    return hasData
      ? <div class="spark" role="img" aria-label={label} ref={target} />
      : <span class="spark-empty">{props.empty ?? CHART.noData}</span>
  }
  return (
    <figure class="chart" role="group" aria-label={label}>
      <figcaption class="chart-title">
        {props.title} <span class="unit">({props.spec.unit})</span>
      </figcaption>
      {failed !== null && <p class="error" role="alert">{failed}</p>}
      {hasData
        ? <div class="plot" ref={target} style={{ minHeight: `${props.spec.height + 40}px` }} />
        : <p class="empty">{props.empty ?? CHART.nothing}</p>}
    </figure>
  )
}
