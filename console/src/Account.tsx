/**
 * Account (`GET`/`PUT /api/user/self`): the display name, a password change
 * (the old password, then the new), and the linked sign-in identities, each
 * with an Unlink button (`DELETE /api/user/self/oauth/{provider}`).
 */
import { useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { OAuthButtons } from "./SignIn.tsx"
import { type Me, me } from "./state.ts"
import { ACCOUNT, SIGNIN } from "./strings.ts"
import { ErrorText, Field } from "./ui.tsx"

/** The account page. */
export const Account = (props: { user: Me }) => {
  const [name, setName] = useState(props.user.display_name ?? "")
  const [nameState, setNameState] = useState<{ error: string | null; done: string | null }>({ error: null, done: null })
  const [oldPassword, setOldPassword] = useState("")
  const [password, setPassword] = useState("")
  const [passwordState, setPasswordState] = useState<{ error: string | null; done: string | null }>({
    error: null,
    done: null
  })
  const saveName = async (event: Event) => {
    event.preventDefault()
    try {
      await api("PUT", "/api/user/self", { display_name: name })
      me.value = await api<Me>("GET", "/api/user/self")
      setNameState({ error: null, done: ACCOUNT.saved })
    } catch (caught) {
      setNameState({ error: wordsOf(caught), done: null })
    }
  }
  const [linkState, setLinkState] = useState<{ error: string | null; done: string | null }>({ error: null, done: null })
  const unlink = async (provider: string) => {
    try {
      me.value = await api<Me>("DELETE", `/api/user/self/oauth/${encodeURIComponent(provider)}`)
      setLinkState({ error: null, done: ACCOUNT.unlinked(provider) })
    } catch (caught) {
      setLinkState({ error: wordsOf(caught), done: null })
    }
  }
  const savePassword = async (event: Event) => {
    event.preventDefault()
    try {
      await api("PUT", "/api/user/self", { old_password: oldPassword, password })
      setOldPassword("")
      setPassword("")
      setPasswordState({ error: null, done: ACCOUNT.passwordChanged })
    } catch (caught) {
      setPasswordState({ error: wordsOf(caught), done: null })
    }
  }
  return (
    <section>
      <h1>{ACCOUNT.title}</h1>
      <dl class="cards">
        <div>
          <dt>{ACCOUNT.username}</dt>
          <dd>{props.user.username}</dd>
        </div>
        <div>
          <dt>{ACCOUNT.roleGroup}</dt>
          <dd>{props.user.role}, {props.user.group}</dd>
        </div>
        <div>
          <dt>{ACCOUNT.balance}</dt>
          <dd>{usd(props.user.quota)}</dd>
        </div>
      </dl>
      <form class="panel" onSubmit={saveName} aria-label={ACCOUNT.displayName}>
        <h2>{ACCOUNT.displayName}</h2>
        <Field label={ACCOUNT.displayName}>
          <input name="display_name" maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <ErrorText error={nameState.error} />
        {nameState.done && <p role="status">{nameState.done}</p>}
        <button type="submit">{ACCOUNT.saveName}</button>
      </form>
      <form class="panel" onSubmit={savePassword} aria-label={ACCOUNT.password}>
        <h2>{ACCOUNT.password}</h2>
        <Field label={ACCOUNT.current}>
          <input
            type="password"
            name="old_password"
            autocomplete="current-password"
            value={oldPassword}
            onInput={(e) => setOldPassword(e.currentTarget.value)}
          />
        </Field>
        <Field label={ACCOUNT.fresh}>
          <input
            type="password"
            name="password"
            autocomplete="new-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <ErrorText error={passwordState.error} />
        {passwordState.done && <p role="status">{passwordState.done}</p>}
        <button type="submit">{ACCOUNT.change}</button>
      </form>
      <h2>{ACCOUNT.identities}</h2>
      {props.user.oauth.length === 0 ? <p>{ACCOUNT.noIdentity}</p> : (
        <ul>
          {props.user.oauth.map((provider) => (
            <li key={provider}>
              {provider} <button type="button" onClick={() => unlink(provider)}>{ACCOUNT.unlink(provider)}</button>
            </li>
          ))}
        </ul>
      )}
      <ErrorText error={linkState.error} />
      {linkState.done && <p role="status">{linkState.done}</p>}
      <OAuthButtons verb={SIGNIN.link} />
    </section>
  )
}
