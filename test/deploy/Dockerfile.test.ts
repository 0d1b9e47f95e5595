/**
 * The Dockerfile, checked without Docker (not available here): its
 * instructions are read and its commands run in order in a scratch directory
 * standing for `/app` — `COPY` copies what it names (a folder's contents into
 * its target, files into a target folder), what `.dockerignore` lets through,
 * `RUN` runs in bash (the one root-only step, `chown`, is skipped and must be
 * the only one), `ENV` sets the environment, then `CMD` starts the gateway and
 * the `HEALTHCHECK` command must pass, and SIGTERM stops it cleanly with its
 * data in the `VOLUME`. Also: it runs as a non-root `USER`, the volume is
 * `SLUICE_DATA_DIR`, and dependencies are installed with `deno install
 * --frozen` before the sources are copied (so that layer is cached), and the
 * image holds only what the gateway runs: `deno.json`, `deno.lock`, `src/`,
 * `migrations/` and the console's built page — no tests, benchmarks, emulator or
 * console sources (the file list read after the `COPY` steps).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { freePort } from "../support/MainProcess.ts"

const ROOT = new URL("../../", import.meta.url).pathname

interface Instruction {
  readonly keyword: string
  readonly rest: string
}

/** The instructions of a Dockerfile (comments dropped, `\` continuations joined). */
const instructions = (text: string): ReadonlyArray<Instruction> =>
  text.replace(/\\\n/g, " ").split("\n").map((line) => line.trim()).filter((line) =>
    line !== "" && !line.startsWith("#")
  ).map((line) => {
    const space = line.indexOf(" ")
    return { keyword: line.slice(0, space).toUpperCase(), rest: line.slice(space + 1).trim() }
  })

/** Copies `from` into `to`, leaving out the top-level names `.dockerignore` lists (and symlinks). */
const copyTree = async (from: string, to: string, ignored: ReadonlySet<string>, top = true): Promise<void> => {
  await Deno.mkdir(to, { recursive: true })
  for await (const entry of Deno.readDir(from)) {
    if ((top && ignored.has(entry.name)) || entry.isSymlink || entry.name.endsWith(".log")) continue
    if (entry.isDirectory) await copyTree(`${from}/${entry.name}`, `${to}/${entry.name}`, ignored, false)
    else await Deno.copyFile(`${from}/${entry.name}`, `${to}/${entry.name}`)
  }
}

/** `deno` in a command array is this Deno. */
const command = (argv: ReadonlyArray<string>) => argv[0] === "deno" ? Deno.execPath() : argv[0]

