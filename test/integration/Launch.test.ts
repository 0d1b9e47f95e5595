/**
 * `src/main.ts` launches one layer (`MainLayer`): a start that fails while the layer is built (a variable that does
 * not decode, a database that does not answer) ends the program with one `Start failed` line on stderr in the log's
 * shape (`time`, `level`, `msg`, then `error`; JSON when stderr is not a terminal, the text form with
 * `LOG_FORMAT=text`), no stack, and exit code 1, without ever listening; the gateway acquired before the failure is
 * disposed of on the way. A start that succeeds says `Listening` with its `url` on stdout, in the same shape.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { freePort, runMain } from "../support/MainProcess.ts"

/** The lines of `stderr` that are not Deno's own download or warning notices. */
const ownLines = (stderr: string): ReadonlyArray<string> =>
  stderr.split("\n").filter((line) => line.trim().length > 0 && !/^(Download|Warning|Initialize)\b/.test(line))

/** The one `Start failed` line of `stderr`, parsed (JSON). */
const startFailure = (stderr: string): { time: string; level: string; msg: string; error: string } => {
  const lines = ownLines(stderr)
  strictEqual(lines.length, 1, stderr)
  const line = JSON.parse(lines[0])
  deepStrictEqual(Object.keys(line), ["time", "level", "msg", "error"], "the log's shape")
  ok(!Number.isNaN(Date.parse(line.time)), line.time)
  strictEqual(line.level, "error")
  strictEqual(line.msg, "Start failed")
  return line
}

Deno.test("launch: a variable that does not decode exits 1 with a Start failed line naming it", async () => {
  const run = await runMain({ PORT: "not-a-port" })
  strictEqual(run.code, 1, run.stderr)
  // The config's own message, as it was before the launch (its line breaks escaped in the one line).
  ok(startFailure(run.stderr).error.includes("PORT"), run.stderr)
  strictEqual(run.stderr.includes("Listening"), false, run.stderr)
  strictEqual(/\bat \S+:\d+:\d+/.test(run.stderr), false, "no stack")
})

Deno.test("launch: a database that does not answer exits 1 with one Start failed line, never listening", async () => {
  // A closed loopback port: the connection is refused at once.
  const run = await runMain({ DATABASE_URL: `postgres://sluice@127.0.0.1:${freePort()}/sluice` })
  strictEqual(run.code, 1, run.stderr)
  ok(startFailure(run.stderr).error.length > 0, run.stderr)
  strictEqual(run.stderr.includes("Listening"), false, run.stderr)
  strictEqual(/\bat \S+:\d+:\d+/.test(run.stderr), false, "no stack")
})

Deno.test("launch: in the text form the failure is the text line of the same shape", async () => {
  const run = await runMain({ PORT: "not-a-port", LOG_FORMAT: "text" })
  strictEqual(run.code, 1, run.stderr)
  const lines = ownLines(run.stderr)
  strictEqual(lines.length, 1, run.stderr)
  ok(/^\d{4}-\d\d-\d\dT\S+Z ERROR Start failed error=/.test(lines[0]), lines[0])
})
