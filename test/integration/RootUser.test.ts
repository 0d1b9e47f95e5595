/**
 * The first start with an empty database creates the root user: with
 * `SLUICE_ROOT_PASSWORD`, or with a generated password written once to the
 * log; a restart on the same database creates nothing and prints nothing.
 * Through `src/main.ts`, as `deno task start` runs it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { browser } from "../support/Browser.ts"
import { freshPostgres } from "../support/Gateway.ts"
import { startMain } from "../support/MainProcess.ts"

const PASSWORD_LINE = /generated password (\S+) /

Deno.test("root user: a generated password is logged once and logs in; a restart prints none", async () => {
  const postgres = await freshPostgres()
  try {
    const first = await startMain({ DATABASE_URL: postgres.url })
    let password: string
    try {
      await new Promise((resolve) => setTimeout(resolve, 200))
      const match = PASSWORD_LINE.exec(first.stdout())
      ok(match !== null, `the log names the password: ${first.stdout()}`)
      password = match[1]
      ok(password.length >= 20)
      const root = browser(first.url)
      const login = await root.login("root", password)
      deepStrictEqual([(login.data as { role: string }).role, (login.data as { username: string }).username], [
        "root",
        "root"
      ])
      const wrong = await browser(first.url).call("POST", "/api/user/login", {
        username: "root",
        password: "guess-1234"
      })
      strictEqual(wrong.success, false)
    } finally {
      first.signal("SIGTERM")
      await first.exited
    }
    const second = await startMain({ DATABASE_URL: postgres.url, SLUICE_ROOT_PASSWORD: "ignored-after-first-start" })
    try {
      await new Promise((resolve) => setTimeout(resolve, 200))
      ok(!PASSWORD_LINE.test(second.stdout()), "no second password")
      await browser(second.url).login("root", password)
      const ignored = await browser(second.url).call("POST", "/api/user/login", {
        username: "root",
        password: "ignored-after-first-start"
      })
      strictEqual(ignored.success, false)
    } finally {
      second.signal("SIGTERM")
      await second.exited
    }
  } finally {
    await postgres.drop()
  }
})

Deno.test("root user: SLUICE_ROOT_PASSWORD sets the first start's password and is not logged", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "sluice_root_" })
  try {
    const main = await startMain({ SLUICE_DATA_DIR: `${dataDir}/data`, SLUICE_ROOT_PASSWORD: "chosen-root-pass-1" })
    try {
      await browser(main.url).login("root", "chosen-root-pass-1")
      ok(!main.stdout().includes("chosen-root-pass-1"))
      ok(!PASSWORD_LINE.test(main.stdout()))
    } finally {
      main.signal("SIGTERM")
      const { stderr } = await main.exited
      ok(!stderr.includes("chosen-root-pass-1"))
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true })
  }
})
