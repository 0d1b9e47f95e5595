/**
 * The gateway's own web handler, as the batch runner sends each line to it: the handler is made from the layers
 * the runner is part of, so it is handed over once it exists (`App.makeHandler` sets it before the first request
 * is served); a line sent before that is answered 503.
 *
 * @since 0.4.0
 */
import { Context, Layer } from "effect"

/** Where the handler is put once made. @category models */
export interface DispatchHolder {
  handler: ((request: Request) => Promise<Response>) | undefined
}

/** A holder with no handler yet. @category constructors */
export const makeDispatchHolder = (): DispatchHolder => ({ handler: undefined })

/** @category services */
export class BatchDispatch extends Context.Service<BatchDispatch, {
  /** Sends `request` through the gateway's handler, exactly as a caller's request would go. */
  readonly dispatch: (request: Request) => Promise<Response>
}>()("sluice/batches/BatchDispatch") {
  /** Over `holder`: its handler once set, a 503 before. */
  static readonly layer = (holder: DispatchHolder) =>
    Layer.succeed(
      BatchDispatch,
      BatchDispatch.of({
        dispatch: (request) =>
          holder.handler === undefined
            ? Promise.resolve(Response.json({ error: { message: "The gateway is starting." } }, { status: 503 }))
            : holder.handler(request)
      })
    )
}