Deno.test("Dockerfile: non-root, a volume for SLUICE_DATA_DIR, a HEALTHCHECK; its commands run in order", async () => {
  const steps = instructions(await Deno.readTextFile(`${ROOT}Dockerfile`))
  const ignored = new Set(
    (await Deno.readTextFile(`${ROOT}.dockerignore`)).split("\n").map((line) => line.trim()).filter(Boolean)
  )
  const keywords = steps.map((step) => step.keyword)
  const user = steps.find((step) => step.keyword === "USER")
  ok(user !== undefined && user.rest !== "root" && user.rest !== "0", "runs as a non-root user")
  const install = steps.findIndex((step) => step.keyword === "RUN" && step.rest === "deno install --frozen")
  const copySources = steps.findIndex((step) => step.keyword === "COPY" && /^(--\S+\s+)*src\s/.test(step.rest))
  ok(install !== -1 && install < copySources, "deno install --frozen runs before the sources are copied")
  ok(keywords.indexOf("USER") < install, "dependencies are installed as the non-root user")
  ok(keywords.includes("HEALTHCHECK"))

  const scratch = await Deno.makeTempDir({ prefix: "sluice_docker_" })
  const app = `${scratch}/app`
  const shim = `${scratch}/bin`
  await Deno.mkdir(shim)
  await Deno.symlink(Deno.execPath(), `${shim}/deno`)
  const inherited = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([name]) =>
      !name.startsWith("SLUICE_") && !["PORT", "HOST", "DATABASE_URL", "REDIS_URL", "LOG_FORMAT"].includes(name)
    )
  )
  const env: Record<string, string> = { ...inherited, PATH: `${shim}:${Deno.env.get("PATH") ?? ""}` }
  const inApp = (text: string) => text.replaceAll("/app", app)
  const skipped: Array<string> = []
  let volume: string | undefined
  let healthcheck: Array<string> | undefined
  let cmd: Array<string> | undefined
  let server: Deno.ChildProcess | undefined
  try {
    for (const step of steps) {
      switch (step.keyword) {
        case "FROM":
        case "USER":
        case "EXPOSE":
          break
        case "WORKDIR":
          strictEqual(step.rest, "/app")
          await Deno.mkdir(app, { recursive: true })
          break
        case "COPY": {
          const parts = step.rest.split(/\s+/).filter((part) => !part.startsWith("--"))
          const target = parts.pop()!.replace(/^\.\/?/, "")
          for (const source of parts) {
            ok(source !== ".", `COPY names what it copies (${step.rest})`)
            const info = await Deno.stat(`${ROOT}${source}`)
            // Docker's rules: a folder's contents go into the target; a file into a target ending in `/`.
            if (info.isDirectory) await copyTree(`${ROOT}${source}`, `${app}/${target}`, ignored, false)
            else {
              const into = target === "" || target.endsWith("/")
              await Deno.mkdir(`${app}/${into ? target : target.slice(0, target.lastIndexOf("/") + 1)}`, {
                recursive: true
              })
              await Deno.copyFile(
                `${ROOT}${source}`,
                `${app}/${into ? `${target}${source.slice(source.lastIndexOf("/") + 1)}` : target}`
              )
            }
          }
          break
        }
        case "RUN": {
          if (step.rest.startsWith("chown ")) {
            skipped.push(step.rest)
            break
          }
          const output = await new Deno.Command("bash", {
            args: ["-c", inApp(step.rest)],
            cwd: app,
            env,
            clearEnv: true,
            stdout: "piped",
            stderr: "piped"
          }).output()
          strictEqual(output.code, 0, `RUN ${step.rest}: ${new TextDecoder().decode(output.stderr)}`)
          break
        }
        case "ENV":
          for (const pair of step.rest.split(/\s+/)) {
            const equals = pair.indexOf("=")
            env[pair.slice(0, equals)] = inApp(pair.slice(equals + 1))
          }
          break
        case "VOLUME":
          volume = inApp(step.rest)
          break
        case "HEALTHCHECK":
          healthcheck = JSON.parse(step.rest.slice(step.rest.indexOf("CMD ") + 4))
          break
        case "CMD":
          cmd = JSON.parse(step.rest)
          break
        default:
          throw new Error(`Unexpected instruction ${step.keyword}`)
      }
    }
    deepStrictEqual(skipped, ["chown deno:deno /app"], "only the root-only chown is skipped")
    // What the image holds (read before the gateway starts and writes its data).
    const top: Array<string> = []
    for await (const entry of Deno.readDir(app)) top.push(entry.name)
    deepStrictEqual(
      top.filter((name) => name !== "node_modules" && name !== "data").sort(),
      ["console", "deno.json", "deno.lock", "migrations", "src"],
      "only what the gateway runs"
    )
    const consoleFiles: Array<string> = []
    for await (const entry of Deno.readDir(`${app}/console`)) consoleFiles.push(entry.name)
    deepStrictEqual(consoleFiles.sort(), ["app.css", "dist", "index.html"], "the console's built page, not its sources")
    const emulator = await Deno.stat(`${app}/emulator`).then(() => true, () => false)
    strictEqual(emulator, false, "no emulator in the image")
    strictEqual(volume, env.SLUICE_DATA_DIR, "the volume is SLUICE_DATA_DIR")
    deepStrictEqual(cmd, ["deno", "task", "start"])

    env.PORT = String(freePort())
    env.HOST = "127.0.0.1"
    server = new Deno.Command(command(cmd!), {
      args: cmd!.slice(1),
      cwd: app,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "null"
    }).spawn()
    let healthy = false
    for (let tries = 0; tries < 240 && !healthy; tries++) {
      const check = await new Deno.Command(command(healthcheck!), {
        args: healthcheck!.slice(1),
        cwd: app,
        env,
        clearEnv: true,
        stdout: "null",
        stderr: "null"
      }).output()
      healthy = check.code === 0
      if (!healthy) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    ok(healthy, "the HEALTHCHECK command passes once the gateway is up")
    server.kill("SIGTERM")
    strictEqual((await server.status).code, 0)
    server = undefined
    const written: Array<string> = []
    for await (const entry of Deno.readDir(volume!)) written.push(entry.name)
    ok(written.length > 0, "the embedded database lives in the volume")
  } finally {
    if (server !== undefined) {
      server.kill("SIGKILL")
      await server.status
    }
    await Deno.remove(scratch, { recursive: true }).catch(() => undefined)
  }
})
