/**
 * Resident memory of a process and everything it started, read from Linux's
 * `/proc` (proc(5)): `VmRSS` of `/proc/<pid>/status` for each process of the
 * tree (the root, its children, theirs…), found through the parent pid in
 * `/proc/<pid>/stat`. A gateway started as `deno task start` is a launcher
 * (`deno task`) and the server it spawns; both count, as a container's memory
 * limit counts them. Summed RSS counts pages two processes share (the `deno`
 * binary's text, mapped by both) twice, as `ps` and the figures do;
 * `Pss` of `/proc/<pid>/smaps_rollup` (shared pages split between their users)
 * is read beside it.
 *
 * @since 0.1.0
 */

/** One process of a tree: its pid, name (`comm`) and memory, in KiB. @category models */
export interface ProcessMemory {
  readonly pid: number
  readonly name: string
  readonly rssKib: number
  /** Proportional set size; `undefined` where `smaps_rollup` cannot be read. */
  readonly pssKib: number | undefined
}

/** A process tree's memory: the sums and each process. @category models */
export interface TreeMemory {
  readonly rssKib: number
  readonly pssKib: number | undefined
  readonly processes: ReadonlyArray<ProcessMemory>
}

/** The value in KiB of `field` (e.g. `VmRSS`, `Pss`) in a `/proc` key-value text, or `undefined`. @category parsing */
export const kibOf = (text: string, field: string): number | undefined => {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)
  return match === null ? undefined : Number(match[1])
}

/** `[ppid, comm]` from the text of `/proc/<pid>/stat`, or `undefined` when it is not one. @category parsing */
export const parentOf = (stat: string): readonly [number, string] | undefined => {
  // Field 2 (comm) is in parentheses and may hold spaces or parentheses; field 4 (ppid) follows the last ")".
  const open = stat.indexOf("(")
  const close = stat.lastIndexOf(")")
  if (open === -1 || close === -1) return undefined
  const ppid = Number(stat.slice(close + 2).split(" ")[1])
  return Number.isInteger(ppid) ? [ppid, stat.slice(open + 1, close)] : undefined
}

const readOrUndefined = (path: string) => Deno.readTextFile(path).catch(() => undefined)

/**
 * The pids of `root` and all its descendants (a snapshot of `/proc`; a process
 * that exits meanwhile is left out), root first.
 *
 * @category memory
 */
export const treeOf = async (root: number): Promise<ReadonlyArray<{ readonly pid: number; readonly name: string }>> => {
  const parents = new Map<number, { readonly ppid: number; readonly name: string }>()
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue
    const stat = await readOrUndefined(`/proc/${entry.name}/stat`)
    const parsed = stat === undefined ? undefined : parentOf(stat)
    if (parsed !== undefined) parents.set(Number(entry.name), { ppid: parsed[0], name: parsed[1] })
  }
  const self = parents.get(root)
  if (self === undefined) return []
  const tree = [{ pid: root, name: self.name }]
  for (let index = 0; index < tree.length; index++) {
    for (const [pid, { ppid, name }] of parents) if (ppid === tree[index].pid) tree.push({ pid, name })
  }
  return tree
}

/**
 * RSS and PSS of `root` and its descendants, in KiB. Fails when `root` is not
 * running (or there is no `/proc`).
 *
 * @category memory
 */
export const treeMemory = async (root: number): Promise<TreeMemory> => memoryOf(await treeOf(root), root)

/**
 * RSS and PSS of the given processes (e.g. a tree found once with `treeOf`, then read often), in KiB; a process
 * that has exited is left out. Fails when none is running; `label` names them in that error.
 *
 * @category memory
 */
export const memoryOf = async (
  tree: ReadonlyArray<{ readonly pid: number; readonly name: string }>,
  label: number | string
): Promise<TreeMemory> => {
  const processes: Array<ProcessMemory> = []
  for (const { pid, name } of tree) {
    const status = await readOrUndefined(`/proc/${pid}/status`)
    const rssKib = status === undefined ? undefined : kibOf(status, "VmRSS")
    if (rssKib === undefined) continue
    const rollup = await readOrUndefined(`/proc/${pid}/smaps_rollup`)
    processes.push({ pid, name, rssKib, pssKib: rollup === undefined ? undefined : kibOf(rollup, "Pss") })
  }
  if (processes.length === 0) throw new Error(`No memory figures for process ${label}: is it running?`)
  return {
    rssKib: processes.reduce((sum, item) => sum + item.rssKib, 0),
    pssKib: processes.some((item) => item.pssKib === undefined)
      ? undefined
      : processes.reduce((sum, item) => sum + (item.pssKib ?? 0), 0),
    processes
  }
}

/** KiB as MiB with no decimals, for reports. @category format */
export const mib = (kib: number): string => (kib / 1024).toFixed(0)
