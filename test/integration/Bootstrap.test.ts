/**
 * The bootstrap file of the outer contract (docs/ARCHITECTURE.md, "Outer contract"): YAML and JSON files
 * start the gateway (in-process, and `src/main.ts` as `deno task start` runs
 * it); a bad file exits non-zero naming the bad field and writes nothing; a
 * restart re-applies the file (prices upserted) without resetting usage or
 * quota.
 */
import { Result } from "effect"
import { deepStrictEqual, notStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startEmulator } from "../../emulator/Emulator.ts"
import { freshPostgres, startGateway } from "../support/Gateway.ts"
import { runMain, startMain, writeTempFile } from "../support/MainProcess.ts"
import { big, queryPostgres, tableCount } from "../support/Store.ts"

const KEY = "sk-test-alice-0001"

const yamlFile = (emulatorUrl: string, outputPrice = 8) => `
# A small but complete file: one group, priced and free models, one channel, one user.
groups:
  default:
    ratio: 1
models:
  gpt-test: { input: 2, output: ${outputPrice} }
  gpt-free: { free: true }
channels:
  - name: emu-openai
    type: openai
    base_url: ${emulatorUrl}
    keys: [sk-test-upstream-1]
    models: [gpt-test, gpt-free]
users:
  - username: alice
    group: default
    quota: 10000000
    tokens:
      - name: main
        key: ${KEY}
`

const jsonFile = (emulatorUrl: string) =>
  JSON.stringify({
    groups: { default: { ratio: 1 } },
    models: { "gpt-test": { input: 2, output: 8 } },
    channels: [{
      name: "emu-openai",
      type: "openai",
      base_url: emulatorUrl,
      keys: ["sk-test-upstream-1"],
      models: ["gpt-test"]
    }],
    users: [{ username: "alice", group: "default", quota: 10_000_000, tokens: [{ name: "main", key: KEY }] }]
  })

const decoded = (text: string, path: string): BootstrapFile => {
  const result = parseBootstrap(text, path)
  if (Result.isFailure(result)) throw new Error(result.failure)
  return result.success
}

const ask = (url: string) =>
  new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 }).chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content: "bootstrap works" }]
  })

const tokenUsage = async (url: string) => {
  const response = await fetch(`${url}/api/usage/token`, { headers: { authorization: `Bearer ${KEY}` } })
  return (await response.json()).data as { total_used: number; total_available: number }
}

Deno.test("bootstrap: a YAML file and a JSON file each start the gateway", async () => {
  for (const [path, text] of [["sluice.yaml", yamlFile], ["sluice.json", jsonFile]] as const) {
    const gateway = await startGateway({ config: (url) => decoded(text(url), path), store: "postgres" })
    try {
      const completion = await ask(gateway.url)
      strictEqual(completion.choices[0].message.content, "Echo: bootstrap works", path)
    } finally {
      await gateway.close()
    }
  }
})

Deno.test("bootstrap: src/main.ts starts from SLUICE_CONFIG (YAML) and answers /healthz", async () => {
  const emulator = startEmulator()
  const database = await freshPostgres()
  const file = await writeTempFile("sluice.yaml", yamlFile(emulator.url))
  const main = await startMain({ SLUICE_CONFIG: file.path, DATABASE_URL: database.url }).catch(async (error) => {
    await Promise.all([emulator.close(), database.drop(), file.remove()])
    throw error
  })
  try {
    const health = await fetch(`${main.url}/healthz`)
    strictEqual(health.status, 200)
    await health.body?.cancel()
    strictEqual((await ask(main.url)).choices[0].message.content, "Echo: bootstrap works")
    main.signal("SIGTERM")
    strictEqual((await main.exited).code, 0)
  } finally {
    await main.kill()
    await Promise.all([emulator.close(), database.drop(), file.remove()])
  }
})

