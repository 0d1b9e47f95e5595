/**
 * The Realtime session against a hostile vendor, over fake sockets and a recording ledger: a `response.done` with no
 * `response.created` is billed against the spare float (and a new float held), a repeated one bills nothing, a
 * frame that is not JSON is passed through unbilled, and the end releases the spare float and frees the slot.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect, Logger } from "effect"
import type { Ledger } from "../../src/billing/Ledger.ts"
import type { Hold } from "../../src/billing/QuotaLedger.ts"
import { toFixed } from "../../src/domain/Pricing.ts"
import { startRealtimeSession } from "../../src/relay/realtime/RealtimeSession.ts"
import type { ClientSocket } from "../../src/upstreams/transport/ClientSocket.ts"
import type { Principal } from "../../src/services/Auth.ts"
import type { Candidate } from "../../src/services/ChannelRouter.ts"

class FakeSocket extends EventTarget {
  readyState: number = WebSocket.OPEN
  readonly sent: Array<string> = []
  send(text: string) {
    this.sent.push(text)
  }
  close(code = 1000) {
    if (this.readyState === WebSocket.CLOSED) return
    this.readyState = WebSocket.CLOSED
    this.dispatchEvent(Object.assign(new Event("close"), { code, reason: "" }))
  }
  receive(text: string) {
    this.dispatchEvent(Object.assign(new Event("message"), { data: text }))
  }
}

/** The session's fixed inputs both tests share: one user, one channel, a price of 1 a token, a float of 1,000. */
const FIXED = {
  principal: { userId: 1n, tokenId: 2n, group: "default" } as Principal,
  model: "gpt-realtime-test",
  candidate: { channel: { id: 1, name: "emu" }, key: { key: "k" }, upstreamModel: "gpt-rt" } as Candidate,
  price: { input: toFixed(1), output: toFixed(1), audioInput: toFixed(1), audioOutput: toFixed(1), free: false },
  ratio: 1_000_000_000n,
  float: 1_000n,
  firstHold: { id: 0 } as unknown as Hold
}

/** No limits, no spans, no metrics; its log lines are the integration tests' concern, so here they go nowhere. */
const QUIET = {
  metrics: undefined,
  maxFrameBytes: 1024,
  eventsPerSecond: 0,
  idleMillis: 0,
  traced: false,
  started: Date.now(),
  run: <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect.pipe(Effect.provide(Logger.layer([]))))
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 20))

Deno.test("RealtimeSession: an unannounced response.done is billed once against the spare float", async () => {
  let holds = 0
  const booked: Array<{ cost: bigint; requestId: string }> = []
  const released: Array<Hold> = []
  const ledger = {
    hold: () => Effect.sync(() => ({ id: ++holds }) as unknown as Hold),
    book: (_hold: Hold | undefined, cost: bigint, row: (charged: bigint) => { requestId: string }) =>
      Effect.sync(() => {
        booked.push({ cost, requestId: row(cost).requestId })
        return cost
      }),
    release: (hold: Hold) => Effect.sync(() => void released.push(hold)),
    durable: Effect.succeed(true)
  } as unknown as typeof Ledger.Service
  let slotReleased = false
  const client = new FakeSocket()
  const upstream = new FakeSocket()
  const session = startRealtimeSession(
    {
      socketId: "rtsock_test",
      ...FIXED,
      permit: { release: () => Effect.sync(() => void (slotReleased = true)) },
      admitResponse: Effect.succeed({ release: () => Effect.void }),
      ledger,
      ...QUIET
    },
    client as unknown as WebSocket,
    upstream as unknown as ClientSocket
  )

  const done = JSON.stringify({
    type: "response.done",
    response: { id: "resp_1", usage: { input_tokens: 10, output_tokens: 5 } }
  })
  upstream.receive(done)
  upstream.receive(done)
  upstream.receive("not json")
  await flush()
  deepStrictEqual(booked, [{ cost: 15n, requestId: "rtsock_test/resp_1" }])
  strictEqual(holds, 1, "a new float was held after the spare was used")
  deepStrictEqual(client.sent, [done, done, "not json"])

  client.close(1000)
  await session.ended
  deepStrictEqual(released, [{ id: 1 }], "the refilled spare float was released")
  strictEqual(slotReleased, true)
  strictEqual(upstream.readyState, WebSocket.CLOSED)
})

Deno.test("RealtimeSession: each response holds an rpm place until it ends, then gives back its tokens; a turn-detected response over the rpm is cancelled", async () => {
  const ledger = {
    hold: () => Effect.sync(() => ({ id: 1 }) as unknown as Hold),
    book: (_hold: Hold | undefined, cost: bigint) => Effect.succeed(cost),
    release: () => Effect.void,
    durable: Effect.succeed(true)
  } as unknown as typeof Ledger.Service
  // Two places in the rpm; each release records the tokens it gives back.
  let places = 2
  const releasedTokens: Array<number> = []
  const admitResponse = Effect.suspend(() => {
    if (places === 0) return Effect.fail({ _tag: "RateLimited" } as never)
    places--
    return Effect.succeed({ release: (tokens: number) => Effect.sync(() => void releasedTokens.push(tokens)) })
  })
  let slotTokens: number | undefined
  const client = new FakeSocket()
  const upstream = new FakeSocket()
  const session = startRealtimeSession(
    {
      socketId: "rtsock_rpm",
      ...FIXED,
      permit: { release: (tokens) => Effect.sync(() => void (slotTokens = tokens)) },
      admitResponse,
      ledger,
      ...QUIET
    },
    client as unknown as WebSocket,
    upstream as unknown as ClientSocket
  )
  const created = (id: string) => JSON.stringify({ type: "response.created", response: { id } })
  const done = (id: string) =>
    JSON.stringify({ type: "response.done", response: { id, usage: { input_tokens: 30, output_tokens: 12 } } })

  // The caller's create takes a place; the response it asks for carries it and gives back its 42 tokens.
  client.receive(JSON.stringify({ type: "response.create" }))
  await flush()
  strictEqual(places, 1)
  upstream.receive(created("resp_a"))
  upstream.receive(done("resp_a"))
  await flush()
  deepStrictEqual(releasedTokens, [42])
  strictEqual(places, 1, "the create's place was not taken twice")

  // Turn detection starts one: it takes the last place; the next one finds none and is cancelled at the vendor.
  upstream.receive(created("resp_b"))
  upstream.receive(created("resp_c"))
  await flush()
  strictEqual(places, 0)
  deepStrictEqual(upstream.sent.map((text) => JSON.parse(text)).filter((event) => event.type === "response.cancel"), [
    { type: "response.cancel", response_id: "resp_c" }
  ])
  const refusals = client.sent.map((text) => JSON.parse(text)).filter((event) => event.type === "error")
  deepStrictEqual(refusals.map((event) => event.error.code), ["rate_limit_exceeded"])
  // Both are billed what they report; only resp_b held a place to give back.
  upstream.receive(done("resp_b"))
  upstream.receive(done("resp_c"))
  await flush()
  deepStrictEqual(releasedTokens, [42, 42])

  client.close(1000)
  await session.ended
  strictEqual(slotTokens, 0, "the socket's own slot gives back no tokens: each response gave its own")
})
