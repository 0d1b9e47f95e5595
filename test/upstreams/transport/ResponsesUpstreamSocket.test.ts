/**
 * The upstream Responses socket pool against the emulator's socket: a turn's frames as the SSE events the Responses
 * decoder reads, one connection reused across turns, a turn abandoned mid-response closing its connection, an
 * error event as the first answer handed back as its status, the channel's first-byte timeout, and the pool's
 * connections closing with it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Exit } from "effect"
import type { Sse } from "effect/encoding"
import { startEmulator } from "../../../emulator/Emulator.ts"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import {
  makeResponsesUpstreamSockets,
  MAX_CONNECTIONS,
  type SocketTurn
} from "../../../src/upstreams/transport/ResponsesUpstreamSocket.ts"

const HEADERS = { authorization: "Bearer sk-test-up-ws-1" }
const TIMEOUTS = { firstByteMs: 5_000, idleMs: 5_000, totalMs: 30_000 }

/** Every event of a turn, to its end. */
const drain = async (turn: SocketTurn): Promise<ReadonlyArray<Sse.Event>> => {
  const events: Array<Sse.Event> = []
  while (true) {
    const batch = await Effect.runPromise(turn.next)
    if (batch === undefined) return events
    events.push(...batch)
  }
}

const until = async (done: () => boolean) => {
  for (let tries = 0; tries < 300 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 10))
}

Deno.test("upstream responses socket: turns reuse one connection, frames read as SSE events", async () => {
  const emulator = startEmulator({})
  const pool = makeResponsesUpstreamSockets()
  try {
    const url = `${emulator.url}/v1/responses`
    for (const input of ["first turn", "second turn"]) {
      const turn = await Effect.runPromise(pool.turn(url, HEADERS, { model: "gpt-5", input, stream: true }, TIMEOUTS))
      strictEqual(turn.status, 200)
      const events = await drain(turn)
      turn.release()
      strictEqual(events[0].event, "response.created")
      strictEqual(events.at(-1)!.event, "response.completed")
      ok(events.every((event) => JSON.parse(event.data).type === event.event), "named by their type")
      ok(events.at(-1)!.data.includes(`Echo: ${input}`))
    }
    strictEqual(pool.opened(), 1, "one upstream socket for both turns")
    const creates = emulator.requests.filter((request) => request.method === "POST")
    deepStrictEqual(creates.map((request) => request.transport), ["websocket", "websocket"])
    strictEqual(creates[0].key, "sk-test-up-ws-1")
  } finally {
    pool.close()
    await until(() => emulator.openResponsesSockets() === 0)
    strictEqual(emulator.openResponsesSockets(), 0, "the pool's connections closed with it")
    await emulator.close()
  }
})

Deno.test("upstream responses socket: a turn released mid-response closes its connection", async () => {
  const emulator = startEmulator({ tokensPerSecond: 50 })
  const pool = makeResponsesUpstreamSockets()
  try {
    const url = `${emulator.url}/v1/responses`
    const body = { model: "gpt-5", input: "one two three four five six seven eight nine ten" }
    const turn = await Effect.runPromise(pool.turn(url, HEADERS, body, TIMEOUTS))
    await Effect.runPromise(turn.next)
    turn.release()
    await until(() => emulator.openResponsesSockets() === 0)
    strictEqual(emulator.openResponsesSockets(), 0, "the abandoned response's socket is closed")
    const again = await Effect.runPromise(pool.turn(url, HEADERS, { model: "gpt-5", input: "again" }, TIMEOUTS))
    strictEqual((await drain(again)).at(-1)!.event, "response.completed")
    again.release()
    strictEqual(pool.opened(), 2, "a new connection for the next turn")
  } finally {
    pool.close()
    await emulator.close()
  }
})

