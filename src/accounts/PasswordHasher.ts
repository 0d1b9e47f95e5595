/**
 * bcrypt off the event loop, with a bound: password hashes and checks run in
 * `workers` worker threads (`HashWorker.ts`, one job at a time each), and at
 * most `queue` jobs wait for one. A job past that bound is refused at once
 * with `RateLimited` (429, `Retry-After: 1`) rather than queued, so a flood
 * of logins or sign-ups costs at most `workers` busy threads and never delays
 * the relay routes on the main thread. Workers start on the first job and
 * stop with the layer; on a platform without Web Workers the jobs run on the
 * main thread, `workers` at a time, under the same queue bound.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { RateLimited } from "../errors/GatewayError.ts"
import { hashPassword, verifyPassword } from "../domain/Password.ts"
import type { HashJob, HashResult } from "./HashWorker.ts"

/** Pool size and queue bound. @category models */
export interface HasherOptions {
  /** Worker threads (default 1). */
  readonly workers: number
  /** Jobs that may wait for a worker (default 32); more are refused. */
  readonly queue: number
}

type Work = { readonly op: "hash"; readonly password: string } | {
  readonly op: "verify"
  readonly password: string
  readonly hash: string | null
}

interface Pending {
  readonly work: Work
  readonly done: (result: HashResult) => void
}

const busy = () =>
  new RateLimited({ message: "Too many password checks at once; try again in 1 seconds.", retryAfterSeconds: 1 })

/** @category services */
export class PasswordHasher extends Context.Service<PasswordHasher, {
  /** The bcrypt hash of `password`; `RateLimited` when the queue is full. */
  readonly hash: (password: string) => Effect.Effect<string, RateLimited>
  /** Whether `password` matches `hash` (`null`/`undefined`: checked against a decoy, false). */
  readonly verify: (password: string, hash: string | null | undefined) => Effect.Effect<boolean, RateLimited>
}>()("sluice/accounts/PasswordHasher") {
  /** A pool of worker threads. */
  static readonly layer = (options: HasherOptions) =>
    Layer.effect(
      PasswordHasher,
      Effect.gen(function* () {
        const idle: Array<Worker> = []
        const all: Array<Worker> = []
        const waiting: Array<Pending> = []
        const running = new Map<number, Pending>()
        let nextId = 0
        let closed = false

        const dispatch = () => {
          while (idle.length > 0 && waiting.length > 0) {
            const worker = idle.pop()!
            const job = waiting.shift()!
            const id = nextId++
            running.set(id, job)
            worker.postMessage({ id, ...job.work } satisfies HashJob)
          }
        }

        /** Where the platform has no Web Workers: one job on the main thread, then the next one waiting. */
        const runInline = (job: Pending) => {
          const id = nextId++
          running.set(id, job)
          const work = job.work
          const run = work.op === "hash" ? hashPassword(work.password) : verifyPassword(work.password, work.hash)
          const settle = (result: HashResult) => {
            running.delete(id)
            job.done(result)
            const next = waiting.shift()
            if (next !== undefined) runInline(next)
          }
          run.then((value) => settle({ id, ok: true, value }), () => settle({ id, ok: false }))
        }

        let workersUnavailable = false

        const spawn = () => {
          let worker: Worker
          try {
            worker = new Worker(new URL("./HashWorker.ts", import.meta.url), { type: "module" })
          } catch {
            workersUnavailable = true
            return
          }
          worker.onmessage = (message: MessageEvent<HashResult>) => {
            const job = running.get(message.data.id)
            running.delete(message.data.id)
            idle.push(worker)
            job?.done(message.data)
            dispatch()
          }
          // A worker that fails (its module cannot load) fails the jobs it held; the rest run on the main thread.
          worker.onerror = (event) => {
            event.preventDefault()
            workersUnavailable = true
            for (const spawned of all) spawned.terminate()
            all.length = 0
            idle.length = 0
            for (const [id, job] of [...running]) {
              running.delete(id)
              job.done({ id, ok: false })
            }
            const next = waiting.shift()
            if (next !== undefined) runInline(next)
          }
          all.push(worker)
          idle.push(worker)
        }

        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            closed = true
            for (const worker of all) worker.terminate()
            for (const job of [...waiting, ...running.values()]) job.done({ id: -1, ok: false })
          })
        )

        const submit = (work: Work): Effect.Effect<string | boolean, RateLimited> =>
          Effect.suspend(() => {
            if (closed) return Effect.die(new Error("The password hasher is closed"))
            if (!workersUnavailable && all.length < Math.max(1, options.workers)) spawn()
            const free = workersUnavailable ? running.size < Math.max(1, options.workers) : idle.length > 0
            if (!free && waiting.length >= options.queue) return Effect.fail(busy())
            return Effect.callback<string | boolean>((resume) => {
              const job: Pending = {
                work,
                done: (result) =>
                  resume(result.ok ? Effect.succeed(result.value) : Effect.die(new Error("A password job failed")))
              }
              if (!workersUnavailable) {
                waiting.push(job)
                dispatch()
              } else if (free) runInline(job)
              else waiting.push(job)
            })
          })

        return PasswordHasher.of({
          hash: (password) => submit({ op: "hash", password }) as Effect.Effect<string, RateLimited>,
          verify: (password, hash) =>
            submit({ op: "verify", password, hash: hash ?? null }) as Effect.Effect<boolean, RateLimited>
        })
      })
    )
}
