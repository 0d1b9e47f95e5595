/// <reference lib="dom" />
/**
 * The console's charts, loaded only when a page shows one (built apart into `console/dist/charts.js`, with uPlot's
 * stylesheet in `charts.css`): a time chart drawn by uPlot (https://github.com/leeoniya/uPlot) with a UTC time
 * axis, a value axis labelled with its unit, a legend that shows the values under the cursor, events drawn as
 * dashed vertical lines on the time axis, colours from the page's CSS variables (`--chart-*` in `console/app.css`,
 * light and dark by `prefers-color-scheme`), and a sparkline form (no axes, no legend, no cursor) for tables.
 */
import uPlot from "uplot"

/** One line (or bar series) of a chart: one value per time, `null` where there is none. */
export interface ChartSeries {
  readonly label: string
  readonly values: ReadonlyArray<number | null>
  /** A CSS colour, or a `--chart-*` variable name (read from the page, so it follows the theme). */
  readonly colour: string
  readonly bars?: boolean
}

/** A mark on the time axis (a channel event). `at` in epoch seconds. */
export interface ChartEvent {
  readonly at: number
  readonly label: string
}

/** What to draw. Times in epoch seconds (UTC). */
export interface ChartSpec {
  readonly times: ReadonlyArray<number>
  readonly series: ReadonlyArray<ChartSeries>
  /** The unit of the values, shown on the value axis (`ms`, `USD`, `requests`, `%`, `tokens`). */
  readonly unit: string
  /** A value as text with its unit (axis ticks and the legend). */
  readonly format: (value: number) => string
  readonly height: number
  /** Times shown as days (`YYYY-MM-DD`) instead of minutes (`MM-DD HH:MM`). */
  readonly days?: boolean
  readonly sparkline?: boolean
  readonly events?: ReadonlyArray<ChartEvent>
  /** The time axis's name in the legend, in the page's language (default `Day (UTC)` or `Time (UTC)`). */
  readonly timeLabel?: string
}

/** A drawn chart. */
export interface DrawnChart {
  readonly destroy: () => void
}

const STYLESHEET = "/console/charts.css"

/** Adds uPlot's stylesheet to the page once (same origin: the CSP's `style-src 'self'`). */
const ensureStylesheet = () => {
  if (document.querySelector(`link[href="${STYLESHEET}"]`) !== null) return
  const link = document.createElement("link")
  link.rel = "stylesheet"
  link.href = STYLESHEET
  document.head.append(link)
}

const colourOf = (element: HTMLElement, colour: string): string =>
  colour.startsWith("--") ? getComputedStyle(element).getPropertyValue(colour).trim() || "#888" : colour

const pad = (value: number) => String(value).padStart(2, "0")

/** Epoch seconds as UTC text: `YYYY-MM-DD` for days, else `MM-DD HH:MM`. */
export const utcText = (seconds: number, days: boolean): string => {
  const date = new Date(seconds * 1000)
  const day = `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`
  return days ? day : `${day.slice(5)} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}`
}

/** Draws the events of `spec` as dashed vertical lines over the plot area. */
const eventsPlugin = (events: ReadonlyArray<ChartEvent>, colour: () => string): uPlot.Plugin => ({
  hooks: {
    draw: (chart) => {
      const context = chart.ctx
      const { top, height } = chart.bbox
      context.save()
      context.strokeStyle = colour()
      context.lineWidth = 2 * devicePixelRatio
      context.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio])
      for (const event of events) {
        const x = chart.valToPos(event.at, "x", true)
        if (x < chart.bbox.left || x > chart.bbox.left + chart.bbox.width) continue
        context.beginPath()
        context.moveTo(x, top)
        context.lineTo(x, top + height)
        context.stroke()
      }
      context.restore()
    }
  }
})

const build = (target: HTMLElement, spec: ChartSpec): uPlot => {
  const axis = colourOf(target, "--chart-axis")
  const grid = colourOf(target, "--chart-grid")
  const days = spec.days === true
  const sparkline = spec.sparkline === true
  const options: uPlot.Options = {
    width: Math.max(120, target.clientWidth),
    height: spec.height,
    class: sparkline ? "sparkline" : "time-chart",
    legend: { show: !sparkline, live: true },
    cursor: sparkline ? { show: false } : { points: { size: 6 } },
    padding: sparkline ? [2, 0, 2, 0] : [8, 8, 0, 0],
    scales: { x: { time: false }, y: { range: (_chart, min, max) => [Math.min(0, min), Math.max(max, 1e-9) * 1.1] } },
    axes: sparkline ? [{ show: false }, { show: false }] : [
      {
        stroke: axis,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        values: (_chart, ticks) => ticks.map((tick) => utcText(tick, days)),
        space: days ? 70 : 80
      },
      {
        stroke: axis,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        label: spec.unit,
        labelSize: 20,
        // Wide enough for the longest tick text (about 7 px a character at the axis font) and the gap to the plot.
        size: (_chart, values) =>
          values === null || values === undefined || values.length === 0
            ? 50
            : Math.max(50, Math.max(...values.map((value) => String(value).length)) * 7 + 22),
        values: (_chart, ticks) => ticks.map((tick) => spec.format(tick))
      }
    ],
    series: [
      {
        label: spec.timeLabel ?? (days ? "Day (UTC)" : "Time (UTC)"),
        value: (_chart, value) => value === null ? "–" : utcText(value, days)
      },
      ...spec.series.map((series): uPlot.Series => {
        const colour = colourOf(target, series.colour)
        return {
          label: series.label,
          stroke: colour,
          width: sparkline ? 1.5 : 2,
          fill: series.bars ? colour : undefined,
          paths: series.bars ? uPlot.paths.bars!({ size: [0.7, 40] }) : undefined,
          points: { show: !sparkline && spec.times.length <= 40 },
          spanGaps: false,
          value: (_chart, value) => value === null ? "–" : spec.format(value)
        }
      })
    ],
    plugins: spec.events === undefined || spec.events.length === 0
      ? []
      : [eventsPlugin(spec.events, () => colourOf(target, "--chart-event"))]
  }
  const data = [
    spec.times as Array<number>,
    ...spec.series.map((series) => series.values as Array<number | null>)
  ] as uPlot.AlignedData
  return new uPlot(options, data, target)
}

/**
 * Draws `spec` into `target` (emptied first) and keeps it drawn: resized with its box, drawn again when the colour
 * scheme changes. `destroy` removes it and its listeners.
 */
export const drawTimeChart = (target: HTMLElement, spec: ChartSpec): DrawnChart => {
  ensureStylesheet()
  target.replaceChildren()
  let chart = build(target, spec)
  const resize = new ResizeObserver(() => {
    const width = Math.max(120, target.clientWidth)
    if (width !== chart.width) chart.setSize({ width, height: spec.height })
  })
  resize.observe(target)
  const scheme = matchMedia("(prefers-color-scheme: dark)")
  const redraw = () => {
    chart.destroy()
    chart = build(target, spec)
  }
  scheme.addEventListener("change", redraw)
  return {
    destroy: () => {
      resize.disconnect()
      scheme.removeEventListener("change", redraw)
      chart.destroy()
    }
  }
}
