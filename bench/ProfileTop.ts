/**
 * `deno run -A bench/ProfileTop.ts <file.cpuprofile> [count]`: the top items of a V8 CPU profile (as `deno run
 * --cpu-prof` writes it, e.g. through `bench/Compare.ts --cpu-prof=<dir>`) by self time, each function with its
 * file and line, and by file: where a gateway's CPU per request goes. Idle time (`(idle)`) is left out of the
 * shares; `(garbage collector)` and `(program)` stay in.
 *
 * @since 0.2.0
 */
// deno-lint-ignore-file no-console

interface ProfileNode {
  readonly id: number
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
  }
  readonly hitCount?: number
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples?: ReadonlyArray<number>
  readonly timeDeltas?: ReadonlyArray<number>
}

const [path, countText] = Deno.args
if (path === undefined) {
  console.error("Usage: deno run -A bench/ProfileTop.ts <file.cpuprofile> [count]")
  Deno.exit(2)
}
const count = Number(countText ?? 30)
const profile = JSON.parse(await Deno.readTextFile(path)) as Profile

/** Microseconds of self time per node id, from the samples and their time deltas. */
const selfTime = new Map<number, number>()
const samples = profile.samples ?? []
const deltas = profile.timeDeltas ?? []
for (let index = 0; index < samples.length; index++) {
  selfTime.set(samples[index], (selfTime.get(samples[index]) ?? 0) + (deltas[index] ?? 0))
}

const shortUrl = (url: string) => {
  const at = url.indexOf("/src/")
  if (at >= 0) return url.slice(at + 1)
  const modules = url.indexOf("node_modules/")
  return modules >= 0 ? url.slice(modules + 13).replace(/^\.deno\/[^/]+\/node_modules\//, "") : url
}

const byFunction = new Map<string, number>()
const byFile = new Map<string, number>()
let total = 0
for (const node of profile.nodes) {
  const time = selfTime.get(node.id) ?? 0
  if (node.callFrame.functionName === "(idle)" || time === 0) continue
  total += time
  const file = shortUrl(node.callFrame.url) || "(native)"
  const name = `${node.callFrame.functionName || "(anonymous)"} ${file}:${node.callFrame.lineNumber + 1}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + time)
  byFile.set(file, (byFile.get(file) ?? 0) + time)
}

const print = (title: string, entries: Map<string, number>) => {
  console.log(`\n${title} (of ${(total / 1000).toFixed(0)} ms busy)`)
  for (const [name, time] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, count)) {
    console.log(`${(100 * time / total).toFixed(1).padStart(5)}%  ${(time / 1000).toFixed(1).padStart(8)} ms  ${name}`)
  }
}
print("By function, self time", byFunction)
print("By file, self time", byFile)
