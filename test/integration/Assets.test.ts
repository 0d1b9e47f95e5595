/**
 * The asset routes over raw HTTP against a running gateway: create → `{Result:
 * {Id}}` of the spec's shape, the background check moving the asset to
 * `Active` (image, video by its head only, octet-stream sniffed) or `Failed`
 * with a reason (web page, 404, time-out, redirects to blocked addresses),
 * lookup by the owner only (user B gets A's asset as an unknown id: no IDOR),
 * hostile URLs and bodies refused with a 400 naming the field, and the
 * gateway envelope on every failure.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, startGateway, type TestGateway } from "../support/Gateway.ts"
import { MP4, startMediaServer } from "../support/MediaServer.ts"

const ALICE = "sk-test-alice-0001"
const BOB = "sk-test-bob-0001"
const TIMEOUT_MS = 600

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    users: [
      { username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: ALICE }] },
      { username: "bob", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: BOB }] }
    ],
    settings: { media_allow_hosts: ["127.0.0.1"], media_timeout_ms: TIMEOUT_MS }
  } as never)

type Json = Record<string, unknown>

const post = async (gateway: TestGateway, key: string | undefined, body: unknown, raw = false) => {
  const response = await fetch(`${gateway.url}/api/asset/create`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
    body: raw ? String(body) : JSON.stringify(body)
  })
  return { status: response.status, body: await response.json() as Json }
}

const lookup = async (gateway: TestGateway, key: string | undefined, query: string) => {
  const response = await fetch(`${gateway.url}/api/asset/get${query}`, {
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` }
  })
  return { status: response.status, body: await response.json() as Json }
}

/** Creates an asset for `key` and returns its id. */
const create = async (gateway: TestGateway, key: string, url: string, name?: string): Promise<string> => {
  const { status, body } = await post(gateway, key, name === undefined ? { url } : { url, name })
  strictEqual(status, 200, JSON.stringify(body))
  deepStrictEqual(Object.keys(body), ["Result"])
  const result = body.Result as Json
  deepStrictEqual(Object.keys(result), ["Id"])
  ok(/^asset-\d{13}-[a-z0-9]{16}$/.test(String(result.Id)), String(result.Id))
  return String(result.Id)
}

/** Looks the asset up until its check is done (bounded: 40 × 100 ms). */
const settled = async (gateway: TestGateway, key: string, id: string): Promise<Json> => {
  for (let attempt = 0; attempt < 40; attempt++) {
    const { status, body } = await lookup(gateway, key, `?id=${id}`)
    strictEqual(status, 200, JSON.stringify(body))
    const result = body.Result as Json
    if (result.Status !== "Processing") return result
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`asset ${id} still Processing`)
}

/** A gateway-envelope error: status, code and param. */
const assertError = (
  answer: { status: number; body: Json },
  status: number,
  code: string,
  param: string
) => {
  strictEqual(answer.status, status, JSON.stringify(answer.body))
  const error = answer.body.error as Json
  ok(error !== undefined, JSON.stringify(answer.body))
  strictEqual(error.code, code)
  strictEqual(error.param, param)
  ok(String(error.message).length < 400)
}

