/**
 * The account surface under attack (issue 28), end to end through `/api/*`
 * and the official OpenAI SDK: parallel password guessing, spraying one
 * password over many names, login floods that would starve the relay of CPU,
 * sign-up floods, two instances sharing the throttle through Redis, forwarded
 * headers believed only from trusted proxies, and the smaller leaks.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { browser, setCookies } from "../support/Browser.ts"

const REDIS_URL = Deno.env.get("SLUICE_TEST_REDIS") ?? "redis://127.0.0.1:6379"

const login = (url: string, username: string, password: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/api/user/login`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ username, password })
  }).then(async (response) => ({
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    cookies: setCookies(response.headers),
    body: await response.json() as { success: boolean; message: string }
  }))

Deno.test("hardening 1: a burst of parallel guesses at one name is cut at login_max_failures", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const anonymous = browser(gateway.url)
    await anonymous.call("POST", "/api/user/register", { username: "victim", password: "victim-password-1" })
    const guesses = Array.from({ length: 99 }, (_, index) => `wrong-guess-${index}`)
    const answers = await Promise.all(
      [...guesses, "victim-password-1"].map((password) => login(gateway.url, "victim", password))
    )
    const evaluated = answers.filter((answer) => answer.status === 200)
    const refused = answers.filter((answer) => answer.status === 429)
    ok(evaluated.length <= 5, `${evaluated.length} guesses were checked`)
    strictEqual(evaluated.length + refused.length, 100)
    for (const answer of refused) {
      strictEqual(answer.body.success, false)
      ok(Number(answer.retryAfter) > 0, String(answer.retryAfter))
    }
    strictEqual(answers[99].body.success, false, "the right password sent last does not get in")
  } finally {
    await gateway.close()
  }
})

Deno.test("hardening 1: spraying one password over many names is throttled per address", async () => {
  const gateway = await startGateway({
    config: (url) => basicConfig(url, { settings: { login_address_max_failures: 10 } })
  })
  try {
    const statuses = []
    for (let index = 0; index < 14; index++) {
      statuses.push((await login(gateway.url, `sprayed${index}`, "Summer2026!")).status)
    }
    deepStrictEqual(statuses, [...Array(10).fill(200), ...Array(4).fill(429)])
  } finally {
    await gateway.close()
  }
})

Deno.test("hardening 1: two instances on one Redis share the login throttle", async () => {
  const prefix = `sluice-test:${crypto.randomUUID()}:`
  const first = await startGateway({ config: basicConfig, store: "postgres", redisUrl: REDIS_URL, redisPrefix: prefix })
  const second = await startGateway({
    config: basicConfig,
    databaseUrl: first.databaseUrl,
    redisUrl: REDIS_URL,
    redisPrefix: prefix
  })
  try {
    await browser(first.url).call("POST", "/api/user/register", { username: "shared", password: "shared-password-1" })
    const answers = await Promise.all(
      Array.from(
        { length: 8 },
        (_, index) => login(index % 2 === 0 ? first.url : second.url, "shared", `nope-${index}`)
      )
    )
    strictEqual(answers.filter((answer) => answer.status === 200).length, 5)
    strictEqual(answers.filter((answer) => answer.status === 429).length, 3)
  } finally {
    await second.stop()
    await first.close()
  }
})

Deno.test("hardening 4: a login flood neither blocks /v1 nor queues without bound; sign-ups are capped per address", async () => {
  const gateway = await startGateway({
    config: (url) =>
      basicConfig(url, {
        settings: { login_address_max_failures: 1000, registrations_per_address: 3, hash_queue: 16 }
      })
  })
  try {
    const client = new OpenAI({ apiKey: "sk-test-alice-0001", baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const chat = async () => {
      const started = performance.now()
      const answer = await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hello" }]
      })
      ok(answer.choices[0].message.content !== null)
      return performance.now() - started
    }
    await chat()
    const idle = await chat()
    const flood = Array.from({ length: 150 }, (_, index) => login(gateway.url, `made-up-${index}`, "guess-password-1"))
    await new Promise((resolve) => setTimeout(resolve, 20))
    const during = await chat()
    const answers = await Promise.all(flood)
    const busy = answers.filter((answer) => answer.status === 429)
    ok(busy.length > 0, "past the hash queue, logins are refused")
    for (const answer of busy) strictEqual(answer.retryAfter, "1")
    ok(answers.every((answer) => answer.status === 200 || answer.status === 429))
    // deno-lint-ignore no-console
    console.log(`chat idle ${idle.toFixed(0)} ms, during 150 logins ${during.toFixed(0)} ms; ${busy.length} refused`)
    ok(during < 1000, `a chat request took ${during.toFixed(0)} ms during the flood`)

    const anonymous = browser(gateway.url)
    const signups = []
    for (let index = 0; index < 5; index++) {
      signups.push(
        (await anonymous.call("POST", "/api/user/register", { username: `bulk${index}`, password: "bulk-password-1" }))
          .status
      )
    }
    deepStrictEqual(signups, [200, 200, 200, 429, 429])
  } finally {
    await gateway.close()
  }
})

Deno.test("hardening 10: a disabled account answers as a wrong password does, right password or not", async () => {
  const gateway = await startGateway({ config: basicConfig, store: "postgres" })
  try {
    const root = browser(gateway.url)
    await root.login("root", ROOT_PASSWORD)
    await browser(gateway.url).call("POST", "/api/user/register", { username: "dora", password: "dora-password-1" })
    const users = await root.call<{ items: Array<{ id: number; username: string }> }>("GET", "/api/user/?keyword=dora")
    const id = users.data.items[0].id
    const disabled = await root.call("PUT", "/api/user/", { id, status: "disabled" })
    strictEqual(disabled.success, true, disabled.message)
    const right = await login(gateway.url, "dora", "dora-password-1")
    const wrong = await login(gateway.url, "dora", "dora-password-2")
    deepStrictEqual([right.status, right.body.message], [200, "Invalid username or password."])
    deepStrictEqual([wrong.status, wrong.body.message], [200, "Invalid username or password."])
  } finally {
    await gateway.close()
  }
})
