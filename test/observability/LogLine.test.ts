/**
 * The one shape of every log line (`src/observability/LogLine.ts`): Effect's
 * log lines, the access log's request lines and a socket's end line all start
 * `time`, `level`, `msg` with the same level names, in `LOG_FORMAT=json` and
 * `text`; annotations and logged objects are top-level fields, a clashing key
 * is prefixed, spans and causes are fields, there is no fiber id; hostile
 * values (NUL, lone surrogates, U+2028, a megabyte, keys, `__proto__`, deep
 * and wide objects) come out one bounded, masked, parseable line; and a
 * running gateway's warning reads the same way.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict"
import { Cause, Effect, Logger, Redacted } from "effect"
import { registerKnownSecrets } from "../../src/domain/Redact.ts"
import { makeSocketMetrics, makeTally, socketLine } from "../../src/http/WebSocketUpgrade.ts"
import {
  effectLine,
  lineJson,
  lineLogger,
  lineText,
  makeLine,
  MAX_CAUSE_CHARS,
  MAX_ENTRIES,
  MAX_FIELDS,
  MAX_VALUE_CHARS
} from "../../src/observability/LogLine.ts"
import { RequestRecord } from "../../src/observability/RequestRecord.ts"
import { Telemetry, type TelemetryOptions } from "../../src/observability/Telemetry.ts"
import { startGateway } from "../support/Gateway.ts"
import { KEY, twoChannels } from "./Support.ts"

const LEVELS = ["debug", "info", "warn", "error"]
const TEXT_HEAD = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (DEBUG|INFO |WARN |ERROR) /

/** A telemetry writing every line (from `debug`) in `format` into `lines`. */
const telemetryOf = (format: "json" | "text", overrides: Partial<TelemetryOptions> = {}) => {
  const lines: Array<string> = []
  const telemetry = new Telemetry({
    metrics: false,
    accessLog: true,
    format,
    level: "debug",
    sink: (line) => lines.push(line),
    ...overrides
  })
  return { lines, telemetry }
}

/** Runs `effect` with the telemetry's logger. */
const logWith = (telemetry: Telemetry, effect: Effect.Effect<void>) =>
  Effect.runPromise(effect.pipe(Effect.provide(telemetry.loggerLayer)))

/** The line one Effect log event gives, in JSON, parsed. */
const logged = async (effect: Effect.Effect<void>): Promise<Record<string, unknown>> => {
  const { lines, telemetry } = telemetryOf("json")
  await logWith(telemetry, effect)
  strictEqual(lines.length, 1, lines.join("\n"))
  return JSON.parse(lines[0])
}

const finish = (telemetry: Telemetry, status: number): void => {
  const record = new RequestRecord(telemetry, "req-shape-1", false, "POST", "/v1/chat/completions", Date.now())
  record.relayed("openai-chat", "gpt-test")
  record.responded(status)
}

Deno.test("log line: an Effect line, an access line and a socket line share time, level, msg first, in JSON", async () => {
  const { lines, telemetry } = telemetryOf("json")
  await logWith(
    telemetry,
    Effect.logWarning("Channel put in cooldown").pipe(Effect.annotateLogs({ channel: "primary", seconds: 30 }))
  )
  finish(telemetry, 503)
  telemetry.write(socketLine("ws_1", "/v1/responses", 1_000, 2_500, 1000, makeTally()))
  strictEqual(lines.length, 3)
  const [effect, access, socket] = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
  for (const line of [effect, access, socket]) {
    deepStrictEqual(Object.keys(line).slice(0, 3), ["time", "level", "msg"])
    ok(LEVELS.includes(line.level as string), String(line.level))
    strictEqual(new Date(line.time as string).toISOString(), line.time)
  }
  deepStrictEqual(effect, {
    time: effect.time,
    level: "warn",
    msg: "Channel put in cooldown",
    channel: "primary",
    seconds: 30
  })
  strictEqual(access.level, "error")
  strictEqual(access.msg, "request")
  strictEqual(access.request_id, "req-shape-1")
  deepStrictEqual(socket, {
    time: "1970-01-01T00:00:02.500Z",
    level: "info",
    msg: "socket",
    socket_id: "ws_1",
    route: "/v1/responses",
    close_code: 1000,
    duration_ms: 1500,
    responses: 0,
    frames_in: 0,
    frames_out: 0,
    bytes_in: 0,
    bytes_out: 0
  })
  for (const line of lines) {
    for (const old of ["message", "annotations", "timestamp", "fiberId"]) ok(!(old in JSON.parse(line)), old)
  }
  // The socket metrics still register (the module's other export).
  strictEqual(typeof makeSocketMetrics(undefined, ["/v1/responses"]).opened, "function")
})

