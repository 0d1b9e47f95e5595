/**
 * Every import in `src/` points down the layers (docs/ARCHITECTURE.md, "Layers": the same table), and
 * nothing in `src/` imports the emulator (`emulator/`, outside the product: no import leaves `src/` but for
 * `migrations/`). Reads the import lines of every module;
 * a new folder must be given its layer here.
 */
import { deepStrictEqual } from "node:assert/strict"

/** Lower layers first; a module may import its own folder or a folder of a lower layer. */
const layers: Record<string, number> = {
  canonical: 0,
  domain: 1,
  errors: 2,
  formats: 3,
  http: 4,
  config: 4,
  storage: 5,
  migrations: 4,
  // Telemetry (metrics, the access log, request records, tracing): above config, below the services that record.
  observability: 4.5,
  // Everything that talks to a vendor: the adapters and `transport/` (the upstream client, the SSRF-guarded fetch).
  upstreams: 5.5,
  // The request path's services (auth, routing, the ledger, limits, the usage log).
  services: 6,
  // Everything that turns usage into money (metering, holds and leases, budgets, the journal, the fold, the usage
  // rows): above the services whose principal and outbox it uses, below the tasks and relays that bill through it.
  billing: 6.2,
  // Beside each other, above the request path: the task subsystem and the `/api` backend.
  // The files of `/v1/files`: above the request path, below the tasks, relays and routes that read and write them.
  files: 6.3,
  tasks: 6.5,
  // Batches the gateway runs line by line through its own handler (store, runner, claims).
  batches: 6.5,
  accounts: 6.5,
  relay: 7,
  routes: 8,
  "": 9
}

const root = new URL("../src/", import.meta.url)
const migrations = new URL("../migrations/", import.meta.url)