Deno.test("upstream responses socket: an error first is a status; a slow first frame times out", async () => {
  const emulator = startEmulator({})
  const pool = makeResponsesUpstreamSockets()
  try {
    const url = `${emulator.url}/v1/responses`
    emulator.setFaults([{ match: { path: "/v1/responses" }, status: 429, message: "Slow down.", times: 1 }])
    const refused = await Effect.runPromise(pool.turn(url, HEADERS, { model: "gpt-5", input: "x" }, TIMEOUTS))
    strictEqual(refused.status, 429)
    strictEqual(JSON.parse(refused.errorText).error.message, "Slow down.")
    refused.release()
    strictEqual(pool.opened(), 1)

    emulator.setFaults([{ match: { path: "/v1/responses" }, delayMs: 2_000, times: 1 }])
    const slow = await Effect.runPromiseExit(
      pool.turn(url, HEADERS, { model: "gpt-5", input: "x" }, { ...TIMEOUTS, firstByteMs: 100 })
    )
    ok(Exit.isFailure(slow))
    const error = slow.cause.reasons.find((reason) => reason._tag === "Fail")
    ok(error !== undefined && error._tag === "Fail" && error.error instanceof UpstreamFailed)
    strictEqual(error.error.kind, "timeout")
    await until(() => emulator.openResponsesSockets() === 0)
    strictEqual(emulator.openResponsesSockets(), 0, "the timed-out turn's socket is closed")
  } finally {
    pool.close()
    await emulator.close()
  }
})

Deno.test("upstream responses socket: a refused handshake is its HTTP status and body, for the wire's classifier", async () => {
  const emulator = startEmulator({ validKeys: ["sk-test-other"] })
  const pool = makeResponsesUpstreamSockets()
  try {
    const turn = await Effect.runPromise(
      pool.turn(`${emulator.url}/v1/responses`, HEADERS, { model: "gpt-5", input: "x" }, TIMEOUTS)
    )
    strictEqual(turn.status, 401)
    ok(turn.errorText.length > 0, "the refusal's body is handed on")
    turn.release()
  } finally {
    pool.close()
    await emulator.close()
  }
})

Deno.test("upstream responses socket: a socket that cannot be reached fails as a network error", async () => {
  const emulator = startEmulator({})
  const url = `${emulator.url}/v1/responses`
  await emulator.close()
  const pool = makeResponsesUpstreamSockets()
  try {
    const exit = await Effect.runPromiseExit(pool.turn(url, HEADERS, { model: "gpt-5", input: "x" }, TIMEOUTS))
    ok(Exit.isFailure(exit))
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    ok(failure !== undefined && failure._tag === "Fail" && failure.error instanceof UpstreamFailed)
    strictEqual(failure.error.kind, "network")
  } finally {
    pool.close()
  }
})

Deno.test("upstream responses socket: a turn continuing the connection's last response sends only its new input", async () => {
  const emulator = startEmulator({})
  const pool = makeResponsesUpstreamSockets()
  try {
    const url = `${emulator.url}/v1/responses`
    const send = async (input: unknown) => {
      const turn = await Effect.runPromise(pool.turn(url, HEADERS, { model: "gpt-5", input, store: false }, TIMEOUTS))
      const events = await drain(turn)
      turn.release()
      return JSON.parse(events.at(-1)!.data).response as { id: string; output: ReadonlyArray<unknown> }
    }
    const first = await send("remember the heron")
    const history = [{ type: "message", role: "user", content: "remember the heron" }, ...first.output]
    const second = await send([...history, { type: "message", role: "user", content: "what bird?" }])
    const recorded = emulator.requests.filter((request) => request.method === "POST")
    const body = recorded[1].body as { previous_response_id?: string; input: ReadonlyArray<unknown> }
    strictEqual(body.previous_response_id, first.id, "continued from the connection's last response")
    strictEqual(body.input.length, history.length + 1, "the emulator expanded the same conversation")
    ok(JSON.stringify(second.output).includes("Echo: what bird?"))
    ok((recorded[1].usage?.input ?? 0) > (recorded[0].usage?.input ?? 0), "the usage counts the whole conversation")

    // The upstream lost the response continued from: the turn goes again, whole.
    emulator.setFaults([{
      match: { path: "/v1/responses" },
      status: 400,
      body: {
        error: {
          type: "invalid_request_error",
          code: "previous_response_not_found",
          message: "Previous response not found.",
          param: "previous_response_id"
        }
      },
      times: 1
    }])
    const conversation = [
      ...history,
      { type: "message", role: "user", content: "what bird?" },
      ...second.output,
      { type: "message", role: "user", content: "and again?" }
    ]
    const third = await send(conversation)
    ok(JSON.stringify(third.output).includes("Echo: and again?"))
    const [refused, whole] = emulator.requests.slice(-2).map((request) =>
      request.body as { previous_response_id?: string; input: ReadonlyArray<unknown> }
    )
    strictEqual(refused.previous_response_id, second.id)
    strictEqual(whole.previous_response_id, undefined, "sent again without the continuation")
    strictEqual(whole.input.length, conversation.length)

    // A conversation that does not start with the last one is sent whole.
    await send([{ type: "message", role: "user", content: "something else" }])
    strictEqual((emulator.requests.at(-1)!.body as { previous_response_id?: string }).previous_response_id, undefined)
    strictEqual(pool.opened(), 1)
  } finally {
    pool.close()
    await emulator.close()
  }
})

