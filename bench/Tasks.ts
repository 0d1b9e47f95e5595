/**
 * The tasks report of `deno task bench --tasks` (`TasksRun.ts` runs it):
 * 10,000 video tasks submitted to a gateway on PostgreSQL, kept in flight on
 * the emulator, then let finish. The figures are the gateway's memory (VmRSS)
 * at each stage, the poller's upstream calls per second, its database
 * statements per second and per poll, how long until every task finished,
 * and the submits' throughput and latency. (Per poll, not per cycle: how
 * many tasks one cycle polls is what the poller changed, so statements per
 * poll compare the versions; a cycle's count is that × its tasks.)
 *
 * Statements are counted by PostgreSQL itself: the delta of
 * `pg_stat_database.xact_commit` of the bench database over a window in which
 * only the poller works (each statement the poller sends outside a
 * transaction commits once; a task's final bill is one transaction of several
 * statements, so it counts once), less the bench's own reads, and of
 * `pg_stat_user_tables.n_tup_upd` of `tasks` (rows updated). This
 * PostgreSQL has no `pg_stat_statements`.
 *
 * @since 0.1.0
 */

/** A reading of the counters at one instant. @category models */
export interface Counters {
  /** Epoch milliseconds when read. */
  readonly at: number
  /** `pg_stat_database.xact_commit` of the bench database. */
  readonly commits: number
  /** `pg_stat_user_tables.n_tup_upd` of `tasks`. */
  readonly taskRowsUpdated: number
  /** The emulator's request count (`/_emulator/stats`). */
  readonly upstreamCalls: number
}

/** What the poller did between two readings. @category models */
export interface PollWindow {
  readonly seconds: number
  /** Committed statements (transactions) of the gateway, the bench's own reads taken out. */
  readonly statements: number
  readonly taskRowsUpdated: number
  readonly upstreamCalls: number
  readonly statementsPerSecond: number
  readonly upstreamCallsPerSecond: number
  /** Statements per upstream poll (`undefined` without polls). */
  readonly statementsPerPoll: number | undefined
}

/**
 * The poller's work between `before` and `after`. `benchReads` is how many
 * statements the bench itself committed on the database in between (its own
 * counter reads).
 *
 * @category figures
 */
export const pollWindow = (before: Counters, after: Counters, benchReads: number): PollWindow => {
  const seconds = Math.max(0.001, (after.at - before.at) / 1000)
  const statements = Math.max(0, after.commits - before.commits - benchReads)
  const upstreamCalls = Math.max(0, after.upstreamCalls - before.upstreamCalls)
  const statementsPerSecond = statements / seconds
  return {
    seconds,
    statements,
    taskRowsUpdated: Math.max(0, after.taskRowsUpdated - before.taskRowsUpdated),
    upstreamCalls,
    statementsPerSecond,
    upstreamCallsPerSecond: upstreamCalls / seconds,
    statementsPerPoll: upstreamCalls === 0 ? undefined : statements / upstreamCalls
  }
}

/**
 * Statements per upstream poll of the poller alone: the statements per
 * second of `inFlight` less the idle gateway's (`idle`, when measured), over
 * the polls per second; `undefined` without polls.
 *
 * @category figures
 */
export const pollerStatementsPerPoll = (inFlight: PollWindow, idle: PollWindow | undefined): number | undefined =>
  inFlight.upstreamCallsPerSecond === 0
    ? undefined
    : Math.max(0, inFlight.statementsPerSecond - (idle?.statementsPerSecond ?? 0)) / inFlight.upstreamCallsPerSecond

/**
 * The `p`-th percentile (0–100, nearest rank) of `values`; `NaN` when empty.
 *
 * @category figures
 */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]
}

/** The KiB of `VmRSS` in the text of `/proc/<pid>/status`; `undefined` when absent. @category figures */
export const rssKibOf = (status: string): number | undefined => {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)
  return match === null ? undefined : Number(match[1])
}

