/**
 * `bench/Rss.ts`: the `/proc` fields it reads (`VmRSS`, `Pss`, the parent pid
 * after a `comm` that may hold spaces and parentheses), and the memory of a
 * real process tree (a shell and the child it started), summed over both.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { kibOf, parentOf, treeMemory, treeOf } from "../../bench/Rss.ts"

Deno.test("rss: kibOf reads a kB field of /proc status or smaps_rollup text", () => {
  const status = "Name:\tdeno\nVmPeak:\t 1200 kB\nVmRSS:\t  171112 kB\nRssAnon:\t 118532 kB\n"
  strictEqual(kibOf(status, "VmRSS"), 171_112)
  strictEqual(kibOf(status, "RssAnon"), 118_532)
  strictEqual(kibOf(status, "VmSwap"), undefined)
  strictEqual(kibOf("Rss:  169660 kB\nPss:  131551 kB\nPss_Dirty: 118553 kB\n", "Pss"), 131_551)
})

Deno.test("rss: parentOf reads the parent pid after a comm with spaces and parentheses", () => {
  deepStrictEqual(parentOf("4242 (deno) S 4100 4242 4100 0 -1 4194560"), [4100, "deno"])
  deepStrictEqual(parentOf("77 (a) b (c)) R 12 77 12 0"), [12, "a) b (c)"])
  strictEqual(parentOf("not a stat line"), undefined)
})

Deno.test("rss: treeMemory sums a shell and the child it started", async () => {
  const child = new Deno.Command("sh", { args: ["-c", "sleep 30 & wait"], stdout: "null", stderr: "null" }).spawn()
  let tree: Awaited<ReturnType<typeof treeOf>> = []
  try {
    // The shell forks before its child execs `sleep`: until then the child is a second `sh`.
    const started = () => tree.length === 2 && tree[1].name === "sleep"
    for (let attempt = 0; attempt < 50 && !started(); attempt++) {
      tree = await treeOf(child.pid)
      if (!started()) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    deepStrictEqual(tree.map((item) => item.name), ["sh", "sleep"])
    strictEqual(tree[0].pid, child.pid)
    const memory = await treeMemory(child.pid)
    strictEqual(memory.processes.length, 2)
    strictEqual(memory.rssKib, memory.processes[0].rssKib + memory.processes[1].rssKib)
    ok(memory.processes.every((item) => item.rssKib > 0), "each process has resident pages")
    ok(memory.pssKib === undefined || memory.pssKib <= memory.rssKib, "PSS never exceeds RSS")
  } finally {
    // The sleep would outlive its shell: both are ended by the pids seen, the child last.
    for (const { pid } of tree.slice(1)) {
      try {
        Deno.kill(pid, "SIGKILL")
      } catch {
        // Already gone.
      }
    }
    child.kill("SIGKILL")
    await child.status
  }
})
