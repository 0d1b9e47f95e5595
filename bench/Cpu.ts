/**
 * CPU time of a running subprocess (the gateway or the bare proxy), read from
 * Linux's `/proc/<pid>/stat` (proc(5)): `utime` + `stime`, summed by the kernel
 * over all of the process's threads (JS thread, I/O and GC threads), in clock
 * ticks of `getconf CLK_TCK` (normally 100 per second, so 10 ms resolution;
 * a 10 s run at one busy core is about 1,000 ticks).
 *
 * @since 0.1.0
 */

/**
 * Reads processes' CPU time. `read` answers `undefined` where there is no
 * `/proc` (not Linux) or the process is gone, so the bench still runs there,
 * without CPU figures.
 *
 * @category cpu
 */
export class CpuClock {
  readonly #ticksPerSecond: number

  private constructor(ticksPerSecond: number) {
    this.#ticksPerSecond = ticksPerSecond
  }

  /** Asks `getconf CLK_TCK` for the tick rate once; 100 (the Linux default) when `getconf` is missing or odd. */
  static async make(): Promise<CpuClock> {
    const ticks = await new Deno.Command("getconf", { args: ["CLK_TCK"], stdout: "piped", stderr: "null" })
      .output()
      .then((output) => Number(new TextDecoder().decode(output.stdout).trim()), () => Number.NaN)
    return new CpuClock(Number.isInteger(ticks) && ticks > 0 ? ticks : 100)
  }

  /** Ticks per second this clock converts with. */
  get ticksPerSecond(): number {
    return this.#ticksPerSecond
  }

  /**
   * User + system CPU time process `pid` has used since it started, in
   * milliseconds (multiples of 1000 / ticksPerSecond); `undefined` when it
   * cannot be read. Children's time (`cutime`, `cstime`) is not included.
   */
  async read(pid: number): Promise<number | undefined> {
    const text = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => undefined)
    if (text === undefined) return undefined
    // Field 2 (comm) is in parentheses and may hold spaces; fields 14 and 15 follow the last ")".
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined
    return ((utime + stime) * 1000) / this.#ticksPerSecond
  }
}
