/**
 * OpenAI's Files API through the official `openai` SDK against a gateway on the embedded store: `files.create`
 * (with `toFile`, a `Blob`, and a 10 MiB `toStreamingFile` sent without a length), `files.retrieve`,
 * `files.content` (every byte value back exactly), `files.list` (pages, order, the purpose filter), `files.delete`;
 * another user's and malformed ids answer the 404 of an unknown one; bad forms are refused with `param` naming the
 * field (`purpose`, `file`, `expires_after[seconds]`); uploads past the per-file limit (by their length, or cut while
 * they stream) and past the user's total are refused and leave nothing listed; hostile file names are kept safely
 * or refused.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI, { toFile, toStreamingFile } from "openai"
import { basicConfig, startGateway, type TestGateway } from "../support/Gateway.ts"

const ALICE = "sk-test-alice-0001"
const BOB = "sk-test-bob-0001"
const CAROL = "sk-test-carol-0001"
const MIB = 1024 * 1024
const MAX_FILE = 12 * MIB
const MAX_USER = 24 * MIB

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, {
    users: [
      { username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: ALICE }] },
      { username: "bob", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: BOB }] },
      { username: "carol", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: CAROL }] }
    ],
    settings: { file_max_bytes: MAX_FILE, file_storage_per_user_bytes: MAX_USER }
  } as never)

const clientOf = (gateway: TestGateway, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

/** Every byte value, then invalid UTF-8 (a lone continuation byte, an overlong NUL, a cut sequence). */
const HOSTILE_BYTES = new Uint8Array([...Array.from({ length: 256 }, (_, i) => i), 0x80, 0xc0, 0x80, 0xe2, 0x82])

/** `size` pseudo-random bytes, the same for the same `seed`. */
const bytesOf = (size: number, seed: number): Uint8Array => {
  const bytes = new Uint8Array(size)
  let state = seed >>> 0
  for (let i = 0; i < size; i++) {
    state = (state * 1664525 + 1013904223) >>> 0
    bytes[i] = state >>> 24
  }
  return bytes
}

/** `bytes` as an async iterable of 256 KiB pieces (what `toStreamingFile` reads without buffering). */
async function* piecesOf(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += 256 * 1024) yield bytes.slice(offset, offset + 256 * 1024)
}

const contentOf = async (client: OpenAI, id: string): Promise<Uint8Array> =>
  new Uint8Array(await (await client.files.content(id)).arrayBuffer())

/** A gateway-envelope error the SDK threw: its status and `error.param`/`error.code`. */
const assertApiError = async (
  promise: Promise<unknown>,
  status: number,
  param: string,
  code?: string
): Promise<void> => {
  await rejects(promise, (error: unknown) => {
    ok(error instanceof OpenAI.APIError, String(error))
    strictEqual(error.status, status, JSON.stringify(error.error))
    const body = error.error as Record<string, unknown>
    strictEqual(body.param, param, JSON.stringify(body))
    if (code !== undefined) strictEqual(body.code, code, JSON.stringify(body))
    ok(typeof body.message === "string" && body.message.length < 500, JSON.stringify(body))
    ok(!JSON.stringify(body).includes("sk-test"), JSON.stringify(body))
    return true
  })
}

/** Raw multipart `parts` (already encoded) posted with `key`. */
const postRaw = async (gateway: TestGateway, key: string, parts: ReadonlyArray<Uint8Array | string>) => {
  const boundary = "sluice-test-boundary-7d1f"
  const encoder = new TextEncoder()
  const chunks: Array<Uint8Array> = []
  for (const part of parts) {
    chunks.push(encoder.encode(`--${boundary}\r\n`), typeof part === "string" ? encoder.encode(part) : part)
    chunks.push(encoder.encode("\r\n"))
  }
  chunks.push(encoder.encode(`--${boundary}--\r\n`))
  const response = await fetch(`${gateway.url}/v1/files`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
    body: new Blob(chunks as Array<BlobPart>)
  })
  return { status: response.status, body: await response.json() as Record<string, Record<string, unknown>> }
}

