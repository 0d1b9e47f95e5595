/**
 * Starts the gateway: one layer, `MainLayer`, launched by a runtime main. Building it reads the environment and the
 * bootstrap file (a bad file exits non-zero before anything is written), builds the app (migrations, then the file
 * applied: `makeHandler` in `App.ts`, whose layers hold the task poller and the channel probers) and serves it with
 * `Deno.serve`; each of these is a scoped resource. SIGTERM/SIGINT interrupt the main fiber and the scope closes in
 * the reverse order of acquisition, which is the graceful shutdown: stop accepting, let in-flight requests and
 * streams finish up to a deadline (`SLUICE_SHUTDOWN_GRACE_SECONDS`), cut the streams still open so they are billed
 * for what was delivered and logged (WebSockets: the responses in flight finish within the grace, then each socket
 * closes with 1001), then dispose of the app (the poller and probers stop, the usage log's last flush, every quota
 * lease handed back), flush the log sink, exit 0. Everything the process writes is a line of the log's one shape
 * (`observability/LogLine.ts`, in `LOG_FORMAT`): once listening, `Listening` with its `url` on stdout; a start that
 * fails, `Start failed` at level `error` with the reason in `error` on stderr, and exit code 1.
 *
 * @since 0.1.0
 */
import "./Prelude.ts"
import { Cause, Data, Effect, Exit, Layer, Result, Runtime, type Scope } from "effect"
import { makeHandler } from "./App.ts"
import { type BootstrapFile, parseBootstrap } from "./config/BootstrapFile.ts"
import { type Env, EnvConfig } from "./config/Env.ts"
import { type ObservabilityEnv, ObservabilityEnvConfig } from "./config/ObservabilityEnv.ts"
import { closeOpenBodies } from "./http/ReadableBody.ts"
import { stdoutSink } from "./observability/AccessLog.ts"
import { formatLine, makeLine } from "./observability/LogLine.ts"

/**
 * A start that could not complete (a bad variable, an unreadable or invalid bootstrap file, a store that does not
 * answer): `message` is written as the `error` of a `Start failed` line on stderr and the process exits 1.
 *
 * @category errors
 */
class StartupFailed extends Data.TaggedError("StartupFailed")<{ readonly message: string }> {}

/** What the process was started with: the environment and the bootstrap file it names, decoded. */
interface Startup {
  readonly env: Env
  readonly observability: ObservabilityEnv
  readonly file: BootstrapFile | undefined
}

/** The gateway built by `makeHandler`: its web handler, socket drain and disposal. */
type Gateway = ReturnType<typeof makeHandler>

const logSink = stdoutSink()

/**
 * The log's format: `LOG_FORMAT` when it is `json` or `text`, else text on a terminal and JSON otherwise (as
 * `config/ObservabilityEnv.ts` decides it; read here too, for a start that fails before that decoded).
 */
const lineFormat = (): "json" | "text" => {
  const given = Deno.env.get("LOG_FORMAT")
  return given === "json" || given === "text" ? given : Deno.stdout.isTerminal() ? "text" : "json"
}

/** `error`'s message (an `Error`'s, or the value as text). */
const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** Reads the environment and the bootstrap file; fails with what is wrong, before anything is written. */
const readStartup: Effect.Effect<Startup, StartupFailed> = Effect.gen(function* () {
  const env = yield* Effect.mapError(EnvConfig, (error) => new StartupFailed({ message: error.message }))
  const observability = yield* Effect.mapError(
    ObservabilityEnvConfig,
    (error) => new StartupFailed({ message: error.message })
  )
  const path = env.configPath
  if (path === undefined) return { env, observability, file: undefined }
  const text = yield* Effect.tryPromise({
    try: () => Deno.readTextFile(path),
    catch: (error) => new StartupFailed({ message: `cannot read ${path}: ${messageOf(error)}` })
  })
  const parsed = parseBootstrap(text, path)
  if (Result.isFailure(parsed)) {
    return yield* new StartupFailed({ message: `invalid bootstrap file ${path}: ${parsed.failure}` })
  }
  return { env, observability, file: parsed.success }
})

/**
 * The gateway as a scoped resource: built (every layer, migrations and the bootstrap file included, checked through
 * `/healthz` before any traffic), and disposed of when the scope closes (the sockets still open cut, then every
 * layer closed: the poller and probers stop, the usage log flushes, the leases go back).
 */
