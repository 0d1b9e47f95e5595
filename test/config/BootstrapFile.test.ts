/**
 * The bootstrap file parser: YAML and JSON both decode to the same file; a
 * bad file fails with a message that starts with the path of the bad field.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { type BootstrapFile, parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { baseUrlOf, DEFAULT_BASE_URLS } from "../../src/domain/ChannelType.ts"

const YAML = `
groups:
  default: { ratio: 1 }
  vip:
    ratio: 0.8
    limits: { rpm: 60 }
models:
  gpt-test: { input: 2.5, output: 10 }
  gpt-free: { free: true }
channels:
  - name: emu-openai
    type: openai
    base_url: http://127.0.0.1:9
    keys: [sk-upstream-1, sk-upstream-2]
    models: [gpt-test, gpt-free]
    groups: [default, vip]
    priority: 10
    model_mapping: { gpt-test: gpt-4o-mini }
    settings: { first_byte_timeout_ms: 1000 }
users:
  - username: alice
    group: default
    quota: 10000000
    tokens:
      - { name: main, key: sk-test-alice-0001 }
      - { name: vip, key: sk-test-alice-0002, group: vip, quota: 500, expires_at: 2030-01-01T00:00:00Z }
      - { name: epoch, key: sk-test-alice-0003, expires_at: 1893456000, models: [gpt-free] }
settings:
  retry_times: 0
  key_cache_ttl_ms: 100
`

/** The same file, as JSON. */
const json = {
  groups: { default: { ratio: 1 }, vip: { ratio: 0.8, limits: { rpm: 60 } } },
  models: { "gpt-test": { input: 2.5, output: 10 }, "gpt-free": { free: true } },
  channels: [{
    name: "emu-openai",
    type: "openai",
    base_url: "http://127.0.0.1:9",
    keys: ["sk-upstream-1", "sk-upstream-2"],
    models: ["gpt-test", "gpt-free"],
    groups: ["default", "vip"],
    priority: 10,
    model_mapping: { "gpt-test": "gpt-4o-mini" },
    settings: { first_byte_timeout_ms: 1000 }
  }],
  users: [{
    username: "alice",
    group: "default",
    quota: 10_000_000,
    tokens: [
      { name: "main", key: "sk-test-alice-0001" },
      { name: "vip", key: "sk-test-alice-0002", group: "vip", quota: 500, expires_at: "2030-01-01T00:00:00Z" },
      { name: "epoch", key: "sk-test-alice-0003", expires_at: 1893456000, models: ["gpt-free"] }
    ]
  }],
  settings: { retry_times: 0, key_cache_ttl_ms: 100 }
}

const parsed = (text: string, path: string): BootstrapFile => {
  const result = parseBootstrap(text, path)
  if (Result.isFailure(result)) throw new Error(result.failure)
  return result.success
}

/** The message of a file that must not parse. */
const failure = (text: string, path = "sluice.json"): string => {
  const result = parseBootstrap(text, path)
  if (Result.isSuccess(result)) throw new Error(`expected ${path} to be refused`)
  return result.failure
}

/** `json` changed by `edit` (on a deep copy). */
const variant = (edit: (file: typeof json & Record<string, unknown>) => void): string => {
  const copy = structuredClone(json) as typeof json & Record<string, unknown>
  edit(copy)
  return JSON.stringify(copy)
}

Deno.test("parseBootstrap: YAML and JSON give the same file", () => {
  const fromYaml = parsed(YAML, "sluice.yaml")
  deepStrictEqual(fromYaml, parsed(JSON.stringify(json), "sluice.json"))
  // JSON is recognised by its first character too, whatever the file is called.
  deepStrictEqual(fromYaml, parsed(JSON.stringify(json, null, 2), "sluice.conf"))
  strictEqual(fromYaml.users?.[0].tokens?.[1].expires_at, "2030-01-01T00:00:00Z")
  strictEqual(fromYaml.users?.[0].tokens?.[2].expires_at, 1893456000)
  strictEqual(fromYaml.groups?.vip.ratio, 0.8)
})

Deno.test("parseBootstrap: an empty file is an empty configuration", () => {
  deepStrictEqual(parsed("", "sluice.yaml"), {})
  deepStrictEqual(parsed("{}", "sluice.json"), {})
})

Deno.test("parseBootstrap: models.<name>.family takes an image family or a video family", () => {
  for (const family of ["dall-e-3", "videoa", "mini-2.0", "openai-video"]) {
    const result = parseBootstrap(variant((f) => Object.assign(f.models["gpt-test"], { family })), "sluice.json")
    if (Result.isFailure(result)) throw new Error(`${family}: ${result.failure}`)
    strictEqual(result.success.models?.["gpt-test"]?.family, family)
  }
  ok(
    failure(variant((f) => Object.assign(f.models["gpt-test"], { family: "videob" }))).startsWith(
      "models.gpt-test.family: "
    )
  )
})

