/**
 * The tasks report of `deno task bench --tasks`, with plain values: the
 * statement count of a window (the bench's own reads taken out, the idle
 * gateway's rate subtracted), percentiles, VmRSS from `/proc/<pid>/status`,
 * and the Markdown table.
 */
import { ok, strictEqual } from "node:assert/strict"
import {
  type Counters,
  percentile,
  pollerStatementsPerPoll,
  pollWindow,
  renderTasksReport,
  rssKibOf,
  type TasksRun
} from "../../bench/Tasks.ts"

const at = (seconds: number, commits: number, updated: number, calls: number): Counters => ({
  at: seconds * 1000,
  commits,
  taskRowsUpdated: updated,
  upstreamCalls: calls
})

Deno.test("tasks report: statements per cycle, percentiles, VmRSS, the table", () => {
  // 20 s: 4,021 commits of which 1 is the bench's own read; 2,000 polls.
  const inFlight = pollWindow(at(100, 5_000, 0, 10_000), at(120, 9_021, 4_000, 12_000), 1)
  strictEqual(inFlight.statements, 4_020)
  strictEqual(inFlight.statementsPerSecond, 201)
  strictEqual(inFlight.upstreamCallsPerSecond, 100)
  strictEqual(inFlight.taskRowsUpdated, 4_000)
  strictEqual(inFlight.statementsPerPoll, 2.01)
  const idle = pollWindow(at(0, 100, 0, 0), at(10, 111, 0, 0), 1)
  strictEqual(idle.statementsPerSecond, 1)
  strictEqual(idle.statementsPerPoll, undefined, "no polls, no per-poll figure")
  strictEqual(pollerStatementsPerPoll(inFlight, idle), 2, "(201 − 1) statements/s over 100 polls/s")
  strictEqual(pollerStatementsPerPoll(inFlight, undefined), 2.01)
  strictEqual(pollerStatementsPerPoll(idle, inFlight), undefined, "no polls, no figure")
  const quiet = pollWindow(at(0, 0, 0, 0), at(10, 1, 0, 100), 1)
  strictEqual(pollerStatementsPerPoll(quiet, idle), 0, "never below zero")

  strictEqual(percentile([5, 1, 4, 2, 3], 50), 3)
  strictEqual(percentile([5, 1, 4, 2, 3], 99), 5)
  ok(Number.isNaN(percentile([], 50)))

  strictEqual(rssKibOf("Name:\tdeno\nVmPeak:\t  900 kB\nVmRSS:\t  204800 kB\nThreads:\t8\n"), 204_800)
  strictEqual(rssKibOf("Name:\tdeno\n"), undefined)

  const run: TasksRun = {
    label: "after",
    submits: { count: 1000, concurrency: 50, seconds: 2, latenciesMs: [10, 20, 30, 40], failures: { "429": 2 } },
    rssKib: { idle: 102_400, inFlight: 204_800, finished: 153_600, laterCycles: undefined },
    inFlight,
    idle,
    finishSeconds: undefined,
    unfinished: 12,
    waitLimitSeconds: 420
  }
  const text = renderTasksReport({
    date: "2026-11-25T00:00:00.000Z",
    command: "deno task bench --tasks",
    machine: "2 cores, linux/x86_64",
    loadAverage: 0.5,
    setup: "PostgreSQL",
    runs: [run],
    notes: "Notes."
  })
  ok(
    text.includes(
      "| after | 500 | 20.0 / 40.0 ms | 2 | 100 | 201.0 | 1.0 | 2.000 | > 420 s (12 left) | 100 MiB · 200 MiB · 150 MiB · n/a |"
    ),
    text
  )
  ok(text.endsWith("Notes.\n"))
})
