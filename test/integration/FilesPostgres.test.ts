/**
 * OpenAI's Files API on PostgreSQL with two gateway instances on one database, through the `openai` SDK: a file
 * uploaded to one instance is listed, read and deleted through the other; its bytes sit in `file_chunks` rows of 1 MiB;
 * an upload cut past the per-file limit leaves no row and no chunk; an expired file answers 404 at once and the
 * background sweep (every second here) removes its rows and chunks.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI, { toFile, toStreamingFile } from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const MIB = 1024 * 1024
const ALICE = "sk-test-alice-0001"

const config = (emulatorUrl: string) =>
  basicConfig(emulatorUrl, { settings: { file_max_bytes: 4 * MIB, file_sweep_interval_seconds: 1 } } as never)

const bytesOf = (size: number): Uint8Array => {
  const bytes = new Uint8Array(size)
  for (let offset = 0; offset < size; offset += 65_536) {
    crypto.getRandomValues(bytes.subarray(offset, Math.min(size, offset + 65_536)))
  }
  return bytes
}

async function* piecesOf(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += 100_000) yield bytes.slice(offset, offset + 100_000)
}

Deno.test("files on PostgreSQL: two instances, 1 MiB chunks, nothing left of a refused upload, expiry sweep", async () => {
  const first = await startGateway({ config, store: "postgres" })
  const second = await startGateway({ config, databaseUrl: first.databaseUrl, emulator: first.emulator })
  try {
    const a = new OpenAI({ apiKey: ALICE, baseURL: `${first.url}/v1`, maxRetries: 0 })
    const b = new OpenAI({ apiKey: ALICE, baseURL: `${second.url}/v1`, maxRetries: 0 })
    const counts = async () => {
      const [row] = await first.query<{ files: string; chunks: string }>(
        "SELECT (SELECT count(*) FROM files) AS files, (SELECT count(*) FROM file_chunks) AS chunks",
        false
      )
      return { files: Number(row.files), chunks: Number(row.chunks) }
    }

    // Uploaded to one instance, served by the other; stored as 1 MiB chunks.
    const bytes = bytesOf(3.5 * MIB)
    const created = await a.files.create({ file: toStreamingFile(piecesOf(bytes), "data.bin"), purpose: "user_data" })
    strictEqual(created.bytes, bytes.byteLength)
    const sizes = await first.query<{ size: number }>(
      `SELECT length(data) AS size FROM file_chunks WHERE file_id = '${created.id}' ORDER BY seq`,
      false
    )
    deepStrictEqual(sizes.map((row) => Number(row.size)), [MIB, MIB, MIB, MIB / 2])
    deepStrictEqual((await b.files.list()).data.map((file) => file.id), [created.id])
    deepStrictEqual(await b.files.retrieve(created.id), created)
    deepStrictEqual(new Uint8Array(await (await b.files.content(created.id)).arrayBuffer()), bytes)
    await b.files.delete(created.id)
    await rejects(a.files.retrieve(created.id), OpenAI.NotFoundError)
    deepStrictEqual(await counts(), { files: 0, chunks: 0 })

    // Cut past the per-file limit while streaming: no row, no chunk.
    await rejects(
      a.files.create({ file: toStreamingFile(piecesOf(bytesOf(4 * MIB + 1)), "big.bin"), purpose: "batch" }),
      (error: unknown) => error instanceof OpenAI.APIError && error.status === 413
    )
    deepStrictEqual(await counts(), { files: 0, chunks: 0 })

    // A caller that leaves mid-upload: what was written is removed.
    const boundary = "sluice-abort-boundary"
    const encoder = new TextEncoder()
    const controller = new AbortController()
    let sent = 0
    let during = { files: 0, chunks: 0 }
    const body = new ReadableStream<Uint8Array>({
      start(stream) {
        stream.enqueue(encoder.encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n` +
            "Content-Type: application/octet-stream\r\n\r\n"
        ))
      },
      async pull(stream) {
        if (sent >= 2.5 * MIB) {
          // Once the first chunks are written, the caller goes away.
          for (let tries = 0; tries < 50 && (during = await counts()).chunks < 2; tries++) {
            await new Promise((resolve) => setTimeout(resolve, 50))
          }
          controller.abort()
          return
        }
        stream.enqueue(bytesOf(256 * 1024))
        sent += 256 * 1024
      }
    })
    await rejects(fetch(`${first.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALICE}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
      signal: controller.signal,
      duplex: "half"
    } as RequestInit))
    strictEqual(during.files, 1)
    ok(during.chunks >= 2, JSON.stringify(during))
    let afterAbort = await counts()
    for (let tries = 0; tries < 50 && afterAbort.files > 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      afterAbort = await counts()
    }
    deepStrictEqual(afterAbort, { files: 0, chunks: 0 })

    // An expired file: 404 at once on both instances, then swept with its chunks.
    const expiring = await a.files.create({
      file: await toFile(bytesOf(MIB + 10), "expiring.bin"),
      purpose: "batch",
      expires_after: { anchor: "created_at", seconds: 3600 }
    })
    strictEqual(expiring.expires_at, expiring.created_at + 3600)
    const kept = await a.files.create({ file: await toFile(new Uint8Array([1]), "kept.bin"), purpose: "user_data" })
    await first.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = '${expiring.id}'`, false)
    await rejects(a.files.retrieve(expiring.id), OpenAI.NotFoundError)
    await rejects(b.files.content(expiring.id), OpenAI.NotFoundError)
    deepStrictEqual((await b.files.list()).data.map((file) => file.id), [kept.id])
    let left = await counts()
    for (let tries = 0; tries < 50 && left.files > 1; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      left = await counts()
    }
    deepStrictEqual(left, { files: 1, chunks: 1 })
    ok((await a.files.retrieve(kept.id)).id === kept.id)
  } finally {
    await second.close()
    await first.close()
  }
})