const acquireGateway = ({ env, observability, file }: Startup): Effect.Effect<Gateway, StartupFailed, Scope.Scope> =>
  Effect.gen(function* () {
    if (env.databaseUrl === undefined) {
      yield* Effect.tryPromise({
        try: () => Deno.mkdir(env.dataDir, { recursive: true }),
        catch: (error) => new StartupFailed({ message: `cannot create ${env.dataDir}: ${messageOf(error)}` })
      })
    }
    const gateway = yield* Effect.acquireRelease(
      Effect.sync(() =>
        makeHandler({
          databaseUrl: env.databaseUrl,
          dataDir: env.dataDir,
          redisUrl: env.redisUrl,
          file,
          telemetry: {
            metrics: observability.metrics,
            accessLog: observability.accessLog,
            format: lineFormat(),
            level: observability.logLevel,
            sink: (line) => logSink.line(line)
          },
          otlp: observability.otlpEndpoint === undefined
            ? undefined
            : { endpoint: observability.otlpEndpoint, serviceName: observability.serviceName },
          rootPassword: env.rootPassword,
          bodyTimeoutSeconds: env.bodyTimeoutSeconds,
          maxOpenRequestsPerAddress: env.maxOpenRequestsPerAddress,
          leaseStaleSeconds: env.leaseStaleSeconds,
          listenHost: env.host
        })
      ),
      (gateway) => Effect.promise(() => gateway.dispose())
    )
    // Build every layer (migrations, bootstrap file) before accepting traffic.
    const ready = yield* Effect.tryPromise({
      try: () => gateway.handler(new Request("http://localhost/healthz")),
      catch: (error) => new StartupFailed({ message: messageOf(error) })
    })
    if (ready.status !== 200) {
      const body = yield* Effect.promise(() => ready.text())
      return yield* new StartupFailed({ message: `startup failed: ${body}` })
    }
    return gateway
  })

/**
 * Lets requests and streams finish until the grace period (counted from now, wall time: it races the runtime's
 * server shutdown) ends, then cuts the streams still open, running their settlement (billing what was delivered,
 * recording the usage row) before the gateway is disposed of.
 */
const drainServer = async (server: Deno.HttpServer, gateway: Gateway, graceSeconds: number): Promise<void> => {
  const graceEnds = Date.now() + graceSeconds * 1000
  // WebSockets first: the server's shutdown would close them at once. They take no new response; those in flight
  // finish within the grace, then each socket closes with 1001, while the server still answers HTTP.
  await gateway.drainSockets(graceEnds)
  const deadline = new Promise<boolean>((resolve) =>
    setTimeout(() => resolve(false), Math.max(0, graceEnds - Date.now()))
  )
  const drained = server.shutdown().then(() => true)
  if (!await Promise.race([drained, deadline])) {
    await closeOpenBodies()
    // The cut responses end their connections; give the server a moment to see it.
    await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, 1_000))])
  }
}

/** The server as a scoped resource: listening on `HOST:PORT` once acquired, drained gracefully when released. */
const acquireServer = (env: Env, gateway: Gateway): Effect.Effect<Deno.HttpServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() =>
      Deno.serve({
        port: env.port,
        hostname: env.host,
        onListen: ({ hostname, port }) => {
          logSink.line(
            formatLine(makeLine(Date.now(), "info", "Listening", [["url", `http://${hostname}:${port}`]]), lineFormat())
          )
        }
      }, (request, info) => gateway.handler(request, info))
    ),
    (server) => Effect.promise(() => drainServer(server, gateway, env.shutdownGraceSeconds))
  )

/**
 * The application layer of the process: the log sink (flushed last), the gateway, the server. Its finalizers are
 * the graceful shutdown, in the reverse order of the acquisitions.
 *
 * @category layers
 */
const MainLayer: Layer.Layer<never, StartupFailed> = Layer.effectDiscard(Effect.gen(function* () {
  yield* Effect.addFinalizer(() => Effect.sync(() => logSink.flush()))
  const startup = yield* readStartup
  const gateway = yield* acquireGateway(startup)
  yield* acquireServer(startup.env, gateway)
}))

/**
 * The exit code of the program's end: 0 for an interruption (SIGTERM/SIGINT, after the finalizers ran), 1 with
 * a `Start failed` line on stderr for a failure.
 */
const teardown: Runtime.Teardown = (exit, onExit) => {
  logSink.flush()
  if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
  const line = makeLine(Date.now(), "error", "Start failed", [["error", messageOf(Cause.squash(exit.cause))]])
  Deno.stderr.writeSync(new TextEncoder().encode(`${formatLine(line, lineFormat())}\n`))
  onExit(1)
}

/** Runs a main effect: SIGTERM and SIGINT interrupt its fiber, its end exits the process (see `teardown`). */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  const interrupt = () => fiber.interruptUnsafe()
  Deno.addSignalListener("SIGTERM", interrupt)
  Deno.addSignalListener("SIGINT", interrupt)
  fiber.addObserver((exit) => teardown(exit, (code) => Deno.exit(code)))
})

runMain(Layer.launch(MainLayer), { disableErrorReporting: true, teardown })