/** The submits: how many, how long, what they answered. @category models */
export interface SubmitFigures {
  readonly count: number
  readonly concurrency: number
  readonly seconds: number
  /** Milliseconds of each accepted submit. */
  readonly latenciesMs: ReadonlyArray<number>
  /** Submits not answered 200 (status → count). */
  readonly failures: Readonly<Record<string, number>>
}

/** One run of the tasks case (a poller version). @category models */
export interface TasksRun {
  /** What was measured, e.g. `before` or `after`, with the commit. */
  readonly label: string
  readonly submits: SubmitFigures
  /** Gateway VmRSS in KiB: before the submits, with every task in flight, all finished, a few cycles later. */
  readonly rssKib: {
    readonly idle: number
    readonly inFlight: number
    readonly finished: number | undefined
    readonly laterCycles: number | undefined
  }
  /** The poller with every task in flight. */
  readonly inFlight: PollWindow
  /** The idle gateway before the submits (its poller finding nothing due, its other background work). */
  readonly idle?: PollWindow | undefined
  /** Seconds from the last submit until no task was unfinished; `undefined` when not within `waitLimitSeconds`. */
  readonly finishSeconds: number | undefined
  /** Tasks still unfinished when the wait ended. */
  readonly unfinished: number
  readonly waitLimitSeconds: number
}

/** What `renderTasksReport` needs. @category models */
export interface TasksReport {
  readonly date: string
  readonly command: string
  readonly machine: string
  readonly loadAverage: number
  readonly setup: string
  readonly runs: ReadonlyArray<TasksRun>
  /** Hand-written notes appended after the table (method, analysis). */
  readonly notes: string
}

const fixed = (value: number | undefined, digits = 1): string =>
  value === undefined || Number.isNaN(value) ? "n/a" : value.toFixed(digits)
const mib = (kib: number | undefined): string => kib === undefined ? "n/a" : `${(kib / 1024).toFixed(0)} MiB`
const whole = (value: number): string => Math.round(value).toLocaleString("en-US")

/**
 * One table row of `run` (the tasks table in bench/RESULTS.md uses the same).
 *
 * @category rendering
 */
export const tasksRow = (run: TasksRun): string => {
  const s = run.submits
  const failed = Object.values(s.failures).reduce((sum, n) => sum + n, 0)
  const finish = run.finishSeconds === undefined
    ? `> ${run.waitLimitSeconds} s (${whole(run.unfinished)} left)`
    : `${run.finishSeconds.toFixed(0)} s`
  return `| ${run.label} | ${whole(s.count / s.seconds)} | ${fixed(percentile(s.latenciesMs, 50))} / ${
    fixed(percentile(s.latenciesMs, 99))
  } ms | ${failed} | ${whole(run.inFlight.upstreamCallsPerSecond)} | ${fixed(run.inFlight.statementsPerSecond)} | ${
    run.idle === undefined ? "n/a" : fixed(run.idle.statementsPerSecond)
  } | ${fixed(pollerStatementsPerPoll(run.inFlight, run.idle), 3)} | ${finish} | ${mib(run.rssKib.idle)} · ${
    mib(run.rssKib.inFlight)
  } · ${mib(run.rssKib.finished)} · ${mib(run.rssKib.laterCycles)} |`
}

/** The table's header. @category rendering */
export const TASKS_HEADER =
  `| run | submits/s | submit p50 / p99 | failed submits | upstream polls/s (in flight) | statements/s, in flight | statements/s, idle | poller's statements per poll | all finished after | RSS idle · in flight · finished · later |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|`

/**
 * The report, in Markdown.
 *
 * @category rendering
 */
export const renderTasksReport = (report: TasksReport): string =>
  `# Sluice tasks benchmark

- Date: ${report.date}
- Command: \`${report.command}\`
- Machine: ${report.machine}; load average (1 min) when it started: ${report.loadAverage.toFixed(2)}
- Setup: ${report.setup}

${TASKS_HEADER}
${report.runs.map(tasksRow).join("\n")}

${report.notes}
`
