/**
 * Names that tell the truth: every service's identifier is its module's path (`sluice/<path under src/>`, or
 * `sluice/<path>/<Class>` for a service not named after its file), and every file path a document or a module
 * header names exists (the paths written as `src/…`, `test/…`, `bench/…`, `emulator/…`, `migrations/…`,
 * `console/…` or `docs/…` in `docs/`, the README and the opening comment of every module under `src/`).
 */
import { deepStrictEqual } from "node:assert/strict"

const ROOT = new URL("../", import.meta.url)

const walk = async function* (dir: URL, prefix: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue
    if (entry.isDirectory) yield* walk(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`)
    else yield `${prefix}${entry.name}`
  }
}

const SERVICE = /export class (\w+) extends Context\.Service<\1,[\s\S]*?>\(\)\("([^"]+)"\)/g

Deno.test("names: every service identifier is its module's path", async () => {
  const wrong: Array<string> = []
  for await (const path of walk(new URL("src/", ROOT), "")) {
    if (!path.endsWith(".ts")) continue
    const text = await Deno.readTextFile(new URL(`src/${path}`, ROOT))
    const module = path.slice(0, -3)
    const base = module.slice(module.lastIndexOf("/") + 1)
    for (const match of text.matchAll(SERVICE)) {
      const want = match[1] === base ? `sluice/${module}` : `sluice/${module}/${match[1]}`
      if (match[2] !== want) wrong.push(`src/${path}: ${match[1]} is "${match[2]}", not "${want}"`)
    }
  }
  deepStrictEqual(wrong, [])
})

/**
 * A file path as prose writes it: from a top folder (`src/relay/Failover.ts`), from a folder of `src/`
 * (`relay/Failover.ts`, as module headers and docs/ARCHITECTURE.md write them), or a bare module name
 * (`StreamPipeline.ts`). Lower-case bare names and other folders are left alone: they name vendor SDK files
 * (`resources/realtime/realtime.ts` of the `openai` package), not ours.
 */
const PATH = /(?<![\w./:-])((?:[a-z][\w-]*\/)+[\w.-]*\w\.(?:ts|tsx|md)|[A-Z][A-Za-z0-9]*\.(?:ts|tsx))(?![\w/-])/g

/** The opening comment of a module (its header), or "" when it has none. */
const headerOf = (text: string): string => {
  const trimmed = text.trimStart()
  if (!trimmed.startsWith("/**")) return ""
  const end = trimmed.indexOf("*/")
  return end < 0 ? "" : trimmed.slice(0, end)
}

Deno.test("names: every file a document or a module header names exists", async () => {
  const files: Array<string> = []
  for await (const path of walk(ROOT, "")) files.push(path)
  const srcFolders = new Set<string>()
  for await (const entry of Deno.readDir(new URL("src/", ROOT))) if (entry.isDirectory) srcFolders.add(entry.name)
  const tops = new Set(["src", "test", "bench", "emulator", "migrations", "console", "docs", ...srcFolders])
  /** Whether some file of the repository is `mention` or ends with `/<mention>`. */
  const named = (mention: string) => files.some((file) => file === mention || file.endsWith(`/${mention}`))
  const sources: Array<{ readonly name: string; readonly text: string }> = []
  sources.push({ name: "README.md", text: await Deno.readTextFile(new URL("README.md", ROOT)) })
  for (const path of files) {
    if (path.startsWith("docs/") && path.endsWith(".md")) {
      sources.push({ name: path, text: await Deno.readTextFile(new URL(path, ROOT)) })
    }
    if (path.startsWith("src/") && path.endsWith(".ts")) {
      sources.push({ name: path, text: headerOf(await Deno.readTextFile(new URL(path, ROOT))) })
    }
  }
  const missing: Array<string> = []
  for (const { name, text } of sources) {
    for (const match of text.matchAll(PATH)) {
      const mention = match[1]
      const first = mention.includes("/") ? mention.slice(0, mention.indexOf("/")) : undefined
      if (first !== undefined && !tops.has(first)) continue
      if (!named(mention)) missing.push(`${name} names ${mention}`)
    }
  }
  deepStrictEqual([...new Set(missing)], [])
})