Deno.test("assets: create, check and look up through the SSRF guard; owner only; hostile input refused", async (t) => {
  const media = startMediaServer()
  const gateway = await startGateway({ config })
  try {
    await t.step("an image becomes Active with its type; the record has the spec's Result shape", async () => {
      const id = await create(gateway, ALICE, `${media.base}/pixel.png`, "pixel")
      const result = await settled(gateway, ALICE, id)
      deepStrictEqual(result, {
        Id: id,
        Name: "pixel",
        Url: `${media.base}/pixel.png`,
        Status: "Active",
        ContentType: "image/png",
        Size: 70,
        CreatedAt: result.CreatedAt
      })
      ok(Math.abs(Number(result.CreatedAt) - Date.now() / 1000) < 60)
    })

    await t.step("a video is checked by its head only (Range), and its whole size recorded", async () => {
      const id = await create(gateway, ALICE, `${media.base}/clip.mp4`)
      const result = await settled(gateway, ALICE, id)
      strictEqual(result.Status, "Active")
      strictEqual(result.ContentType, "video/mp4")
      strictEqual(result.Size, MP4.length)
      deepStrictEqual(media.ranges.get("/clip.mp4"), ["bytes=0-65535"])
      // A server that ignores the range is cut after the head, not refused.
      const whole = await settled(gateway, ALICE, await create(gateway, ALICE, `${media.base}/whole.mp4`))
      strictEqual(whole.Status, "Active")
    })

    await t.step("octet-stream bytes are sniffed", async () => {
      const result = await settled(gateway, ALICE, await create(gateway, ALICE, `${media.base}/octet`))
      strictEqual(result.Status, "Active")
      strictEqual(result.ContentType, "image/png")
    })

    await t.step("unusable URLs make a Failed asset with a reason", async () => {
      const cases: ReadonlyArray<readonly [string, RegExp]> = [
        // A few words, never the connection-level error: the check is no port-scan oracle.
        ["/page.html", /^not an image, video or audio file$/],
        ["/missing.png", /^unreachable$/],
        ["/slow.mp4", /^unreachable$/],
        ["/to-meta", /^unreachable$/],
        ["/to-localhost", /^unreachable$/]
      ]
      for (const [path, reason] of cases) {
        const result = await settled(gateway, ALICE, await create(gateway, ALICE, `${media.base}${path}`))
        strictEqual(result.Status, "Failed", path)
        ok(reason.test(String(result.Reason)), `${path}: ${result.Reason}`)
        strictEqual(result.ContentType, undefined)
      }
    })

    await t.step("IDOR: user B gets A's asset as an unknown id (404, same body as a made-up id)", async () => {
      const id = await create(gateway, ALICE, `${media.base}/pixel.png`)
      await settled(gateway, ALICE, id)
      const foreign = await lookup(gateway, BOB, `?id=${id}`)
      assertError(foreign, 404, "not_found", "id")
      const madeUp = `asset-${"1".repeat(13)}-${"a".repeat(16)}`
      const unknown = await lookup(gateway, BOB, `?id=${madeUp}`)
      assertError(unknown, 404, "not_found", "id")
      strictEqual(
        String((foreign.body.error as Json).message).replace(id, "ID"),
        String((unknown.body.error as Json).message).replace(madeUp, "ID")
      )
      ok(!JSON.stringify(foreign.body).includes(media.base), "nothing of A's asset leaks")
      // A's own lookup still works.
      strictEqual((await settled(gateway, ALICE, id)).Status, "Active")
    })

    await t.step("hostile URLs are refused at once with a 400 naming url", async () => {
      const hostile = [
        "http://media.example.com/a.png",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.7/a.mp4",
        "https://[::1]/a.mp4",
        "https://[::ffff:127.0.0.1]/a.png",
        "https://user:secret@media.example.com/a.png",
        "file:///etc/passwd",
        "data:image/png;base64,iVBORw0KGgo=",
        "asset://asset-1764000000000-abcdefghij012345",
        "ftp://media.example.com/a.mp4",
        "https://media.example.com/a\u0000.png",
        "https://media.example.com/\uD800.png",
        `https://media.example.com/${"a".repeat(5000)}.png`,
        "not a url",
        ""
      ]
      for (const url of hostile) {
        assertError(await post(gateway, ALICE, { url }), 400, "invalid_request", "url")
      }
      for (const body of [{}, { url: 42 }, { url: ["https://media.example.com/a.png"] }, { url: null }]) {
        assertError(await post(gateway, ALICE, body), 400, "invalid_request", "url")
      }
      assertError(
        await post(gateway, ALICE, { url: `${media.base}/pixel.png`, name: "n".repeat(300) }),
        400,
        "invalid_request",
        "name"
      )
      assertError(
        await post(gateway, ALICE, { url: `${media.base}/pixel.png`, name: "a\u0000b" }),
        400,
        "invalid_request",
        "name"
      )
    })

    await t.step("bad bodies, keys and ids: the gateway envelope with its status", async () => {
      assertError(await post(gateway, ALICE, "{not json", true), 400, "invalid_request", "")
      assertError(await post(gateway, ALICE, "[1, 2]", true), 400, "invalid_request", "")
      assertError(
        await post(gateway, ALICE, JSON.stringify({ url: "x".repeat(70_000) }), true),
        413,
        "request_too_large",
        ""
      )
      assertError(await post(gateway, undefined, { url: `${media.base}/pixel.png` }), 401, "invalid_api_key", "")
      assertError(
        await post(gateway, "sk-test-nobody-0001", { url: `${media.base}/pixel.png` }),
        401,
        "invalid_api_key",
        ""
      )
      assertError(await lookup(gateway, undefined, "?id=asset-1"), 401, "invalid_api_key", "")
      assertError(await lookup(gateway, ALICE, ""), 400, "invalid_request", "id")
      assertError(await lookup(gateway, ALICE, "?id="), 400, "invalid_request", "id")
      assertError(
        await lookup(gateway, ALICE, "?id=asset://asset-1764000000000-abcdefghij012345"),
        400,
        "invalid_request",
        "id"
      )
      assertError(await lookup(gateway, ALICE, "?id=%00%27%3B--"), 400, "invalid_request", "id")
      assertError(await lookup(gateway, ALICE, "?id=a&id=b"), 400, "invalid_request", "id")
    })
  } finally {
    await gateway.close()
    await media.close()
  }
})