/** A hostile upstream socket: answers each create by what its `input` names. */
const hostileUpstream = () =>
  Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request)
    socket.onmessage = (message) => {
      const input = JSON.parse(String(message.data)).input
      const created = JSON.stringify({ type: "response.created", response: { id: "resp_h", output: [] } })
      if (input === "binary") socket.send(new Uint8Array([1, 2, 3]))
      else if (input === "deep") socket.send(`{"type":"response.created","x":${"[".repeat(200)}${"]".repeat(200)}}`)
      else if (input === "late-binary") {
        socket.send(created)
        socket.send(new Uint8Array([1]))
      } else if (input === "silent") socket.send(created)
    }
    return response
  })

Deno.test("upstream responses socket: hostile frames are bad-body failures, a silent upstream times out", async () => {
  const server = hostileUpstream()
  const pool = makeResponsesUpstreamSockets()
  try {
    const url = `http://127.0.0.1:${server.addr.port}/v1/responses`
    const kindOf = async (input: string, timeouts = TIMEOUTS) => {
      const exit = await Effect.runPromiseExit(Effect.flatMap(
        pool.turn(url, HEADERS, { model: "m", input }, timeouts),
        (turn) => Effect.ensuring(Effect.flatMap(turn.next, () => turn.next), Effect.sync(turn.release))
      ))
      if (Exit.isSuccess(exit)) return "answered"
      const reason = exit.cause.reasons.find((item) => item._tag === "Fail")
      return reason !== undefined && reason._tag === "Fail" && reason.error instanceof UpstreamFailed
        ? reason.error.kind
        : "other"
    }
    strictEqual(await kindOf("binary"), "bad-body")
    strictEqual(await kindOf("deep"), "bad-body")
    strictEqual(await kindOf("late-binary"), "bad-body")
    strictEqual(await kindOf("silent", { ...TIMEOUTS, idleMs: 100 }), "timeout")
    strictEqual(pool.opened(), 4, "every failed turn's connection was closed, none reused")
  } finally {
    pool.close()
    await server.shutdown()
  }
})

Deno.test("upstream responses socket: past the bound, an idle connection of another key makes room", async () => {
  const emulator = startEmulator({})
  const pool = makeResponsesUpstreamSockets()
  try {
    const url = `${emulator.url}/v1/responses`
    for (let index = 0; index <= MAX_CONNECTIONS; index++) {
      const headers = { authorization: `Bearer sk-test-up-ws-${index}` }
      const turn = await Effect.runPromise(
        pool.turn(url, headers, { model: "gpt-5", input: `turn ${index}` }, TIMEOUTS)
      )
      strictEqual((await drain(turn)).at(-1)!.event, "response.completed")
      turn.release()
    }
    strictEqual(pool.opened(), MAX_CONNECTIONS + 1)
    await until(() => emulator.openResponsesSockets() <= MAX_CONNECTIONS)
    strictEqual(emulator.openResponsesSockets(), MAX_CONNECTIONS, "one idle connection was closed")
  } finally {
    pool.close()
    await emulator.close()
  }
})