Deno.test("parseBootstrap: text that is not YAML or JSON names the file", () => {
  ok(failure("groups: [1, 2", "conf/sluice.yaml").startsWith("conf/sluice.yaml: cannot be parsed"))
  ok(failure(`{"groups": `, "conf/sluice.json").startsWith("conf/sluice.json: cannot be parsed"))
})

Deno.test("parseBootstrap: a bad field is reported with its path", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    [variant((f) => (f.channels.push({ ...f.channels[0], name: "b", type: "watsonx" }))), "channels[1].type: "],
    [variant((f) => (f.users[0].quota = -1)), "users[0].quota: "],
    [variant((f) => (f.users[0].quota = 1.5)), "users[0].quota: "],
    [variant((f) => (f.users[0].quota = Number.MAX_SAFE_INTEGER + 2)), "users[0].quota: "],
    [variant((f) => (f.users[0].tokens[1].quota = -5)), "users[0].tokens[1].quota: "],
    [variant((f) => delete (f.channels[0] as Partial<typeof f.channels[0]>).keys), "channels[0].keys: "],
    [variant((f) => (f.channels[0].keys = [])), "channels[0].keys: "],
    [variant((f) => (f.channels[0].keys[1] = "")), "channels[0].keys[1]: "],
    [variant((f) => delete (f.channels[0] as Partial<typeof f.channels[0]>).base_url), "channels[0].base_url: "],
    [variant((f) => (f.groups.default.ratio = -1)), "groups.default.ratio: "],
    [variant((f) => (f.models["gpt-test"].input = "cheap" as unknown as number)), "models.gpt-test.input: "],
    [variant((f) => Object.assign(f.models["gpt-test"], { family: "dall-e-9" })), "models.gpt-test.family: "],
    [variant((f) => Object.assign(f.models["gpt-test"], { per_image: -0.01 })), "models.gpt-test.per_image: "],
    [variant((f) => (f.users[0].tokens[0].key = "short")), "users[0].tokens[0].key: "],
    [variant((f) => (f.settings.retry_times = -1)), "settings.retry_times: "],
    [variant((f) => Object.assign(f.users[0], { role: "owner" })), "users[0].role: "],
    [
      variant((f) =>
        Object.assign(f.users[0].tokens[0], { budgets: [{ amount: 5, period: "day", timezone: "Mars/Base" }] })
      ),
      "users[0].tokens[0].budgets[0].timezone: "
    ],
    [
      variant((f) => Object.assign(f.users[0], { budgets: [{ amount: 5, period: "year" }] })),
      "users[0].budgets[0].period: "
    ],
    [
      variant((f) => Object.assign(f.users[0], { budgets: [{ amount: -1, period: "day" }] })),
      "users[0].budgets[0].amount: "
    ],
    [
      variant((f) =>
        Object.assign(f.users[0], { budgets: [{ amount: 1, period: "day" }, { amount: 2, period: "day" }] })
      ),
      "users[0].budgets: "
    ],
    [
      variant((f) => Object.assign(f.channels[0].settings ?? {}, { forward_store: "no" })),
      "channels[0].settings.forward_store: "
    ]
  ]
  for (const [text, path] of cases) {
    const message = failure(text)
    ok(message.startsWith(path), `expected "${path}…", got "${message}"`)
  }
})

Deno.test("parseBootstrap: a deepseek channel may leave base_url out (DeepSeek's default); other types may not", () => {
  const file = parsed(
    variant((f) =>
      f.channels.push({ ...f.channels[0], name: "ds", type: "deepseek", base_url: undefined as unknown as string })
    ),
    "sluice.json"
  )
  strictEqual(file.channels?.[1].type, "deepseek")
  strictEqual(file.channels?.[1].base_url, undefined)
  strictEqual(DEFAULT_BASE_URLS.deepseek, "https://api.deepseek.com")
  strictEqual(baseUrlOf("deepseek", undefined), "https://api.deepseek.com")
  strictEqual(baseUrlOf("deepseek", "http://proxy.internal/deepseek"), "http://proxy.internal/deepseek")
  strictEqual(baseUrlOf("openai", undefined), undefined)
  const message = failure(variant((f) => delete (f.channels[0] as Partial<typeof f.channels[0]>).base_url))
  strictEqual(message, "channels[0].base_url: missing (channel type openai has no default base URL)")
})