Deno.test("log line: the same three kinds in the text form: time LEVEL msg key=value", async () => {
  const { lines, telemetry } = telemetryOf("text")
  await logWith(
    telemetry,
    Effect.logWarning("Channel put in cooldown").pipe(Effect.annotateLogs({ channel: "primary", seconds: 30 }))
  )
  finish(telemetry, 404)
  telemetry.write(socketLine("ws_1", "/v1/responses", 1_000, 2_500, 1000, makeTally()))
  strictEqual(lines.length, 3)
  const [effect, access, socket] = lines
  for (const line of lines) {
    match(line, TEXT_HEAD)
    ok(!line.includes("\n"))
  }
  match(effect, / WARN {2}Channel put in cooldown channel=primary seconds=30$/)
  match(
    access,
    / WARN {2}request request_id=req-shape-1 method=POST route=\/v1\/chat\/completions status=404 latency_ms=\S+ ttfb_ms=\S+ format=openai-chat model=gpt-test prompt_tokens=0 completion_tokens=0 cached_tokens=0 reasoning_tokens=0 cost=0$/
  )
  strictEqual(
    socket,
    "1970-01-01T00:00:02.500Z INFO  socket socket_id=ws_1 route=/v1/responses close_code=1000 duration_ms=1500 " +
      "responses=0 frames_in=0 frames_out=0 bytes_in=0 bytes_out=0"
  )
  // Values that are not plain words are JSON; null and empty values are left out.
  strictEqual(
    lineText(makeLine(0, "error", "a = b", [["note", 'two words "quoted"'], ["gone", null], ["list", ["a", "b"]], [
      "empty",
      []
    ], ["ok", true]])),
    '1970-01-01T00:00:00.000Z ERROR "a = b" note="two words \\"quoted\\"" list=["a","b"] ok=true'
  )
})

Deno.test("log line: LOG_LEVEL filters Effect lines and socket lines alike; levels map to the four names", async () => {
  const { lines, telemetry } = telemetryOf("json", { level: "warn" })
  await logWith(
    telemetry,
    Effect.gen(function* () {
      yield* Effect.logDebug("hidden debug")
      yield* Effect.logInfo("hidden info")
      yield* Effect.logWarning("shown warn")
      yield* Effect.logError("shown error")
      yield* Effect.logFatal("shown fatal")
    })
  )
  telemetry.write(socketLine("ws_2", "/v1/responses", 0, 1, 1000, makeTally()))
  deepStrictEqual(lines.map((line) => [JSON.parse(line).level, JSON.parse(line).msg]), [
    ["warn", "shown warn"],
    ["error", "shown error"],
    ["error", "shown fatal"]
  ])
  const debug = telemetryOf("json")
  await logWith(debug.telemetry, Effect.logDebug("a debug line").pipe(Effect.withLogSpan("phase")))
  const line = JSON.parse(debug.lines[0])
  strictEqual(line.level, "debug")
  deepStrictEqual(Object.keys(line.spans), ["phase"])
  ok(typeof line.spans.phase === "number" && line.spans.phase >= 0)
})

Deno.test("log line: annotations, logged objects, other values and the cause are fields; clashing keys prefixed", async () => {
  const line = await logged(
    Effect.logError(
      "Charge journal record unreadable; skipped",
      { seq: 7, time: "t" },
      "disk said no",
      3,
      Cause.fail("x")
    )
      .pipe(Effect.annotateLogs({ msg: "annotated", level: "debug", channel: "primary", seq: 1 }))
  )
  deepStrictEqual(Object.keys(line), [
    "time",
    "level",
    "msg",
    "field_msg",
    "field_level",
    "channel",
    "seq",
    "field_seq",
    "field_time",
    "detail",
    "cause"
  ])
  strictEqual(line.level, "error")
  strictEqual(line.msg, "Charge journal record unreadable; skipped")
  strictEqual(line.field_msg, "annotated")
  strictEqual(line.field_level, "debug")
  strictEqual(line.seq, 1)
  strictEqual(line.field_seq, 7)
  strictEqual(line.field_time, "t")
  deepStrictEqual(line.detail, ["disk said no", 3])
  ok(typeof line.cause === "string" && (line.cause as string).includes("x"), String(line.cause))

  // One other value is the value itself; an Error is its stack; a defect's cause is bounded.
  const single = await logged(Effect.logWarning("Could not renew the quota leases", new TypeError("no route")))
  ok((single.detail as string).startsWith("TypeError: no route\n    at "), String(single.detail))
  const defect = await logged(Effect.logError("Request failed with a defect", Cause.die(new Error("x".repeat(10_000)))))
  ok((defect.cause as string).length <= MAX_CAUSE_CHARS, String((defect.cause as string).length))
  ok((defect.cause as string).startsWith("Error: xxx"))

  // A message that is not a string: the line's msg is empty and the object's entries are fields.
  const bare = await logged(Effect.logInfo({ records: 3 }))
  deepStrictEqual([bare.msg, bare.records], ["", 3])
})