Deno.test("files: create, retrieve, content, list, delete through the openai SDK", async (t) => {
  // A one-second body deadline: for an upload, the longest pause between two pieces.
  const gateway = await startGateway({ config, bodyTimeoutSeconds: 1 })
  try {
    const alice = clientOf(gateway, ALICE)
    const bob = clientOf(gateway, BOB)

    await t.step("create with toFile and with a Blob; content round-trips every byte", async () => {
      const created = await alice.files.create({ file: await toFile(HOSTILE_BYTES, "bytes.bin"), purpose: "user_data" })
      ok(/^file-[0-9a-z]{24}$/.test(created.id), created.id)
      deepStrictEqual(
        { ...created, id: "", created_at: 0 },
        {
          id: "",
          object: "file",
          bytes: HOSTILE_BYTES.byteLength,
          created_at: 0,
          expires_at: null,
          filename: "bytes.bin",
          purpose: "user_data",
          status: "processed"
        }
      )
      ok(Math.abs(created.created_at - Date.now() / 1000) < 60)
      deepStrictEqual(await alice.files.retrieve(created.id), created)
      deepStrictEqual(await contentOf(alice, created.id), HOSTILE_BYTES)

      const jsonl = '{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n'
      const blob = new File([jsonl], "input.jsonl", { type: "application/json" })
      const batch = await alice.files.create({ file: blob, purpose: "batch" })
      strictEqual(batch.filename, "input.jsonl")
      strictEqual(batch.bytes, new TextEncoder().encode(jsonl).byteLength)
      // OpenAI's default for batch files: 30 days.
      strictEqual(batch.expires_at, batch.created_at + 30 * 86_400)
      strictEqual(new TextDecoder().decode(await contentOf(alice, batch.id)), jsonl)

      const response = await fetch(`${gateway.url}/v1/files/${batch.id}/content`, {
        headers: { authorization: `Bearer ${ALICE}` }
      })
      strictEqual(response.headers.get("content-type"), "application/octet-stream")
      strictEqual(response.headers.get("content-length"), String(batch.bytes))
      strictEqual(response.headers.get("x-content-type-options"), "nosniff")
      strictEqual(response.headers.get("content-security-policy"), "default-src 'none'; sandbox")
      strictEqual(await response.text(), jsonl)
    })

    await t.step("a 10 MiB file streamed in without a length, and back", async () => {
      const bytes = bytesOf(10 * MIB + 12_345, 7)
      const created = await alice.files.create({
        file: toStreamingFile(piecesOf(bytes), "large.bin"),
        purpose: "assistants"
      })
      strictEqual(created.bytes, bytes.byteLength)
      const back = await contentOf(alice, created.id)
      strictEqual(back.byteLength, bytes.byteLength)
      deepStrictEqual(back, bytes)
      await alice.files.delete(created.id)
    })

    await t.step("expires_after as the SDK sends it", async () => {
      const created = await alice.files.create({
        file: await toFile(new Uint8Array([1, 2, 3]), "short.bin"),
        purpose: "user_data",
        expires_after: { anchor: "created_at", seconds: 3600 }
      })
      strictEqual(created.expires_at, created.created_at + 3600)
      await assertApiError(
        alice.files.create({
          file: await toFile(new Uint8Array([1]), "x.bin"),
          purpose: "user_data",
          expires_after: { anchor: "created_at", seconds: 60 }
        }),
        400,
        "expires_after[seconds]"
      )
      await assertApiError(
        alice.files.create({
          file: await toFile(new Uint8Array([1]), "x.bin"),
          purpose: "user_data",
          expires_after: { anchor: "last_active_at" as "created_at", seconds: 3600 }
        }),
        400,
        "expires_after[anchor]"
      )
      await alice.files.delete(created.id)
    })

    await t.step("list: newest first, pages by after, order asc, purpose filter", async () => {
      const before = await alice.files.list()
      const existing = before.data.map((file) => file.id)
      const made: Array<string> = []
      for (const [index, purpose] of (["batch", "vision", "batch", "evals", "batch"] as const).entries()) {
        const file = await alice.files.create({ file: await toFile(new Uint8Array([index]), `f${index}.bin`), purpose })
        made.push(file.id)
      }
      const newestFirst = [...made].reverse()

      const all = await alice.files.list()
      deepStrictEqual(all.data.map((file) => file.id), [...newestFirst, ...existing])
      strictEqual(all.has_more, false)

      const firstPage = await alice.files.list({ limit: 2 })
      deepStrictEqual(firstPage.data.map((file) => file.id), newestFirst.slice(0, 2))
      strictEqual(firstPage.has_more, true)
      const body = await (await fetch(`${gateway.url}/v1/files?limit=2`, {
        headers: { authorization: `Bearer ${ALICE}` }
      })).json()
      deepStrictEqual(Object.keys(body).sort(), ["data", "first_id", "has_more", "last_id", "object"])
      strictEqual(body.object, "list")
      strictEqual(body.first_id, newestFirst[0])
      strictEqual(body.last_id, newestFirst[1])

      // The SDK's auto-pagination walks every page by `after`.
      const walked: Array<string> = []
      for await (const file of alice.files.list({ limit: 2 })) walked.push(file.id)
      deepStrictEqual(walked, [...newestFirst, ...existing])

      const ascending = await alice.files.list({ order: "asc", limit: 3, after: existing.at(-1) ?? made[0] })
      ok(ascending.data.every((file, index, data) => index === 0 || data[index - 1].id < file.id))

      const batches = await alice.files.list({ purpose: "batch" })
      ok(batches.data.every((file) => file.purpose === "batch"))
      deepStrictEqual(
        batches.data.map((file) => file.id).filter((id) => made.includes(id)),
        [newestFirst[0], newestFirst[2], newestFirst[4]]
      )

      // Deleting while paging: the cursor is the id, so a deleted cursor still pages on.
      const page = await alice.files.list({ limit: 2 })
      for (const file of page.data) await alice.files.delete(file.id)
      const next = await alice.files.list({ limit: 2, after: page.data[1].id })
      deepStrictEqual(next.data.map((file) => file.id), newestFirst.slice(2, 4))

      deepStrictEqual((await alice.files.list({ purpose: "fine-tune\u0000\uD800" })).data, [])
      await assertApiError(alice.files.list({ limit: 0 }), 400, "limit")
      await assertApiError(alice.files.list({ limit: 10_001 }), 400, "limit")
      await assertApiError(alice.files.list({ after: "not-a-file" }), 400, "after")
      await assertApiError(alice.files.list({ order: "up" as "asc" }), 400, "order")
      for (const id of made.slice(0, 3)) await alice.files.delete(id)
    })

    await t.step("delete, then every read is a 404", async () => {
      const created = await alice.files.create({
        file: await toFile(new Uint8Array([9]), "gone.bin"),
        purpose: "evals"
      })
      deepStrictEqual(await alice.files.delete(created.id), { id: created.id, object: "file", deleted: true })
      await rejects(alice.files.retrieve(created.id), OpenAI.NotFoundError)
      await rejects(alice.files.content(created.id), OpenAI.NotFoundError)
      await rejects(alice.files.delete(created.id), OpenAI.NotFoundError)
      ok(!(await alice.files.list()).data.some((file) => file.id === created.id))
    })

    await t.step("another user's file and malformed ids answer the 404 of an unknown file", async () => {
      const created = await alice.files.create({
        file: await toFile(new Uint8Array([5]), "mine.bin"),
        purpose: "vision"
      })
      const unknown = "file-" + "0".repeat(24)
      const answers: Array<unknown> = []
      for (const id of [created.id, unknown, "file-abc", "..%2F..%2Fetc", "file-\u0000'", "file-" + "x".repeat(90)]) {
        for (const call of [() => bob.files.retrieve(id), () => bob.files.content(id), () => bob.files.delete(id)]) {
          await rejects(call(), (error: unknown) => {
            ok(error instanceof OpenAI.NotFoundError, String(error))
            const body = error.error as Record<string, string>
            answers.push({ type: body.type, code: body.code, param: body.param })
            ok(body.message.startsWith("No such File object: "), body.message)
            ok(body.message.length < 120, body.message)
            return true
          })
        }
      }
      ok(answers.every((answer) => JSON.stringify(answer) === JSON.stringify(answers[0])))
      // Past the router's longest path parameter (100 characters): the 404 of an unknown route.
      await rejects(bob.files.retrieve("file-" + "x".repeat(10_000)), OpenAI.NotFoundError)
      deepStrictEqual(answers[0], { type: "invalid_request_error", code: "not_found", param: "file_id" })
      strictEqual((await bob.files.list()).data.length, 0)
      // Alice's file is untouched by Bob's delete.
      deepStrictEqual(await contentOf(alice, created.id), new Uint8Array([5]))
      await alice.files.delete(created.id)
    })

    await t.step("bad forms: purpose, missing file, a text field for the file, no key, not multipart", async () => {
      const listed = (await alice.files.list()).data.length
      await assertApiError(
        alice.files.create({ file: await toFile(new Uint8Array([1]), "a.bin"), purpose: "fine-tune" }),
        400,
        "purpose"
      )
      await assertApiError(
        alice.files.create({ file: await toFile(new Uint8Array([1]), "a.bin"), purpose: "nope" as "batch" }),
        400,
        "purpose"
      )
      await assertApiError(
        alice.files.create({ file: await toFile(new Uint8Array([1]), "a.bin") } as never),
        400,
        "purpose"
      )
      await assertApiError(alice.files.create({ purpose: "batch" } as never), 400, "file")
      await assertApiError(alice.files.create({ file: "just text", purpose: "batch" } as never), 400, "file")
      const noKey = await fetch(`${gateway.url}/v1/files`, { method: "POST", body: new FormData() })
      strictEqual(noKey.status, 401)
      strictEqual((await noKey.json()).error.code, "invalid_api_key")
      const json = await fetch(`${gateway.url}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
        body: "{}"
      })
      strictEqual(json.status, 400)
      await json.body?.cancel()
      // `purpose` before the file (as curl's `-F` order may send it): checked before the file is read.
      const fileFirstPart = 'Content-Disposition: form-data; name="file"; filename="a.jsonl"\r\n\r\n{}'
      const early = await postRaw(gateway, ALICE, [
        'Content-Disposition: form-data; name="purpose"\r\n\r\nfine-tune',
        fileFirstPart
      ])
      strictEqual(early.status, 400)
      strictEqual(early.body.error.param, "purpose")
      const ordered = await postRaw(gateway, ALICE, [
        'Content-Disposition: form-data; name="purpose"\r\n\r\nbatch',
        fileFirstPart
      ])
      strictEqual(ordered.status, 200, JSON.stringify(ordered.body))
      await alice.files.delete((ordered.body as unknown as { id: string }).id)
      const broken = await postRaw(gateway, ALICE, ['Content-Disposition: form-data; name="purpose"\r\n\r\nbatch'])
      strictEqual(broken.status, 400)
      strictEqual(broken.body.error.param, "file")
      // None of the refused uploads is listed.
      strictEqual((await alice.files.list()).data.length, listed)
    })

    await t.step("past the per-file limit: by its length, or cut while streaming; nothing kept", async () => {
      const listed = (await alice.files.list()).data.length
      await assertApiError(
        alice.files.create({ file: await toFile(bytesOf(MAX_FILE + MIB, 1), "big.bin"), purpose: "batch" }),
        413,
        "file",
        "request_too_large"
      )
      await assertApiError(
        alice.files.create({ file: toStreamingFile(piecesOf(bytesOf(MAX_FILE + 1, 2)), "big.bin"), purpose: "batch" }),
        413,
        "file",
        "request_too_large"
      )
      strictEqual((await alice.files.list()).data.length, listed)
    })

    await t.step("an upload that pauses past the body deadline: 408, nothing kept", async () => {
      const listed = (await alice.files.list()).data.length
      const boundary = "sluice-pause-boundary"
      const encoder = new TextEncoder()
      let pulls = 0
      const body = new ReadableStream<Uint8Array>({
        start(stream) {
          stream.enqueue(encoder.encode(
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n`
          ))
        },
        async pull(stream) {
          pulls += 1
          if (pulls <= 12) {
            stream.enqueue(bytesOf(128 * 1024, pulls))
            return
          }
          // Silent until the answer came, then the body ends (the server keeps a connection whose body never ends).
          while (!answered) await new Promise((resolve) => setTimeout(resolve, 50))
          stream.close()
        }
      })
      let answered = false
      const response = await fetch(`${gateway.url}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${ALICE}`, "content-type": `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: "half"
      } as RequestInit)
      answered = true
      strictEqual(response.status, 408)
      strictEqual((await response.json()).error.code, "request_timeout")
      strictEqual((await alice.files.list()).data.length, listed)
    })

    await t.step("past the user's total: refused with param file; other users unaffected", async () => {
      const carol = clientOf(gateway, CAROL)
      const ten = bytesOf(10 * MIB, 3)
      await carol.files.create({ file: await toFile(ten, "a.bin"), purpose: "batch" })
      await carol.files.create({ file: await toFile(ten, "b.bin"), purpose: "batch" })
      await assertApiError(
        carol.files.create({ file: await toFile(ten, "c.bin"), purpose: "batch" }),
        400,
        "file",
        "file_storage_limit_exceeded"
      )
      strictEqual((await carol.files.list()).data.length, 2)
      // Deleting one frees its room.
      await carol.files.delete((await carol.files.list()).data[0].id)
      await carol.files.create({ file: await toFile(ten, "c.bin"), purpose: "batch" })
    })

    await t.step("hostile file names: lone surrogates and NUL kept as U+FFFD, raw NUL and 10 KB refused", async () => {
      const named = await alice.files.create({
        file: await toFile(new Uint8Array([1]), "a\uD800b\uDC00.jsonl"),
        purpose: "user_data"
      })
      strictEqual(named.filename, "a\uFFFDb\uFFFD.jsonl")
      deepStrictEqual(await alice.files.retrieve(named.id), named)
      const header = (await fetch(`${gateway.url}/v1/files/${named.id}/content`, {
        headers: { authorization: `Bearer ${ALICE}` }
      })).headers.get("content-disposition")
      strictEqual(header, `attachment; filename*=UTF-8''${encodeURIComponent(named.filename)}`)
      await assertApiError(
        alice.files.create({ file: await toFile(new Uint8Array([1]), "n".repeat(10_000)), purpose: "user_data" }),
        400,
        "file"
      )
      // A raw NUL byte in the part header is no valid header: a clear 400, nothing kept.
      const listed = (await alice.files.list()).data.length
      await assertApiError(
        alice.files.create({ file: await toFile(new Uint8Array([1]), "a\u0000b.bin"), purpose: "user_data" }),
        400,
        ""
      )
      strictEqual((await alice.files.list()).data.length, listed)
      // A NUL reached through RFC 8187's `filename*` (percent-encoded) is kept as U+FFFD.
      const raw = await postRaw(gateway, ALICE, [
        "Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''x%00y%E2%82%AC.bin\r\n" +
        "Content-Type: application/octet-stream\r\n\r\nhello",
        'Content-Disposition: form-data; name="purpose"\r\n\r\nuser_data'
      ])
      strictEqual(raw.status, 200, JSON.stringify(raw.body))
      const rawFile = raw.body as unknown as { id: string; filename: string; bytes: number }
      strictEqual(rawFile.filename, "x\uFFFDy\u20AC.bin")
      strictEqual(rawFile.bytes, 5)
      strictEqual(new TextDecoder().decode(await contentOf(alice, rawFile.id)), "hello")
    })
  } finally {
    await gateway.close()
  }
})
