/**
 * Sign in with a username and password (`POST /api/user/login`). On a first
 * start the user `root` signs in with the password set in
 * `SLUICE_ROOT_PASSWORD` or printed once to the gateway's log.
 */
import { useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { type Me, me } from "./state.ts"
import { ErrorText, Field } from "./ui.tsx"

/** The sign-in page. */
export const SignIn = () => {
  const [username, setUsername] = useState("")
  const [password, setPassword] = useState("")
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api("POST", "/api/user/login", { username, password })
      me.value = await api<Me>("GET", "/api/user/self")
    } catch (caught) {
      setError(wordsOf(caught))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin">
      <h1>Sluice</h1>
      <form onSubmit={submit} aria-describedby="signin-error">
        <Field label="Username">
          <input
            name="username"
            autocomplete="username"
            required
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </Field>
        <Field label="Password">
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <ErrorText error={error} id="signin-error" />
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
      <p class="hint">
        First start: sign in as <code>root</code> with the password from <code>SLUICE_ROOT_PASSWORD</code>{" "}
        or the one printed once to the gateway's log, then change it under Account.
      </p>
    </main>
  )
}