Deno.test("log line: hostile values come out one bounded, masked, parseable line in both forms", async () => {
  const owner = {}
  registerKnownSecrets(owner, ["sk-test-upstream-known-0001"])
  try {
    const huge = "y".repeat(1_000_000)
    const deep: Record<string, unknown> = {}
    let cursor = deep
    for (let level = 0; level < 10; level++) cursor = (cursor.next = {}) as Record<string, unknown>
    const proto = JSON.parse('{"__proto__":{"polluted":true},"constructor":"c"}')
    const annotations: Record<string, unknown> = {
      nul: "a\u0000b",
      surrogate: "c\ud800d",
      separator: "e\u2028f\u2029g",
      newline: "h\ni",
      huge,
      // A key across the cut, and one at the head of a megabyte: masked whole, never half shown.
      edge: `${" ".repeat(990)}sk-test-${"k".repeat(40)}`,
      headKey: `sk-ant-api03-${"q".repeat(1_000_000)}`,
      key: "upstream said: invalid key sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
      known: "the key sk-test-upstream-known-0001 was refused",
      request_id: "0123456789abcdef0123456789abcdef",
      big: 12_345_678_901_234_567_890n,
      nan: Number.NaN,
      infinite: Number.POSITIVE_INFINITY,
      date: new Date(0),
      redacted: Redacted.make("sk-test-hidden-value-0001"),
      deep,
      proto,
      wide: Array.from({ length: 100 }, (_, index) => index),
      "bad key\u0000\n=": "k",
      gone: undefined
    }
    const msg = `hostile\u0000message\ud800 = \n${"z".repeat(2_000)}`
    const json = await logged(Effect.logWarning(msg).pipe(Effect.annotateLogs(annotations)))
    strictEqual(json.level, "warn")
    strictEqual((json.msg as string).length, MAX_VALUE_CHARS)
    ok((json.msg as string).startsWith("hostile message\ufffd = \nzz"), JSON.stringify(json.msg))
    strictEqual(json.nul, "a b")
    strictEqual(json.surrogate, "c\ufffdd")
    strictEqual(json.separator, "e f g")
    strictEqual(json.newline, "h\ni")
    strictEqual((json.huge as string).length, MAX_VALUE_CHARS)
    ok((json.huge as string).endsWith("…"))
    ok(!(json.edge as string).includes("kkkk") && (json.edge as string).endsWith(" sk-[redac…"), String(json.edge))
    strictEqual(json.headKey, "sk-ant-[redacted]")
    strictEqual(json.key, "upstream said: invalid key sk-ant-[redacted]")
    strictEqual(json.known, "the key [redacted] was refused")
    strictEqual(json.request_id, "0123456789abcdef0123456789abcdef", "an id is not masked")
    strictEqual(json.big, "12345678901234567890")
    strictEqual(json.nan, null)
    strictEqual(json.infinite, null)
    strictEqual(json.date, "1970-01-01T00:00:00.000Z")
    strictEqual(json.redacted, "<redacted>")
    ok(JSON.stringify(json.deep).includes("[nested too deep]"))
    deepStrictEqual(Object.keys(json.proto as object), ["__proto__", "constructor"])
    strictEqual(({} as Record<string, unknown>).polluted, undefined)
    strictEqual((json.wide as Array<unknown>).length, MAX_ENTRIES + 1)
    strictEqual((json.wide as Array<unknown>).at(-1), `… ${100 - MAX_ENTRIES} more`)
    strictEqual(json["bad_key___"], "k")
    ok(!("gone" in json))

    const { lines, telemetry } = telemetryOf("text")
    await logWith(telemetry, Effect.logWarning(msg).pipe(Effect.annotateLogs(annotations)))
    const text = lines[0]
    match(text, TEXT_HEAD)
    // deno-lint-ignore no-control-regex
    ok(!/[\n\r\u0000\u2028\u2029]/.test(text), "one line, no control character")
    ok(!text.includes("abcdefghijklmnop") && !text.includes("known-0001") && !text.includes("hidden-value"))
    ok(text.length < 20_000, `${text.length} characters`)
    ok(text.includes(' newline="h\\ni"'), text.slice(0, 2000))
    ok(text.includes(" request_id=0123456789abcdef0123456789abcdef"))
    ok(text.includes(' "hostile message\ufffd = \\nzz'), text.slice(0, 200))
    for (const line of [lineJson(effectLineOf(msg, annotations)), text]) {
      ok(!line.includes("sk-test-upstream-known-0001"))
    }
  } finally {
    registerKnownSecrets(owner, [])
  }

  // Too many fields: the first 64 kept, the rest counted.
  const wide = makeLine(0, "info", "wide", Array.from({ length: 100 }, (_, index) => [`f${index}`, index] as const))
  strictEqual(Object.keys(wide).length, 3 + MAX_FIELDS + 1)
  strictEqual(wide.fields_dropped, 100 - MAX_FIELDS)
  strictEqual(wide.f63, 63)
  ok(!("f64" in wide))
})