Deno.test("parseBootstrap: a bedrock channel needs settings.region, and its base URL defaults to the region's", () => {
  const bedrock = (settings: Record<string, unknown> | undefined) =>
    variant((f) => {
      const { settings: _settings, ...first } = f.channels[0]
      ;(f.channels as Array<unknown>).push({
        ...first,
        name: "aws",
        type: "bedrock",
        base_url: undefined,
        ...(settings === undefined ? {} : { settings })
      })
    })
  strictEqual(
    failure(bedrock(undefined)),
    "channels[1].settings.region: settings.region is missing (a bedrock channel needs its AWS region)."
  )
  strictEqual(
    failure(bedrock({ region: "us-east-1.evil.test" })),
    'channels[1].settings.region: settings.region "us-east-1.evil.test" is not an AWS region (like us-east-1).'
  )
  const file = parsed(bedrock({ region: "us-east-1", bedrock_api: "invoke" }), "sluice.json")
  const channel = file.channels?.[1]
  strictEqual(channel?.settings?.bedrock_api, "invoke")
  strictEqual(
    baseUrlOf("bedrock", channel?.base_url, channel?.settings),
    "https://bedrock-runtime.us-east-1.amazonaws.com"
  )
  ok(failure(bedrock({ region: "us-east-1", bedrock_api: "chat" })).startsWith("channels[1].settings.bedrock_api"))
})

Deno.test("parseBootstrap: a vertex channel needs settings.project; its base_url defaults to its location's endpoint", () => {
  const vertex = (settings: Record<string, unknown> | undefined) =>
    variant((f) =>
      f.channels.push(
        {
          ...f.channels[0],
          name: "vx",
          type: "vertex",
          base_url: undefined as unknown as string,
          ...(settings === undefined ? {} : { settings })
        } as typeof f.channels[0]
      )
    )
  strictEqual(
    failure(vertex(undefined)),
    "channels[1].settings.project: missing (a vertex channel calls one Google Cloud project)"
  )
  ok(failure(vertex({ project: "p", location: "Europe West" })).startsWith("channels[1].settings.location: "))
  ok(failure(vertex({ project: "p/../x" })).startsWith("channels[1].settings.project: "))
  const file = parsed(vertex({ project: "sluice-test-project", location: "europe-west4" }), "sluice.json")
  strictEqual(file.channels?.[1].settings?.project, "sluice-test-project")
  strictEqual(
    baseUrlOf("vertex", undefined, { location: "europe-west4" }),
    "https://europe-west4-aiplatform.googleapis.com"
  )
  strictEqual(baseUrlOf("vertex", undefined, {}), "https://us-central1-aiplatform.googleapis.com")
  strictEqual(baseUrlOf("vertex", undefined, { location: "global" }), "https://aiplatform.googleapis.com")
  strictEqual(baseUrlOf("vertex", undefined, { location: "us" }), "https://aiplatform.us.rep.googleapis.com")
  strictEqual(
    baseUrlOf("vertex", "http://proxy.internal/vertex", { location: "global" }),
    "http://proxy.internal/vertex"
  )
  strictEqual(DEFAULT_BASE_URLS.vertex, baseUrlOf("vertex", undefined))
})

Deno.test("parseBootstrap: every reference to an undefined group is refused with its path", () => {
  strictEqual(failure(variant((f) => (f.users[0].group = "gold"))), `users[0].group: unknown group "gold"`)
  strictEqual(
    failure(variant((f) => (f.users[0].tokens[1].group = "gold"))),
    `users[0].tokens[1].group: unknown group "gold"`
  )
  strictEqual(
    failure(variant((f) => (f.channels[0].groups = ["default", "gold"]))),
    `channels[0].groups[1]: unknown group "gold"`
  )
  // Names inherited from Object.prototype are not groups either.
  strictEqual(
    failure(variant((f) => (f.users[0].group = "constructor"))),
    `users[0].group: unknown group "constructor"`
  )
})

Deno.test("parseBootstrap: without a groups section any group name is accepted", () => {
  const file = parsed(variant((f) => delete (f as Partial<typeof f>).groups), "sluice.json")
  strictEqual(file.users?.[0].tokens?.[1].group, "vip")
})

Deno.test("parseBootstrap: an expires_at that is not a date-time is refused, not stored as never expiring", () => {
  strictEqual(
    failure(variant((f) => (f.users[0].tokens[1].expires_at = "next tuesday"))),
    `users[0].tokens[1].expires_at: not a date-time "next tuesday"`
  )
  strictEqual(parsed(variant((f) => (f.users[0].tokens[1].expires_at = "2030-01-01")), "a.json").users?.length, 1)
})

Deno.test("parseBootstrap: trusted_proxies takes addresses and CIDR ranges only", () => {
  const parse = (proxies: unknown) =>
    parseBootstrap(JSON.stringify({ settings: { trusted_proxies: proxies } }), "t.json")
  strictEqual(Result.isSuccess(parse(["10.0.0.0/8", "127.0.0.1", "2001:db8::/32"])), true)
  for (const bad of [["nope"], ["10.0.0.0/99"], ["1.2.3.4, 5.6.7.8"]]) {
    const parsed = parse(bad)
    strictEqual(Result.isFailure(parsed), true, JSON.stringify(bad))
    if (Result.isFailure(parsed)) {
      strictEqual(parsed.failure, "settings.trusted_proxies[0]: must be an IP address or CIDR range")
    }
  }
})
