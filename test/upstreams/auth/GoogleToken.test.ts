/**
 * Google OAuth tokens for service-account keys (`src/upstreams/auth/GoogleToken.ts`), under `TestClock`: the JWT
 * bearer assertion's claims (verified with the key's public half), the form sent to the key's `token_uri`, the cache
 * until five minutes before expiry and the refresh ahead of it with the old token served, one fetch shared by
 * concurrent calls, a failed refresh while the old token holds, and refusals as `unauthorized` with no secret in
 * the message.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { exportPKCS8, exportSPKI, generateKeyPair, importSPKI, jwtVerify } from "jose"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import {
  CLOUD_PLATFORM_SCOPE,
  JWT_BEARER_GRANT,
  makeGoogleTokens,
  type TokenResponse,
  type TokenSend
} from "../../../src/upstreams/auth/GoogleToken.ts"

const TOKEN_URI = "http://token.test/token"

const pair = await generateKeyPair("RS256", { extractable: true })
const privatePem = await exportPKCS8(pair.privateKey)
const publicKey = await importSPKI(await exportSPKI(pair.publicKey), "RS256")
const serviceAccount = JSON.stringify({
  type: "service_account",
  project_id: "sluice-test",
  private_key_id: "key-test-1",
  private_key: privatePem,
  client_email: "sluice-test@sluice-test.iam.gserviceaccount.com",
  token_uri: TOKEN_URI
})

/** A token endpoint double: what was sent, and the answers to give in turn (the last one repeats). */
const endpoint = (
  answers: ReadonlyArray<{ readonly status: number; readonly body: unknown }>,
  gate?: Deferred.Deferred<void>
) => {
  const sent: Array<{ url: string; headers: Record<string, string>; form: URLSearchParams }> = []
  const send: TokenSend = (_method, url, headers, body) =>
    Effect.gen(function* () {
      sent.push({ url, headers, form: new URLSearchParams(String(body)) })
      if (gate !== undefined) yield* Deferred.await(gate)
      const answer = answers[Math.min(sent.length - 1, answers.length - 1)]
      let bytes: Uint8Array | undefined = new TextEncoder().encode(JSON.stringify(answer.body))
      const response: TokenResponse = {
        status: answer.status,
        read: Effect.sync(() => {
          const chunk = bytes
          bytes = undefined
          return chunk
        }),
        abort: () => {}
      }
      return response
    })
  return { sent, send }
}

const issued = (token: string) => ({
  status: 200,
  body: { access_token: token, expires_in: 3600, token_type: "Bearer" }
})

/** A real pause (not the test clock's): the assertion is signed by WebCrypto, outside the fiber. */
const realPause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

/** Lets detached fibers (a background refresh) run until `done` holds, and their answer settle. */
const settle = (done: () => boolean) =>
  Effect.gen(function* () {
    for (let turn = 0; turn < 400 && !done(); turn++) yield* realPause
    assert(done(), "the background work did not finish")
    yield* realPause
  })

const run = <A, E>(body: Effect.Effect<A, E>) => Effect.runPromise(body.pipe(Effect.provide(TestClock.layer())))

Deno.test("GoogleToken: the assertion is an RS256 JWT for the key, POSTed form-encoded to its token_uri", () =>
  run(Effect.gen(function* () {
    yield* TestClock.setTime(1_800_000_000_000)
    const upstream = endpoint([issued("ya29.test-token-1")])
    const tokens = makeGoogleTokens(upstream.send)
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.test-token-1")
    assertEquals(upstream.sent.length, 1)
    const [call] = upstream.sent
    assertEquals(call.url, TOKEN_URI)
    assertEquals(call.headers["content-type"], "application/x-www-form-urlencoded")
    assertEquals(call.form.get("grant_type"), JWT_BEARER_GRANT)
    const verified = yield* Effect.promise(() =>
      jwtVerify(call.form.get("assertion")!, publicKey, { currentDate: new Date(1_800_000_000_000) })
    )
    assertEquals(verified.protectedHeader.alg, "RS256")
    assertEquals(verified.protectedHeader.kid, "key-test-1")
    assertEquals(verified.payload.iss, "sluice-test@sluice-test.iam.gserviceaccount.com")
    assertEquals(verified.payload.aud, TOKEN_URI)
    assertEquals(verified.payload.scope, CLOUD_PLATFORM_SCOPE)
    assertEquals(verified.payload.iat, 1_800_000_000)
    assertEquals(verified.payload.exp, 1_800_000_000 + 3600)
  })))

Deno.test("GoogleToken: cached until 55 minutes, then refreshed in the background while the old token is served", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([issued("ya29.first"), issued("ya29.second")])
    const tokens = makeGoogleTokens(upstream.send)
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.first")
    yield* TestClock.adjust("54 minutes")
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.first")
    assertEquals(upstream.sent.length, 1)
    yield* TestClock.adjust("1 minute")
    // Due: this call is not stalled, it gets the old token and starts the refresh.
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.first")
    yield* settle(() => upstream.sent.length === 2)
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.second")
    assertEquals(upstream.sent.length, 2)
  })))

