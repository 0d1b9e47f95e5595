/**
 * The environment settings of the outer contract (docs/ARCHITECTURE.md, "Outer contract"): `PORT` (3000),
 * `HOST` (0.0.0.0), `DATABASE_URL` (unset → embedded PGlite in
 * `SLUICE_DATA_DIR`, default `./data`), `SLUICE_CONFIG` (bootstrap file),
 * `REDIS_URL` (shared rate limits), `SLUICE_ROOT_PASSWORD` (the root user's
 * password on the first start; unset → generated and logged once), and the
 * bounds on slow clients: `SLUICE_BODY_TIMEOUT_SECONDS` (60) and
 * `SLUICE_MAX_OPEN_REQUESTS_PER_ADDRESS` (256), 0 turning either off; and
 * `SLUICE_LEASE_STALE_SECONDS` (120), when an instance that renewed no quota
 * lease counts as dead.
 *
 * @since 0.1.0
 */
import { Config, Option, Schema } from "effect"

/** Seconds a request body may take to arrive (`SLUICE_BODY_TIMEOUT_SECONDS`). @category config */
export const DEFAULT_BODY_TIMEOUT_SECONDS = 60

/** Requests one client address may have open at once (`SLUICE_MAX_OPEN_REQUESTS_PER_ADDRESS`). @category config */
export const DEFAULT_MAX_OPEN_REQUESTS_PER_ADDRESS = 256

/** Seconds without a lease renewal after which an instance counts as dead (`SLUICE_LEASE_STALE_SECONDS`). @category config */
export const DEFAULT_LEASE_STALE_SECONDS = 120

/** @category models */
export interface Env {
  readonly port: number
  readonly host: string
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly configPath: string | undefined
  readonly redisUrl: string | undefined
  readonly rootPassword: string | undefined
  /** Seconds in-flight requests get to finish after SIGTERM/SIGINT. */
  readonly shutdownGraceSeconds: number
  /** Seconds a request body may take to arrive before the request is answered 408; 0: no limit. */
  readonly bodyTimeoutSeconds: number
  /** Requests one client address may have open at once before more are answered 429; 0: no limit. */
  readonly maxOpenRequestsPerAddress: number
  /**
   * Seconds after which an instance that renewed no quota lease counts as dead: its leases stop counting once
   * its journaled charges are folded by a live instance, and it serves no hold itself (`SLUICE_LEASE_STALE_SECONDS`).
   */
  readonly leaseStaleSeconds: number
}

const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map((value) => Option.getOrUndefined(value) || undefined))

const count = (name: string, fallback: number) =>
  Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), name).pipe(Config.withDefault(fallback))

/**
 * Reads `Env` from the process environment.
 *
 * @category config
 */
export const EnvConfig: Config.Config<Env> = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(3000)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  databaseUrl: optionalString("DATABASE_URL"),
  dataDir: Config.String("SLUICE_DATA_DIR").pipe(Config.withDefault("./data")),
  configPath: optionalString("SLUICE_CONFIG"),
  redisUrl: optionalString("REDIS_URL"),
  rootPassword: optionalString("SLUICE_ROOT_PASSWORD"),
  shutdownGraceSeconds: Config.Int("SLUICE_SHUTDOWN_GRACE_SECONDS").pipe(Config.withDefault(30)),
  bodyTimeoutSeconds: count("SLUICE_BODY_TIMEOUT_SECONDS", DEFAULT_BODY_TIMEOUT_SECONDS),
  maxOpenRequestsPerAddress: count("SLUICE_MAX_OPEN_REQUESTS_PER_ADDRESS", DEFAULT_MAX_OPEN_REQUESTS_PER_ADDRESS),
  leaseStaleSeconds: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(2)), "SLUICE_LEASE_STALE_SECONDS")
    .pipe(Config.withDefault(DEFAULT_LEASE_STALE_SECONDS))
})
