/**
 * Helpers for the rate limiter tests: running effects with captured logs, a
 * unique Redis key prefix per test (deleted afterwards), and a TCP proxy in
 * front of the test Redis that can be cut and restored to simulate an outage.
 */
import { Context, Effect, Layer, Logger, type Scope } from "effect"
import { Redis } from "ioredis"
import { RateLimiter } from "../../../src/services/RateLimiter.ts"

/** The Redis the tests use for real. */
export const redisUrl = "redis://127.0.0.1:6379"

/** One captured log line. */
export interface LogLine {
  readonly level: string
  readonly message: string
}

/** Runs `program` scoped, with every log line appended to `logs` instead of printed. */
export const runWithLogs = <A, E>(
  program: Effect.Effect<A, E, Scope.Scope>,
  logs: Array<LogLine> = []
): Promise<A> => {
  const collector = Logger.make((options) => {
    const parts = Array.isArray(options.message) ? options.message : [options.message]
    logs.push({ level: options.logLevel, message: parts.map(String).join(" ") })
  })
  return program.pipe(Effect.scoped, Effect.provide(Logger.layer([collector])), Effect.runPromise)
}

/** Builds `layer` in the current scope and returns its limiter (each call is a separate instance). */
export const limiterFrom = (layer: Layer.Layer<RateLimiter>) =>
  Layer.build(layer).pipe(Effect.map((context) => Context.get(context, RateLimiter)))

/** A fresh key prefix; every key under it is deleted when the scope closes. */
export const redisPrefix = Effect.acquireRelease(
  Effect.sync(() => `sluice:test:ratelimit:${crypto.randomUUID()}:`),
  (prefix) =>
    Effect.promise(async () => {
      const client = new Redis(redisUrl, { lazyConnect: true })
      await client.connect()
      const keys = await client.keys(`${prefix}*`)
      if (keys.length > 0) await client.del(...keys)
      await client.quit()
    })
)

/** Direct access to the test Redis for assertions, closed with the scope. */
export const redisClient = Effect.acquireRelease(
  Effect.promise(async () => {
    const client = new Redis(redisUrl, { lazyConnect: true })
    await client.connect()
    return client
  }),
  (client) => Effect.promise(() => client.quit())
)

/**
 * A TCP proxy to the test Redis on a fixed local port: `cut` drops every
 * connection and stops listening (refused connections), `restore` listens
 * again; `stall` holds every byte until `unstall` (a Redis that does not answer).
 */
export interface RedisProxy {
  readonly url: string
  readonly cut: () => void
  readonly restore: () => void
  readonly stall: () => void
  readonly unstall: () => void
}

/** Starts a proxy (stopped when the scope closes). */
export const redisProxy = Effect.acquireRelease(
  Effect.sync(() => {
    let listener: Deno.Listener | undefined
    let gate: { readonly opened: Promise<void>; readonly open: () => void } | undefined
    const open = new Set<Deno.Conn>()
    const close = (conn: Deno.Conn) => {
      open.delete(conn)
      try {
        conn.close()
      } catch {
        // Already closed.
      }
    }
    const forward = async (from: Deno.Conn, to: Deno.Conn) => {
      const buffer = new Uint8Array(64 * 1024)
      try {
        for (;;) {
          const read = await from.read(buffer)
          if (read === null) return
          const chunk = buffer.slice(0, read)
          if (gate !== undefined) await gate.opened
          for (let written = 0; written < chunk.length;) written += await to.write(chunk.subarray(written))
        }
      } catch {
        // One side closed; the proxy closes both.
      }
    }
    const serve = async (server: Deno.Listener) => {
      try {
        for await (const inbound of server) {
          open.add(inbound)
          Deno.connect({ hostname: "127.0.0.1", port: 6379 }).then((outbound) => {
            open.add(outbound)
            Promise.all([forward(inbound, outbound), forward(outbound, inbound)]).finally(() => {
              close(inbound)
              close(outbound)
            })
          }, () => close(inbound))
        }
      } catch {
        // The listener was closed.
      }
    }
    const start = (port: number) => {
      listener = Deno.listen({ hostname: "127.0.0.1", port })
      serve(listener)
      return (listener.addr as Deno.NetAddr).port
    }
    const port = start(0)
    const unstall = () => {
      gate?.open()
      gate = undefined
    }
    const cut = () => {
      unstall()
      listener?.close()
      listener = undefined
      for (const conn of [...open]) close(conn)
    }
    const stall = () => {
      if (gate !== undefined) return
      let release = () => {}
      const opened = new Promise<void>((resolve) => (release = resolve))
      gate = { opened, open: release }
    }
    return {
      url: `redis://127.0.0.1:${port}`,
      cut,
      restore: () => void start(port),
      stall,
      unstall
    } satisfies RedisProxy
  }),
  (proxy) => Effect.sync(() => proxy.cut())
)