Deno.test("GoogleToken: concurrent calls for one key share one token fetch", () =>
  run(Effect.gen(function* () {
    const gate = yield* Deferred.make<void>()
    const upstream = endpoint([issued("ya29.shared")], gate)
    const tokens = makeGoogleTokens(upstream.send)
    const fibers = yield* Effect.forEach(
      Array.from({ length: 5 }),
      () => Effect.forkChild(tokens.tokenFor(serviceAccount))
    )
    yield* settle(() => upstream.sent.length === 1)
    yield* Deferred.succeed(gate, undefined)
    const got = yield* Effect.forEach(fibers, Fiber.join)
    assertEquals(got, ["ya29.shared", "ya29.shared", "ya29.shared", "ya29.shared", "ya29.shared"])
    assertEquals(upstream.sent.length, 1)
  })))

Deno.test("GoogleToken: a failed refresh while the token holds serves the old token and is retried later", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([
      issued("ya29.old"),
      { status: 503, body: { error: "backend_error" } },
      issued("ya29.new")
    ])
    const tokens = makeGoogleTokens(upstream.send)
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.old")
    yield* TestClock.adjust("55 minutes")
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.old")
    yield* settle(() => upstream.sent.length === 2)
    // The refresh failed: the old token still holds and is served; no new try within the retry pause.
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.old")
    yield* TestClock.adjust("10 seconds")
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.old")
    assertEquals(upstream.sent.length, 2)
    yield* TestClock.adjust("30 seconds")
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.old")
    yield* settle(() => upstream.sent.length === 3)
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.new")
  })))

Deno.test("GoogleToken: past its expiry the token is not served; the call waits for a new one", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([issued("ya29.one"), { status: 503, body: {} }, issued("ya29.two")])
    const tokens = makeGoogleTokens(upstream.send)
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.one")
    yield* TestClock.adjust("60 minutes")
    const failed = yield* Effect.flip(tokens.tokenFor(serviceAccount))
    assertEquals(failed.kind, "server")
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.two")
  })))

Deno.test("GoogleToken: a refused key is unauthorized, and the message names neither key nor assertion", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([{
      status: 400,
      body: { error: "invalid_grant", error_description: "Invalid JWT Signature." }
    }])
    const tokens = makeGoogleTokens(upstream.send)
    const failed = yield* Effect.flip(tokens.tokenFor(serviceAccount))
    assert(failed instanceof UpstreamFailed)
    assertEquals(failed.kind, "unauthorized")
    assert(failed.message.includes("invalid_grant"))
    assert(!failed.message.includes("PRIVATE KEY") && !failed.message.includes(upstream.sent[0].form.get("assertion")!))
    const unknown = endpoint([{ status: 401, body: { error: "invalid_client" } }])
    const refused = yield* Effect.flip(makeGoogleTokens(unknown.send).tokenFor(serviceAccount))
    assertEquals(refused.kind, "unauthorized")
  })))

Deno.test("GoogleToken: a key that is not a service-account key JSON is unauthorized without a fetch", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([issued("ya29.never")])
    const tokens = makeGoogleTokens(upstream.send)
    const missing = yield* Effect.flip(
      tokens.tokenFor(JSON.stringify({ type: "service_account", client_email: "a@b" }))
    )
    assertEquals(missing.kind, "unauthorized")
    const badPem = JSON.stringify({ client_email: "a@b", private_key: "not a pem", token_uri: TOKEN_URI })
    const unsigned = yield* Effect.flip(tokens.tokenFor(badPem))
    assertEquals(unsigned.kind, "unauthorized")
    assert(!unsigned.message.includes("not a pem"))
    assertEquals(upstream.sent.length, 0)
  })))

Deno.test("GoogleToken: an answer without a usable token is bad-body and the next call fetches again", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([{ status: 200, body: { access_token: "a\r\nb", expires_in: 3600 } }, issued("ya29.ok")])
    const tokens = makeGoogleTokens(upstream.send)
    assertEquals((yield* Effect.flip(tokens.tokenFor(serviceAccount))).kind, "bad-body")
    assertEquals(yield* tokens.tokenFor(serviceAccount), "ya29.ok")
    assertEquals(tokens.size(), 1)
  })))

Deno.test("GoogleToken: a key no longer used is dropped once its token expired, when another key comes", () =>
  run(Effect.gen(function* () {
    const upstream = endpoint([issued("ya29.any")])
    const tokens = makeGoogleTokens(upstream.send)
    const other = JSON.stringify({
      ...JSON.parse(serviceAccount),
      client_email: "other@sluice-test.iam.gserviceaccount.com"
    })
    yield* tokens.tokenFor(serviceAccount)
    yield* TestClock.adjust("30 minutes")
    yield* tokens.tokenFor(other)
    assertEquals(tokens.size(), 2, "both tokens still hold")
    yield* TestClock.adjust("61 minutes")
    const third = JSON.stringify({
      ...JSON.parse(serviceAccount),
      client_email: "third@sluice-test.iam.gserviceaccount.com"
    })
    yield* tokens.tokenFor(third)
    assertEquals(tokens.size(), 1, "the two expired keys' entries are gone")
  })))
