/**
 * Slow clients (issue 37, item 6) over real sockets: a body that does not
 * arrive within the body deadline is answered 408 in the route's envelope,
 * whether its length was declared or it came chunked, as JSON or multipart,
 * on the unauthenticated login route as on `/v1`; a slow body inside the
 * deadline is served. Past the bound on requests open from one address, the
 * next is refused with 429 and `Retry-After` until one ends. The same bounds
 * and the startup notice of `/metrics` through `src/main.ts` and its
 * environment variables. Deadlines are a second here; waits are bounded
 * generously and only outcomes are asserted.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, freshPostgres, startGateway } from "../support/Gateway.ts"
import { startMain } from "../support/MainProcess.ts"
import { openSlow, requestHead, type SlowRequest } from "../support/SlowClient.ts"

const KEY = "sk-test-alice-0001"

/** Well past a deadline of one second (its resolution is a quarter of a second), on a loaded machine. */
const ANSWER_WITHIN_MS = 15_000

const closeAll = (requests: ReadonlyArray<SlowRequest>) => requests.forEach((request) => request.close())

Deno.test("slow clients: a body that does not arrive within the body deadline is answered 408", async (t) => {
  const gateway = await startGateway({ config: basicConfig, bodyTimeoutSeconds: 1 })
  const opened: Array<SlowRequest> = []
  const open = async (start: string) => {
    const request = await openSlow(gateway.url, start)
    opened.push(request)
    return request
  }
  try {
    await t.step(
      "a declared login body sent in part: 408 in the api envelope, the connection to be closed",
      async () => {
        const body = JSON.stringify({ username: "root", password: "not-the-password" })
        const slow = await open(
          requestHead("POST", "/api/user/login", {
            "content-type": "application/json",
            "content-length": String(body.length)
          }) + body.slice(0, 10)
        )
        const answer = await slow.answer(ANSWER_WITHIN_MS)
        strictEqual(answer.status, 408)
        deepStrictEqual(JSON.parse(answer.body), {
          success: false,
          message: "The request body did not arrive within 1 s."
        })
        strictEqual(answer.headers.get("connection"), "close")
        strictEqual(answer.headers.get("x-should-retry"), null, "a retry, sent faster, can succeed")
      }
    )

    await t.step("a chunked chat body trickled a byte at a time: 408 in the gateway envelope", async () => {
      const slow = await open(
        requestHead("POST", "/v1/chat/completions", {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
          "transfer-encoding": "chunked"
        }) + "1\r\n{\r\n"
      )
      let answered = false
      const trickle = (async () => {
        for (let index = 0; index < 100 && !answered; index++) {
          await new Promise((resolve) => setTimeout(resolve, 200))
          await slow.send('1\r\n"\r\n').catch(() => undefined)
        }
      })()
      const answer = await slow.answer(ANSWER_WITHIN_MS).finally(() => answered = true)
      await trickle
      strictEqual(answer.status, 408)
      deepStrictEqual(JSON.parse(answer.body), {
        error: {
          message: "The request body did not arrive within 1 s.",
          type: "invalid_request_error",
          param: "",
          code: "request_timeout"
        }
      })
      strictEqual(gateway.emulator.requests.length, 0, "no upstream call")
    })

    await t.step("a multipart body sent in part: 408", async () => {
      const slow = await open(
        requestHead("POST", "/v1/images/edits", {
          authorization: `Bearer ${KEY}`,
          "content-type": "multipart/form-data; boundary=sluice-test",
          "content-length": "4000"
        }) + '--sluice-test\r\nContent-Disposition: form-data; name="model"\r\n\r\ngpt-image-1\r\n'
      )
      const answer = await slow.answer(ANSWER_WITHIN_MS)
      strictEqual(answer.status, 408)
      strictEqual((JSON.parse(answer.body) as { error: { code: string } }).error.code, "request_timeout")
    })

    await t.step("a body sent in two parts inside the deadline is served", async () => {
      const body = JSON.stringify({ username: "root", password: "not-the-password" })
      const slow = await open(
        requestHead("POST", "/api/user/login", {
          "content-type": "application/json",
          "content-length": String(body.length)
        }) + body.slice(0, 10)
      )
      await new Promise((resolve) => setTimeout(resolve, 200))
      await slow.send(body.slice(10))
      const answer = await slow.answer(ANSWER_WITHIN_MS)
      strictEqual(answer.status, 200)
      deepStrictEqual(JSON.parse(answer.body), { success: false, message: "Invalid username or password." })
    })
  } finally {
    closeAll(opened)
    await gateway.close()
  }
})

