/**
 * A loopback server in front of an in-process gateway that records the path
 * of every request it passes on, so a test can count a client's attempts
 * (retries included).
 */
import type { TestGateway } from "./Gateway.ts"

/** A running front door: its base URL, the paths it saw, and how to stop it. */
export interface CountingFrontDoor {
  readonly url: string
  /** Paths in arrival order; empty it with `paths.length = 0`. */
  readonly paths: Array<string>
  readonly close: () => Promise<void>
}

/** Starts a counting front door for `gateway` on a random loopback port. */
export const countingFrontDoor = (gateway: TestGateway): CountingFrontDoor => {
  const paths: Array<string> = []
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    paths.push(new URL(request.url).pathname)
    return gateway.handler(request)
  })
  return { url: `http://127.0.0.1:${server.addr.port}`, paths, close: () => server.shutdown() }
}
