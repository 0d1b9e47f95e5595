/**
 * Starts the gateway: reads the environment and the bootstrap file (a bad file
 * exits non-zero before anything is written), builds the app (migrations, then
 * the file applied), serves it, and shuts down gracefully on SIGTERM/SIGINT:
 * stop accepting, let in-flight requests and streams finish up to a deadline
 * (`SLUICE_SHUTDOWN_GRACE_SECONDS`), cut the streams still open so they are
 * billed for what was delivered and logged (WebSockets: the responses in
 * flight finish within the grace, then each socket closes with 1001), flush the usage log, hand every
 * quota lease back, exit 0.
 *
 * @since 0.1.0
 */
import "./Prelude.ts"
import { Effect } from "effect"
import { makeHandler } from "./App.ts"
import { type BootstrapFile, parseBootstrap } from "./config/BootstrapFile.ts"
import { EnvConfig } from "./config/Env.ts"
import { ObservabilityEnvConfig } from "./config/ObservabilityEnv.ts"
import { closeOpenBodies } from "./http/ReadableBody.ts"
import { stdoutSink } from "./observability/AccessLog.ts"

const logSink = stdoutSink()

const fail = (message: string): never => {
  logSink.flush()
  Deno.stderr.writeSync(new TextEncoder().encode(`sluice: ${message}\n`))
  Deno.exit(1)
}

const env = await Effect.runPromise(EnvConfig).catch((error: Error) => fail(error.message))
const observability = await Effect.runPromise(ObservabilityEnvConfig).catch((error: Error) => fail(error.message))

let file: BootstrapFile | undefined
if (env.configPath !== undefined) {
  const text = await Deno.readTextFile(env.configPath).catch((error: Error) =>
    fail(`cannot read ${env.configPath}: ${error.message}`)
  )
  const parsed = parseBootstrap(text, env.configPath)
  if (!parsed.ok) fail(`invalid bootstrap file ${env.configPath}: ${parsed.message}`)
  else file = parsed.file
}

if (env.databaseUrl === undefined) await Deno.mkdir(env.dataDir, { recursive: true })
const { handler, dispose, drainSockets } = makeHandler({
  databaseUrl: env.databaseUrl,
  dataDir: env.dataDir,
  redisUrl: env.redisUrl,
  file,
  telemetry: {
    metrics: observability.metrics,
    accessLog: observability.accessLog,
    format: observability.logFormat ?? (Deno.stdout.isTerminal() ? "text" : "json"),
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

// Build every layer (migrations, bootstrap file) before accepting traffic.
const ready = await handler(new Request("http://localhost/healthz")).catch((error: Error) => fail(error.message))
if (ready.status !== 200) fail(`startup failed: ${await ready.text()}`)

const server = Deno.serve({
  port: env.port,
  hostname: env.host,
  onListen: ({ hostname, port }) => {
    Deno.stderr.writeSync(new TextEncoder().encode(`sluice: listening on http://${hostname}:${port}\n`))
  }
}, (request, info) => handler(request, info))

let stopping = false
/**
 * Stops accepting, lets requests and streams finish until the grace period
 * ends, then cuts the streams still open, running their settlement (billing
 * what was delivered, recording the usage row) before the layers close: the
 * usage log's last flush, then the ledger's final commit, which hands every
 * lease row of this instance back.
 */
const shutdown = async () => {
  if (stopping) return
  stopping = true
  const graceEnds = Date.now() + env.shutdownGraceSeconds * 1000
  // WebSockets first: the server's shutdown would close them at once. They take no new response; those in flight
  // finish within the grace, then each socket closes with 1001, while the server still answers HTTP.
  await drainSockets(graceEnds)
  const deadline = new Promise<boolean>((resolve) =>
    setTimeout(() => resolve(false), Math.max(0, graceEnds - Date.now()))
  )
  const drained = server.shutdown().then(() => true)
  if (!await Promise.race([drained, deadline])) {
    await closeOpenBodies()
    // The cut responses end their connections; give the server a moment to see it.
    await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, 1_000))])
  }
  await dispose()
  logSink.flush()
  Deno.exit(0)
}
Deno.addSignalListener("SIGTERM", shutdown)
Deno.addSignalListener("SIGINT", shutdown)