/** A valid file's JSON with one field broken, and the path the error must name. */
const badFiles: ReadonlyArray<{ readonly what: string; readonly path: string; readonly file: unknown }> = (() => {
  const good = () => JSON.parse(jsonFile("http://127.0.0.1:9"))
  const withSecondChannel = () => {
    const file = good()
    file.channels.push({ ...file.channels[0], name: "second" })
    return file
  }
  const unknownType = withSecondChannel()
  unknownType.channels[1].type = "watsonx"
  const negative = good()
  negative.users[0].quota = -100
  const fractional = good()
  fractional.users[0].quota = 12.5
  const noKeys = withSecondChannel()
  delete noKeys.channels[1].keys
  const unknownGroup = good()
  unknownGroup.users[0].group = "gold"
  return [
    { what: "unknown channel type", path: "channels[1].type", file: unknownType },
    { what: "negative quota", path: "users[0].quota", file: negative },
    { what: "fractional quota", path: "users[0].quota", file: fractional },
    { what: "missing keys", path: "channels[1].keys", file: noKeys },
    { what: "unknown group", path: "users[0].group", file: unknownGroup }
  ]
})()

Deno.test("bootstrap: a bad file makes src/main.ts exit non-zero, naming the field, writing nothing", async () => {
  const database = await freshPostgres()
  const dataDir = await Deno.makeTempDir({ prefix: "sluice_data_" })
  const files = await Promise.all(
    badFiles.map((bad, index) => writeTempFile(`bad-${index}.json`, JSON.stringify(bad.file)))
  )
  // A YAML variant of one case, on the embedded store (SLUICE_DATA_DIR must stay absent).
  const yaml = await writeTempFile("bad.yaml", yamlFile("http://127.0.0.1:9").replace("type: openai", "type: watsonx"))
  try {
    const runs = await Promise.all([
      ...files.map((file) => runMain({ SLUICE_CONFIG: file.path, DATABASE_URL: database.url })),
      runMain({ SLUICE_CONFIG: yaml.path, SLUICE_DATA_DIR: `${dataDir}/store` })
    ])
    for (const [index, bad] of [...badFiles, { what: "YAML, embedded store", path: "channels[0].type" }].entries()) {
      const run = runs[index]
      notStrictEqual(run.code, 0, `${bad.what}: exit code`)
      ok(run.stderr.includes(`${bad.path}:`), `${bad.what}: stderr names ${bad.path}: ${run.stderr}`)
    }
    strictEqual(await tableCount(database.url), 0, "no table was created")
    deepStrictEqual([...Deno.readDirSync(dataDir)], [], "no embedded store was created")
  } finally {
    await Promise.all([database.drop(), ...files.map((file) => file.remove()), yaml.remove()])
    await Deno.remove(dataDir, { recursive: true })
  }
})

Deno.test("bootstrap: re-applying the file on restart keeps usage and quota, and upserts prices", async () => {
  const emulator = startEmulator()
  const database = await freshPostgres()
  const balances = async () => {
    const [row] = await queryPostgres(
      database.url,
      "SELECT u.quota, u.used_quota AS user_used, t.used_quota AS token_used FROM users u JOIN tokens t ON t.user_id = u.id"
    )
    return { quota: big(row.quota), userUsed: big(row.user_used), tokenUsed: big(row.token_used) }
  }
  try {
    const first = await startGateway({
      config: (url) => decoded(yamlFile(url), "sluice.yaml"),
      databaseUrl: database.url,
      emulator
    })
    try {
      await ask(first.url)
      await ask(first.url)
      ok((await tokenUsage(first.url)).total_used > 0)
    } finally {
      await first.close()
    }
    const spent = await balances()
    ok(spent.userUsed > 0n)
    strictEqual(spent.quota, 10_000_000n - spent.userUsed)

    // Same users and tokens, a new output price.
    const second = await startGateway({
      config: (url) => decoded(yamlFile(url, 80), "sluice.yaml"),
      databaseUrl: database.url,
      emulator
    })
    try {
      deepStrictEqual(await balances(), spent, "the restart reset nothing")
      strictEqual((await tokenUsage(second.url)).total_used, Number(spent.tokenUsed))
      const completion = await ask(second.url)
      const usage = completion.usage!
      const cost = BigInt(usage.prompt_tokens * 2 + usage.completion_tokens * 80)
      await second.stop()
      const after = await balances()
      strictEqual(after.userUsed - spent.userUsed, cost, "the new price applies")
      strictEqual(after.quota, spent.quota - cost)
      // The file's one user, beside the root user the first start made.
      const [{ count }] = await queryPostgres(database.url, "SELECT count(*) AS count FROM users WHERE role <> 'root'")
      strictEqual(Number(count), 1)
    } finally {
      await second.close()
    }
  } finally {
    await emulator.close()
    await database.drop()
  }
})
