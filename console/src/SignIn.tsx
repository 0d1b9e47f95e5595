/**
 * Sign in with a username and password (`POST /api/user/login`), or with one
 * of the configured OAuth/OIDC providers (their names from `GET
 * /api/status`): the page asks `GET /api/oauth/state` for a state, then sends
 * the browser to `/api/oauth/{provider}/start`; the provider sends it back to
 * the gateway's callback, which sends it on to `/#/dashboard` signed in or to
 * `/#/sign-in?error=…` with the reason. On a first start the user `root`
 * signs in with the password set in `SLUICE_ROOT_PASSWORD` or printed once to
 * the gateway's log.
 */
import { useEffect, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { LanguagePicker } from "./LanguagePicker.tsx"
import { type Me, me } from "./state.ts"
import { SIGNIN } from "./strings.ts"
import { ErrorText, Field } from "./ui.tsx"

/** The reason an OAuth sign-in failed, as the gateway's callback put it in the hash (`#/sign-in?error=…`). */
export const oauthError = (): string | null => {
  const match = /^#\/sign-in\?error=(.*)$/.exec(location.hash)
  if (match === null) return null
  try {
    return decodeURIComponent(match[1])
  } catch {
    return SIGNIN.providerFailed
  }
}

/**
 * One button per configured OAuth/OIDC provider; `verb` is "Sign in" (signed
 * out) or "Link" (on the account page: the identity is linked to the signed-in
 * user).
 */
export const OAuthButtons = (props: { verb: string }) => {
  const [providers, setProviders] = useState<ReadonlyArray<string>>([])
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api<{ oauth_providers?: ReadonlyArray<string> }>("GET", "/api/status").then(
      (status) => setProviders(status.oauth_providers ?? []),
      (caught) => setError(wordsOf(caught))
    )
  }, [])
  const go = async (provider: string) => {
    setError(null)
    try {
      const state = await api<string>("GET", "/api/oauth/state")
      location.assign(
        `/api/oauth/${encodeURIComponent(provider)}/start?state=${encodeURIComponent(state)}`
      )
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  if (providers.length === 0 && error === null) return null
  return (
    <div class="oauth" role="group" aria-label={SIGNIN.providers}>
      {providers.map((provider) => (
        <button key={provider} type="button" onClick={() => go(provider)}>
          {SIGNIN.withProvider(props.verb, provider)}
        </button>
      ))}
      <ErrorText error={error} />
    </div>
  )
}

/** The sign-in page. */
export const SignIn = () => {
  const [username, setUsername] = useState("")
  const [password, setPassword] = useState("")
  const [error, setError] = useState<string | null>(oauthError)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api("POST", "/api/user/login", { username, password })
      me.value = await api<Me>("GET", "/api/user/self")
      if (location.hash.startsWith("#/sign-in")) location.hash = "#/dashboard"
    } catch (caught) {
      setError(wordsOf(caught))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin">
      <h1>Sluice</h1>
      <LanguagePicker />
      <form onSubmit={submit} aria-describedby="signin-error">
        <Field label={SIGNIN.username}>
          <input
            name="username"
            autocomplete="username"
            required
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </Field>
        <Field label={SIGNIN.password}>
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
        <button type="submit" disabled={busy}>{SIGNIN.signIn}</button>
      </form>
      <OAuthButtons verb={SIGNIN.signIn} />
      <p class="hint">
        {SIGNIN.hintBefore}
        <code>root</code>
        {SIGNIN.hintMiddle}
        <code>SLUICE_ROOT_PASSWORD</code>
        {SIGNIN.hintAfter}
      </p>
    </main>
  )
}
