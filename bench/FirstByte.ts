/**
 * Time to first byte of streaming answers, which wrk cannot give (its latency
 * ends at the last byte). A sequential probe from the bench process with
 * `fetch`: one request at a time, timed from just before `fetch` to the first
 * body chunk the client reads, then the body is read to its end (so the
 * keep-alive connection is reused) and checked. Targets are taken in turns,
 * one request each per round, so drift on the machine touches them alike.
 *
 * @since 0.1.0
 */

/** One target of the probe: where to POST what, and how to tell a right answer. @category models */
export interface FirstByteTarget {
  /** Short name, e.g. "gateway, messages in". */
  readonly label: string
  /** Full URL, path included. */
  readonly url: string
  readonly headers: Record<string, string>
  /** The JSON body, already serialized. */
  readonly body: string
  /** Whether a 200 answer's whole text is the expected kind of answer. */
  readonly looksRight: (text: string) => boolean
}

/** One target's figures. Milliseconds. @category models */
export interface FirstByteResult {
  readonly label: string
  /** Timed requests (the warm-up rounds not counted). */
  readonly requests: number
  /** Of those, answers that were not a right 200 or failed (their times are still in the figures). */
  readonly wrong: number
  /** Time to the first body chunk. */
  readonly p50Ms: number
  readonly p99Ms: number
  /** Time to the end of the answer, for reference. */
  readonly wholeP50Ms: number
}

/** Nearest-rank percentile (0 < p ≤ 100) of `values`; 0 when there are none. */
const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return 0
  const sorted = values.toSorted((a, b) => a - b)
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1]
}

interface Sample {
  readonly firstMs: number
  readonly wholeMs: number
  readonly right: boolean
}

const once = async (target: FirstByteTarget, timeoutMillis: number): Promise<Sample> => {
  const start = performance.now()
  try {
    const response = await fetch(target.url, {
      method: "POST",
      headers: { ...target.headers, "Content-Type": "application/json" },
      body: target.body,
      signal: AbortSignal.timeout(timeoutMillis)
    })
    if (response.body === null) {
      const now = performance.now() - start
      return { firstMs: now, wholeMs: now, right: false }
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let firstMs: number | undefined
    let text = ""
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      firstMs ??= performance.now() - start
      text += value
    }
    const wholeMs = performance.now() - start
    return { firstMs: firstMs ?? wholeMs, wholeMs, right: response.status === 200 && target.looksRight(text) }
  } catch {
    const now = performance.now() - start
    return { firstMs: now, wholeMs: now, right: false }
  }
}

/**
 * Probes `targets` in turns: `warmupRounds` discarded rounds, then `rounds`
 * timed ones (one request per target per round). Each request is bounded by
 * `timeoutMillis`; a failed or wrong answer counts in `wrong`, never throws.
 * Results in the order of `targets`.
 *
 * @category probe
 */
export const probeFirstByte = async (
  targets: ReadonlyArray<FirstByteTarget>,
  rounds: number,
  warmupRounds: number,
  timeoutMillis = 10_000
): Promise<ReadonlyArray<FirstByteResult>> => {
  const samples = targets.map((): Array<Sample> => [])
  for (let round = 0; round < warmupRounds + rounds; round++) {
    for (const [index, target] of targets.entries()) {
      const sample = await once(target, timeoutMillis)
      if (round >= warmupRounds) samples[index].push(sample)
    }
  }
  return targets.map((target, index) => {
    const taken = samples[index]
    const first = taken.map((sample) => sample.firstMs)
    return {
      label: target.label,
      requests: taken.length,
      wrong: taken.filter((sample) => !sample.right).length,
      p50Ms: percentile(first, 50),
      p99Ms: percentile(first, 99),
      wholeP50Ms: percentile(taken.map((sample) => sample.wholeMs), 50)
    }
  })
}
