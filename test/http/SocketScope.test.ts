/**
 * A client socket's scope: a resource made once on first use and shared by the socket's requests, every resource
 * closed with the scope (and none made after), and the scope read back from the requests it was bound to only.
 */
import { strictEqual } from "node:assert/strict"
import { HttpServerRequest } from "effect/http"
import { bindSocketScope, makeSocketScope, type SocketResourceKey, socketScopeOf } from "../../src/http/SocketScope.ts"

interface Counter {
  readonly made: number
  closed: number
  readonly close: () => void
}

const counters: Array<Counter> = []
const COUNTER: SocketResourceKey<Counter> = {
  name: "counter",
  make: () => {
    const counter: Counter = {
      made: counters.length + 1,
      closed: 0,
      close: () => counter.closed++
    }
    counters.push(counter)
    return counter
  }
}

Deno.test("socket scope: made on first use, closed once with the scope, none after", () => {
  counters.length = 0
  const scope = makeSocketScope("ws_0123456789abcdef01234567")
  strictEqual(scope.socketId, "ws_0123456789abcdef01234567")
  const first = scope.get(COUNTER)
  strictEqual(scope.get(COUNTER), first, "one resource per key")
  strictEqual(counters.length, 1)
  scope.close()
  scope.close()
  strictEqual(first?.closed, 1, "closed once")
  strictEqual(scope.get(COUNTER), undefined, "nothing made once closed")
  strictEqual(counters.length, 1)
})

Deno.test("socket scope: read back from the requests it was bound to, never from others", () => {
  const scope = makeSocketScope("ws_0123456789abcdef01234567")
  const inner = bindSocketScope(new Request("http://localhost/v1/responses", { method: "POST", body: "{}" }), scope)
  strictEqual(socketScopeOf(HttpServerRequest.fromWeb(inner)), scope)
  const other = new Request("http://localhost/v1/responses", { method: "POST", body: "{}" })
  strictEqual(socketScopeOf(HttpServerRequest.fromWeb(other)), undefined)
})
