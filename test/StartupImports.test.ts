/**
 * What the server loads at start-up stays small: the packages below are
 * reached from `src/main.ts` only through dynamic imports (loaded on first
 * use), and `date-fns` only through its one-function modules, never its index
 * (which loads every function). Each costs idle memory in every gateway
 * whether or not it is used (bench/RESULTS.md, "Where the idle memory goes").
 * Reads the module graph `deno info --json` prints and follows the static
 * imports of the gateway's own modules.
 */
import { deepStrictEqual, ok } from "node:assert/strict"

/** Packages a gateway loads only when it needs them, and when that is. */
const LOADED_ON_USE: Readonly<Record<string, string>> = {
  ioredis: "REDIS_URL is set (rate limits and the login throttle)",
  "music-metadata": "an audio file's duration is read",
  "file-type": "a download or upload is sniffed",
  "gpt-tokenizer": "a request's tokens are counted locally"
}

interface Dependency {
  readonly code?: { readonly specifier: string }
  readonly isDynamic?: boolean
}

interface ModuleInfo {
  readonly specifier: string
  readonly dependencies?: ReadonlyArray<Dependency>
}

/** The npm package of an `npm:` specifier (`npm:ioredis@5.9.2`, `npm:/date-fns@4.4.0/addDays`), or `undefined`. */
const packageOf = (specifier: string): string | undefined => {
  const match = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)/.exec(specifier)
  return match === null ? undefined : match[1]
}

Deno.test("the server's start-up imports leave out what is loaded on first use", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "src/main.ts"],
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped"
  }).output()
  ok(output.success, new TextDecoder().decode(output.stderr))
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    readonly roots: ReadonlyArray<string>
    readonly modules: ReadonlyArray<ModuleInfo>
  }
  const bySpecifier = new Map(graph.modules.map((module) => [module.specifier, module]))
  const seen = new Set<string>(graph.roots)
  const queue = [...graph.roots]
  const staticNpm = new Map<string, string>()
  while (queue.length > 0) {
    const current = queue.pop()!
    for (const dependency of bySpecifier.get(current)?.dependencies ?? []) {
      const target = dependency.code?.specifier
      if (target === undefined || dependency.isDynamic === true) continue
      if (target.startsWith("npm:")) staticNpm.set(target, current)
      else if (target.startsWith("file:") && !seen.has(target)) {
        seen.add(target)
        queue.push(target)
      }
    }
  }
  const offending = [...staticNpm]
    .filter(([specifier]) => {
      const name = packageOf(specifier)
      const dateFnsIndex = name === "date-fns" && !/^npm:\/date-fns@[^/]+\/[A-Za-z]/.test(specifier)
      return (name !== undefined && name in LOADED_ON_USE) || dateFnsIndex
    })
    .map(([specifier, importer]) => `${specifier} (imported by ${importer})`)
  deepStrictEqual(offending, [])
})