/** An Effect line made outside a logger, through the same formatter the logger uses. */
const effectLineOf = (msg: string, annotations: Record<string, unknown>) => {
  let line: ReturnType<typeof effectLine> | undefined
  Effect.runSync(
    Effect.logInfo(msg).pipe(
      Effect.annotateLogs(annotations),
      Effect.provide(Logger.layer([Logger.make((options) => (line = effectLine(options)))]))
    )
  )
  return line!
}

Deno.test("log line: the logger writes one line per event to its sink, in either format", async () => {
  for (const format of ["json", "text"] as const) {
    const lines: Array<string> = []
    await Effect.runPromise(
      Effect.logInfo("Charge journal recovered", { records: 2 }).pipe(
        Effect.provide(Logger.layer([lineLogger(format, (line) => lines.push(line))]))
      )
    )
    strictEqual(lines.length, 1)
    // The crash test reads the count with `/"records":"?(\d+)/` in JSON.
    if (format === "json") match(lines[0], /"records":2\}$/)
    else match(lines[0], / INFO {2}Charge journal recovered records=2$/)
  }
})

Deno.test("log line: a running gateway's warning and its access lines share the shape", async () => {
  const gateway = await startGateway({ store: "postgres", config: (url) => twoChannels(url, { cooldown_failures: 1 }) })
  try {
    gateway.emulator.setFaults([{ match: { key: "sk-test-upstream-primary" }, status: 500, times: 1 }])
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "x-request-id": "shape-1" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hello" }], max_tokens: 8 })
    })
    strictEqual(response.status, 200)
    await response.body?.cancel()
    let lines: Array<Record<string, unknown>> = []
    for (let tries = 0; tries < 50; tries++) {
      lines = gateway.logs.map((line) => JSON.parse(line))
      if (lines.some((line) => line.msg === "request" && line.request_id === "shape-1")) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    ok(lines.length >= 2)
    for (const line of lines) {
      deepStrictEqual(Object.keys(line).slice(0, 3), ["time", "level", "msg"], JSON.stringify(line))
      ok(LEVELS.includes(line.level as string), JSON.stringify(line))
      ok(!("annotations" in line) && !("fiberId" in line) && !("message" in line), JSON.stringify(line))
    }
    const cooldown = lines.find((line) => line.msg === "Channel put in cooldown")
    ok(cooldown !== undefined, JSON.stringify(lines))
    strictEqual(cooldown.level, "warn")
    strictEqual(cooldown.channel, "primary")
    strictEqual(typeof cooldown.seconds, "number")
    strictEqual(typeof cooldown.reason, "string")
    strictEqual(cooldown.request_id, "shape-1", "a line logged inside a request names it")
    const access = lines.find((line) => line.msg === "request" && line.request_id === "shape-1")
    deepStrictEqual(access?.failover, ["primary:server", "secondary:ok"])
  } finally {
    await gateway.close()
  }
})
