/**
 * The password hasher's own thread: a Web Worker that runs bcrypt
 * (`hashPassword`, `verifyPassword` of `domain/Password.ts`) one job at a
 * time, so password checks never hold the gateway's event loop.
 *
 * Messages in: `HashJob`; out: `HashResult` with the same `id`.
 *
 * @since 0.1.0
 */
/// <reference lib="deno.worker" />
import { hashPassword, verifyPassword } from "../domain/Password.ts"

/** A job: hash `password`, or check it against `hash` (`null`: a decoy, answers false). @category models */
export type HashJob =
  | { readonly id: number; readonly op: "hash"; readonly password: string }
  | { readonly id: number; readonly op: "verify"; readonly password: string; readonly hash: string | null }

/** A job's answer: the hash, whether the password matched, or that the job failed. @category models */
export type HashResult =
  | { readonly id: number; readonly ok: true; readonly value: string | boolean }
  | { readonly id: number; readonly ok: false }

self.onmessage = async (message: MessageEvent<HashJob>) => {
  const job = message.data
  try {
    const value = job.op === "hash" ? await hashPassword(job.password) : await verifyPassword(job.password, job.hash)
    self.postMessage({ id: job.id, ok: true, value } satisfies HashResult)
  } catch {
    self.postMessage({ id: job.id, ok: false } satisfies HashResult)
  }
}