const modules = async function* (dir: URL, prefix = ""): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) yield* modules(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`)
    else if (entry.name.endsWith(".ts")) yield `${prefix}${entry.name}`
  }
}

/** The folder of `src/` a path under it sits in (`""` for the top level), or `migrations`. */
const folderOf = (url: URL): string | undefined => {
  if (url.href.startsWith(migrations.href)) return "migrations"
  if (!url.href.startsWith(root.href)) return undefined
  const rest = url.href.slice(root.href.length)
  return rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : ""
}

const IMPORT = /^(?:import|export)\b[^"']*?from\s+["'](\.{1,2}\/[^"']+)["']|^import\s+["'](\.{1,2}\/[^"']+)["']/gm

Deno.test("imports: every import in src/ points down the layers; nothing in src/ imports the emulator", async () => {
  const wrong: Array<string> = []
  for await (const path of modules(root)) {
    const from = new URL(path, root)
    const source = folderOf(from)!
    const text = await Deno.readTextFile(from)
    for (const match of text.matchAll(IMPORT)) {
      const target = new URL(match[1] ?? match[2], from)
      const folder = folderOf(target)
      const line = `src/${path} imports ${match[1] ?? match[2]}`
      if (folder === undefined) wrong.push(`${line} (outside src/)`)
      else if (folder === source) continue
      else if (!(folder in layers) || !(source in layers)) wrong.push(`${line} (a folder with no layer)`)
      else if (layers[folder] >= layers[source]) wrong.push(`${line} (${source} may not import ${folder})`)
    }
  }
  deepStrictEqual(wrong, [])
})

/**
 * Routes reach vendors only through the relays (docs/ARCHITECTURE.md, "The billed pipeline": candidates, adapters
 * and health are the relay's), so nothing under `routes/` imports the upstream client, the video calls or an adapter.
 */
const UPSTREAM_MODULES = [
  { target: "upstreams/transport/UpstreamClient.ts", exact: true },
  { target: "tasks/VideoCalls.ts", exact: true },
  { target: "upstreams/", exact: false }
]

Deno.test("imports: nothing under src/routes/ imports the upstream client, the video calls or upstreams/", async () => {
  const wrong: Array<string> = []
  const routes = new URL("routes/", root)
  for await (const path of modules(routes, "routes/")) {
    const from = new URL(path, root)
    const text = await Deno.readTextFile(from)
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]
      const target = new URL(specifier, from).href
      if (!target.startsWith(root.href)) continue
      const rest = target.slice(root.href.length)
      const hit = UPSTREAM_MODULES.find(({ target: module, exact }) =>
        exact ? rest === module : rest.startsWith(module)
      )
      if (hit !== undefined) wrong.push(`src/${path} imports ${specifier}`)
    }
  }
  deepStrictEqual(wrong, [])
})

/** The modules a module imports, by path under `src/` (relative imports only). */
const importGraph = async (): Promise<Map<string, Array<string>>> => {
  const graph = new Map<string, Array<string>>()
  for await (const path of modules(root)) {
    const from = new URL(path, root)
    const text = await Deno.readTextFile(from)
    const targets: Array<string> = []
    for (const match of text.matchAll(IMPORT)) {
      const target = new URL(match[1] ?? match[2], from).href
      if (target.startsWith(root.href)) targets.push(target.slice(root.href.length))
    }
    graph.set(path, targets)
  }
  return graph
}

/** Every import circle among the modules under `folder` (each reported once, from its smallest path). */
const circlesUnder = (graph: Map<string, Array<string>>, folder: string): Array<string> => {
  const found = new Set<string>()
  const walk = (start: string, at: string, trail: Array<string>) => {
    for (const next of graph.get(at) ?? []) {
      if (!next.startsWith(folder)) continue
      if (next === start) found.add([...trail, start].join(" -> "))
      else if (!trail.includes(next) && next > start) walk(start, next, [...trail, next])
    }
  }
  for (const path of graph.keys()) if (path.startsWith(folder)) walk(path, path, [path])
  return [...found]
}

Deno.test("imports: no module in src/ imports itself through others (no import circle)", async () => {
  deepStrictEqual(circlesUnder(await importGraph(), ""), [])
})

Deno.test("imports: nothing under src/billing/ imports src/relay/ (the meter's values stand below the relay)", async () => {
  const graph = await importGraph()
  const wrong = [...graph].filter(([path]) => path.startsWith("billing/")).flatMap(([path, targets]) =>
    targets.filter((target) => target.startsWith("relay/")).map((target) => `src/${path} imports src/${target}`)
  )
  deepStrictEqual(wrong, [])
  deepStrictEqual(graph.has("billing/Meter.ts"), true)
})

/** The folders under `src/formats/` named for a vendor: what one vendor's wire says, and nothing else. */
const VENDOR_FOLDERS = [
  "anthropic",
  "ark",
  "azure",
  "bedrock",
  "deepseek",
  "gemini",
  "kling",
  "midjourney",
  "openai",
  "vertex"
]

/** The folders under `src/formats/` that hold one concern across vendors (and registries keyed by wire). */
const SHARED_FORMAT_FOLDERS = ["audio", "batches", "embeddings", "images", "rerank", "shared", "videos"]

/** The layers that may import a vendor folder of `formats/`: `formats/` itself, the adapters, the routes. */
const VENDOR_IMPORTERS = ["formats/", "upstreams/", "routes/"]

/**
 * The modules outside those that still import a vendor folder, each with its reason. Midjourney has one vendor
 * and no canonical form: its API is passed through as it is, so its task relay, its upstream calls and its poll's
 * state speak Midjourney's wire. (The vendors' task views live beside their routes.)
 */
const VENDOR_IMPORT_EXCEPTIONS: Record<string, string> = {
  "relay/midjourney/MidjourneyRelay.ts -> formats/midjourney/Wire.ts": "the Midjourney passthrough: its own API",
  "tasks/MidjourneyCalls.ts -> formats/midjourney/Wire.ts": "the Midjourney upstream calls (passthrough)",
  "tasks/poller/PollOutcome.ts -> formats/midjourney/Wire.ts": "a Midjourney poll's state (passthrough)"
}

/** Whether `path` (under `src/`) is in a vendor folder of `formats/` (`formats/openai/…`, `formats/audio/gemini/…`). */
const inVendorFolder = (path: string): boolean =>
  path.startsWith("formats/") && path.split("/").slice(1, -1).some((segment) => VENDOR_FOLDERS.includes(segment))

Deno.test("imports: every folder under src/formats/ is a vendor's or a shared concern's", async () => {
  const folders: Array<string> = []
  for await (const entry of Deno.readDir(new URL("formats/", root))) if (entry.isDirectory) folders.push(entry.name)
  deepStrictEqual(folders.filter((name) => ![...VENDOR_FOLDERS, ...SHARED_FORMAT_FOLDERS].includes(name)), [])
})

Deno.test("imports: vendor folders of src/formats/ are imported only by formats/, upstreams/ and routes/", async () => {
  const graph = await importGraph()
  const wrong = [...graph].filter(([path]) => !VENDOR_IMPORTERS.some((folder) => path.startsWith(folder)))
    .flatMap(([path, targets]) => targets.filter(inVendorFolder).map((target) => `${path} -> ${target}`))
    .filter((edge) => !(edge in VENDOR_IMPORT_EXCEPTIONS))
  deepStrictEqual(wrong, [])
  // Every exception is still needed (a fixed one is taken off the list).
  const edges = new Set([...graph].flatMap(([path, targets]) => targets.map((target) => `${path} -> ${target}`)))
  deepStrictEqual(Object.keys(VENDOR_IMPORT_EXCEPTIONS).filter((edge) => !edges.has(edge)), [])
})
