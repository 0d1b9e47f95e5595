/**
 * What the webhook tests share: an endpoint that verifies every delivery with
 * the endpoint's secret (Standard Webhooks, `standardwebhooks`) and keeps the
 * events it accepted, and a wait for a condition with a deadline.
 */
import { Webhook } from "standardwebhooks"

/** One delivered event: its `webhook-id`, type and data. */
export interface Received {
  readonly id: string
  readonly type: string
  readonly data: Record<string, unknown>
}

/** A running receiver: its port, the accepted events (in order), the secret to verify with, and its shutdown. */
export interface WebhookReceiver {
  readonly port: number
  readonly received: Array<Received>
  /** The endpoint's signing secret (known once the endpoint is made; until then every delivery is refused). */
  secret: string
  readonly shutdown: () => Promise<void>
  /** Deliveries refused for their signature (400). */
  refusedSignatures: number
  /** Deliveries answered 503 while `up` said no. */
  downAnswers: number
}

/**
 * Starts a receiver on a free port. While `up()` is false it answers 503; then it verifies each delivery (400 on a
 * bad signature) and keeps the event (204).
 */
export const startWebhookReceiver = (up: () => boolean = () => true): WebhookReceiver => {
  const receiver: WebhookReceiver = {
    port: 0,
    received: [],
    secret: "",
    shutdown: () => server.shutdown(),
    refusedSignatures: 0,
    downAnswers: 0
  }
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = await request.text()
    if (!up()) {
      receiver.downAnswers++
      return new Response("down", { status: 503 })
    }
    try {
      const event = new Webhook(receiver.secret).verify(body, Object.fromEntries(request.headers)) as Received
      receiver.received.push({ id: request.headers.get("webhook-id")!, type: event.type, data: event.data })
      return new Response(null, { status: 204 })
    } catch {
      receiver.refusedSignatures++
      return new Response("bad signature", { status: 400 })
    }
  })
  return Object.assign(receiver, { port: server.addr.port })
}

/** Waits until `check` holds, every 250 ms; fails naming `what` after `millis`. */
export const until = async (what: string, check: () => boolean | Promise<boolean>, millis = 60_000) => {
  const deadline = Date.now() + millis
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}
