/**
 * `src/main.ts` launches one layer (`MainLayer`): a start that fails while the layer is built (a variable that does
 * not decode, a database that does not answer) ends the program with `sluice: <message>` on stderr, no stack, and
 * exit code 1, without ever listening; the gateway acquired before the failure is disposed of on the way.
 */
import { ok, strictEqual } from "node:assert/strict"
import { freePort, runMain } from "../support/MainProcess.ts"

/** The lines of `stderr` that are not Deno's own download or warning notices. */
const ownLines = (stderr: string): ReadonlyArray<string> =>
  stderr.split("\n").filter((line) => line.trim().length > 0 && !/^(Download|Warning|Initialize)\b/.test(line))

Deno.test("launch: a variable that does not decode exits 1 with a sluice: message naming it", async () => {
  const run = await runMain({ PORT: "not-a-port" })
  strictEqual(run.code, 1, run.stderr)
  // The config's own message, as it was before the launch (it may span lines: the field's path on the next one).
  const lines = ownLines(run.stderr)
  ok(lines[0].startsWith("sluice: "), run.stderr)
  ok(run.stderr.includes("PORT"), run.stderr)
  strictEqual(run.stderr.includes("listening on"), false, run.stderr)
  strictEqual(/\bat \S+:\d+:\d+/.test(run.stderr), false, "no stack")
})

Deno.test("launch: a database that does not answer exits 1 with one sluice: line, never listening", async () => {
  // A closed loopback port: the connection is refused at once.
  const run = await runMain({ DATABASE_URL: `postgres://sluice@127.0.0.1:${freePort()}/sluice` })
  strictEqual(run.code, 1, run.stderr)
  const lines = ownLines(run.stderr)
  strictEqual(lines.length, 1, run.stderr)
  ok(lines[0].startsWith("sluice: "), run.stderr)
  strictEqual(run.stderr.includes("listening on"), false, run.stderr)
  strictEqual(/\bat \S+:\d+:\d+/.test(run.stderr), false, "no stack")
})