/** Polls `path` until it answers `status` (at most `withinMs`); returns that answer. */
const pollFor = async (url: string, status: number, withinMs = ANSWER_WITHIN_MS) => {
  const started = Date.now()
  while (true) {
    const response = await fetch(url)
    const text = await response.text()
    if (response.status === status) return { response, text }
    if (Date.now() - started > withinMs) throw new Error(`${url} answered ${response.status}, not ${status}: ${text}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

Deno.test("slow clients: past the requests one address may have open, the next is refused with 429 until one ends", async () => {
  const gateway = await startGateway({ config: basicConfig, maxOpenRequestsPerAddress: 2 })
  const slow: Array<SlowRequest> = []
  try {
    const body = JSON.stringify({ username: "root", password: "not-the-password" })
    for (let index = 0; index < 2; index++) {
      slow.push(
        await openSlow(
          gateway.url,
          requestHead("POST", "/api/user/login", {
            "content-type": "application/json",
            "content-length": String(body.length)
          }) + body.slice(0, 5)
        )
      )
    }
    const refused = await pollFor(`${gateway.url}/healthz`, 429)
    strictEqual(refused.response.headers.get("retry-after"), "1")
    deepStrictEqual(JSON.parse(refused.text), {
      error: {
        message: "Too many requests open from this address (at most 2); try again when one has finished.",
        type: "platform_api_error",
        param: "",
        code: "too_many_requests"
      }
    })
    const api = await fetch(`${gateway.url}/api/status`)
    strictEqual(api.status, 429)
    strictEqual(api.headers.get("cache-control"), "no-store")
    strictEqual((await api.json() as { success: boolean }).success, false)

    // One of the two ends: a place is free again.
    slow[0].close()
    await pollFor(`${gateway.url}/healthz`, 200)
  } finally {
    closeAll(slow)
    await gateway.close()
  }
})

Deno.test("slow clients: src/main.ts takes the bounds from its environment and tells of a loopback-only /metrics", async () => {
  const database = await freshPostgres()
  const main = await startMain({
    DATABASE_URL: database.url,
    HOST: "0.0.0.0",
    SLUICE_BODY_TIMEOUT_SECONDS: "2",
    SLUICE_MAX_OPEN_REQUESTS_PER_ADDRESS: "1",
    LOG_FORMAT: "json"
  })
  const slow: Array<SlowRequest> = []
  try {
    const body = JSON.stringify({ username: "root", password: "not-the-password" })
    const login = requestHead("POST", "/api/user/login", {
      "content-type": "application/json",
      "content-length": String(body.length)
    }) + body.slice(0, 5)
    slow.push(await openSlow(main.url, login))
    const refused = await pollFor(`${main.url}/healthz`, 429)
    strictEqual(refused.response.headers.get("retry-after"), "1")
    const answer = await slow[0].answer(ANSWER_WITHIN_MS)
    strictEqual(answer.status, 408)
    await pollFor(`${main.url}/healthz`, 200)

    const notices = main.stdout().split("\n").filter((line) => line.includes("GET /metrics answers loopback callers"))
    strictEqual(notices.length, 1, main.stdout())
    ok(notices[0].includes("0.0.0.0") && notices[0].includes("settings.metrics_token"), notices[0])
  } finally {
    closeAll(slow)
    await main.kill()
    await database.drop()
  }
})
