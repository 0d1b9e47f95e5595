/**
 * The WebSocket sessions a gateway has open, across its socket routes, so a shutdown can drain them before the
 * server stops: `Deno.serve`'s `shutdown()` closes every upgraded socket at once with 1001, so the sessions are
 * drained first (`drain`: each stops taking new work, lets what is in flight finish within the grace, and closes
 * with 1001 itself). One registry per app (`App.ts` `makeHandler`), never module state.
 *
 * @since 0.3.0
 */
import { Context } from "effect"

/** One open session as the registry sees it. @category models */
export interface DrainableSession {
  /** Stops taking new work, lets what is in flight finish for up to `graceMillis`, then closes with 1001. */
  readonly drain: (graceMillis: number) => void
  /** Resolves once the session ended and settled. */
  readonly ended: Promise<void>
}

/** The registry. @category models */
export interface WebSocketSessionRegistry {
  /** Registers `session` until it ends. */
  readonly add: (session: DrainableSession) => void
  /** Sessions open now. */
  readonly size: () => number
  /** Drains every open session; resolves when all ended, or `graceMillis` plus 2 s passed. */
  readonly drain: (graceMillis: number) => Promise<void>
}

/** @category services */
export class WebSocketSessions extends Context.Service<WebSocketSessions, WebSocketSessionRegistry>()(
  "sluice/http/WebSocketSessions"
) {}

/**
 * A new, empty registry.
 *
 * @category constructors
 */
export const makeWebSocketSessions = (): WebSocketSessionRegistry => {
  const open = new Set<DrainableSession>()
  return {
    add: (session) => {
      open.add(session)
      void session.ended.then(() => open.delete(session))
    },
    size: () => open.size,
    drain: async (graceMillis) => {
      const draining = [...open]
      if (draining.length === 0) return
      for (const session of draining) session.drain(graceMillis)
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([
        Promise.allSettled(draining.map((session) => session.ended)),
        new Promise((resolve) => timer = setTimeout(resolve, graceMillis + 2_000))
      ])
      clearTimeout(timer)
    }
  }
}
