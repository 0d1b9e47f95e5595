/**
 * Gateway code takes time from Effect's `Clock` and chance from Effect's
 * `Random` (so `TestClock` and `Random.withSeed` drive lease expiry, sessions,
 * throttles, cooldowns, deadlines and the weighted order): no module under
 * `src/` reads `Date.now`, `new Date()` or `Math.random` itself (the emulator and
 * the demo live outside it, in `emulator/`), except the files listed below,
 * each with its reason. Identifiers and secrets stay on `crypto` (they must be
 * unpredictable, which a seeded `Random` is not); that is not checked here.
 */
import { deepStrictEqual } from "node:assert/strict"

/** Why a caller's WebSocket session reads the system clock. */
const SOCKET_TIME =
  "a caller's WebSocket session runs on the runtime's socket callbacks and real timers (idle close, " +
  "events per second, the shutdown grace, a socket's time open), outside any fiber, in the wall time the sockets run in"

/** Gateway files (or folders, ending in `/`) under `src/` that may read the system clock or `Math.random`, and why. */
const ALLOWED: Readonly<Record<string, string>> = {
  "upstreams/transport/UpstreamClient.ts":
    "the upstream deadlines (first byte, total, idle) are checked by one real interval timer against real sockets; " +
    "they are measured in the wall time that timer and the sockets run in, which a TestClock cannot move",
  "http/WebSocketAccept.ts": SOCKET_TIME,
  "relay/socket/ResponsesSocket.ts": SOCKET_TIME,
  "relay/realtime/RealtimeSession.ts": SOCKET_TIME,
  "upstreams/transport/ResponsesUpstreamSocket.ts":
    "an upstream Responses socket's per-frame and total deadlines run on the runtime's socket callbacks and real " +
    "timers, like the upstream client's HTTP deadlines, in the wall time those sockets run in",
  "App.ts": "the shutdown drain's deadline is wall time: it races the runtime's server shutdown and real sockets",
  "main.ts": "the shutdown grace is wall time, counted from the signal, around the runtime's server shutdown"
}

/** What is looked for: the system clock read directly, and `Math.random`. */
const DIRECT = /\bDate\.now\b|\bnew Date\(\)|\bMath\.random\b/g

const root = new URL("../src/", import.meta.url)

const modules = async function* (dir: URL, prefix = ""): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) yield* modules(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`)
    else if (entry.name.endsWith(".ts") || entry.name.endsWith(".tsx")) yield `${prefix}${entry.name}`
  }
}

const listed = (entries: ReadonlyArray<string>, path: string) =>
  entries.some((entry) => entry.endsWith("/") ? path.startsWith(entry) : path === entry)

/** Comment lines (docstrings, `//` notes) may name what they explain. */
const isComment = (line: string) => {
  const trimmed = line.trimStart()
  return trimmed.startsWith("*") || trimmed.startsWith("/*") || trimmed.startsWith("//")
}

Deno.test("time and chance: gateway code reads Effect's Clock and Random, never Date.now, new Date() or Math.random", async () => {
  const found: Array<string> = []
  for await (const path of modules(root)) {
    if (listed(Object.keys(ALLOWED), path)) continue
    const lines = (await Deno.readTextFile(new URL(path, root))).split("\n")
    lines.forEach((line, index) => {
      if (isComment(line)) return
      for (const match of line.matchAll(DIRECT)) found.push(`src/${path}:${index + 1}: ${match[0]}`)
    })
  }
  deepStrictEqual(found, [])
})

Deno.test("time and chance: every allow-list entry still exists and still needs its place", async () => {
  const stale: Array<string> = []
  for (const entry of Object.keys(ALLOWED)) {
    if (entry.endsWith("/")) continue
    const text = await Deno.readTextFile(new URL(entry, root)).catch(() => undefined)
    if (text === undefined) continue
    const uses = text.split("\n").filter((line) => !isComment(line) && new RegExp(DIRECT.source).test(line))
    if (uses.length === 0) stale.push(`${entry} reads neither the system clock nor Math.random: drop its entry`)
  }
  deepStrictEqual(stale, [])
})
