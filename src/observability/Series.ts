/**
 * Pre-built metric series: one Effect `Metric` object per label set, made the
 * first time the set is seen and kept, so recording a value is a few map
 * lookups with strings the caller already holds (no label object, key string
 * or array per update). Label values must come from bounded sets (route
 * names, format names, configured channels and models, fixed outcomes).
 *
 * @since 0.1.0
 */
import type { Context, Metric } from "effect"

/**
 * A family of series of one metric, addressed by up to five label values in
 * the order of `labels`.
 *
 * @category models
 */
export class Series<M extends Metric.Metric<never, unknown>> {
  readonly #root = new Map<string, unknown>()
  readonly #labels: ReadonlyArray<string>
  readonly #make: (attributes: Record<string, string>) => M

  constructor(labels: ReadonlyArray<string>, make: (attributes: Record<string, string>) => M) {
    this.#labels = labels
    this.#make = make
  }

  /** The series of the given label values (extra arguments are ignored). */
  at(a = "", b = "", c = "", d = "", e = ""): M {
    const depth = this.#labels.length
    let level = this.#root
    for (let index = 0; index < depth - 1; index++) {
      const value = index === 0 ? a : index === 1 ? b : index === 2 ? c : d
      let next = level.get(value) as Map<string, unknown> | undefined
      if (next === undefined) {
        next = new Map()
        level.set(value, next)
      }
      level = next
    }
    const last = depth === 0 ? "" : depth === 1 ? a : depth === 2 ? b : depth === 3 ? c : depth === 4 ? d : e
    let series = level.get(last) as M | undefined
    if (series === undefined) {
      const values = [a, b, c, d, e]
      const attributes: Record<string, string> = {}
      this.#labels.forEach((label, index) => {
        attributes[label] = values[index]
      })
      series = this.#make(attributes)
      level.set(last, series)
    }
    return series
  }
}

/**
 * Adds `value` to a series in the registry of `context` (synchronous).
 *
 * @category recording
 */
export const add = <I>(metric: Metric.Metric<I, unknown>, value: I, context: Context.Context<never>): void =>
  metric.updateUnsafe(value, context)
