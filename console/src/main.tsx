/// <reference lib="dom" />
/**
 * The Sluice web console: a Preact app served at `/` by the gateway, whose
 * only back end is `/api/*`. Pages are named by the URL's hash (`#/keys`).
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { Account } from "./Account.tsx"
import { api, ApiError, wordsOf } from "./api.ts"
import { Audit } from "./Audit.tsx"
import { Batches } from "./Batches.tsx"
import { Channels } from "./Channels.tsx"
import { Dashboard } from "./Dashboard.tsx"
import { Files } from "./Files.tsx"
import { Health } from "./Health.tsx"
import { Keys } from "./Keys.tsx"
import { Logs } from "./Logs.tsx"
import { Playground } from "./Playground.tsx"
import { Pricing } from "./Pricing.tsx"
import { oauthError, SignIn } from "./SignIn.tsx"
import { Tasks } from "./Tasks.tsx"
import { Users } from "./Users.tsx"
import { Webhooks } from "./Webhooks.tsx"
import { type Me, me, route } from "./state.ts"
import { LanguagePicker } from "./LanguagePicker.tsx"
import { APP, NAV } from "./strings.ts"
import { ErrorText } from "./ui.tsx"

/** The pages in the navigation's order; each one's title is `APP.pages[name]` in the current language. */
const PAGES: ReadonlyArray<
  { readonly name: keyof typeof APP.pages; readonly admin?: true; readonly root?: true }
> = [
  { name: "dashboard" },
  { name: "keys" },
  { name: "logs" },
  { name: "tasks" },
  { name: "playground" },
  { name: "batches" },
  { name: "files" },
  { name: "webhooks" },
  { name: "account" },
  { name: "channels", admin: true },
  { name: "health", admin: true },
  { name: "users", admin: true },
  { name: "pricing", admin: true },
  { name: "all-logs", admin: true },
  { name: "audit", admin: true, root: true }
]

/** Whether `user` may see the admin pages (the API checks again on every call). */
const isAdmin = (user: Me): boolean => user.role === "admin" || user.role === "root"

const signOut = async () => {
  await fetch("/api/user/logout", { credentials: "same-origin" })
  me.value = null
  location.hash = "#/dashboard"
}

/** The page for the current hash. */
const Content = (props: { user: Me }) => {
  switch (route.value) {
    case "dashboard":
      return <Dashboard />
    case "keys":
      return <Keys />
    case "logs":
      return <Logs key="own" />
    case "tasks":
      return <Tasks />
    case "playground":
      return <Playground />
    case "sign-in":
      // Signed in already (an identity linked from the account page, or a stale link): the dashboard.
      return (
        <>
          <ErrorText error={oauthError()} />
          <Dashboard />
        </>
      )
    case "batches":
      return <Batches />
    case "files":
      return <Files />
    case "webhooks":
      return <Webhooks admin={isAdmin(props.user)} />
    case "account":
      return <Account user={props.user} />
    case "channels":
      if (isAdmin(props.user)) return <Channels />
      break
    case "health":
      if (isAdmin(props.user)) return <Health />
      break
    case "users":
      if (isAdmin(props.user)) return <Users />
      break
    case "pricing":
      if (isAdmin(props.user)) return <Pricing />
      break
    case "all-logs":
      if (isAdmin(props.user)) return <Logs key="all" admin />
      break
    case "audit":
      if (props.user.role === "root") return <Audit />
      break
  }
  return (
    <section>
      <h1>{APP.notFound}</h1>
      <p>
        {APP.noPage(route.value)} <a href="#/dashboard">{APP.toDashboard}</a>
        {APP.afterLink}
      </p>
    </section>
  )
}

let loadError: string | null = null

/** The app: the sign-in page, or the navigation and the current page. */
const App = () => {
  const [menuOpen, setMenuOpen] = useState(false)
  useEffect(() => {
    api<Me>("GET", "/api/user/self").then(
      (user) => (me.value = user),
      (caught) => {
        if (!(caught instanceof ApiError && caught.status === 401)) loadError = wordsOf(caught)
        me.value = null
      }
    )
  }, [])
  useEffect(() => {
    const name = route.value === "sign-in" ? "dashboard" : PAGES.find((page) => page.name === route.value)?.name
    document.title = me.value ? APP.title(name === undefined ? APP.notFound : APP.pages[name]) : APP.signInTitle
  })
  const user = me.value
  if (user === undefined) return <p class="loading">{APP.loading}</p>
  if (user === null) {
    return (
      <>
        <ErrorText error={loadError} />
        <SignIn />
      </>
    )
  }
  return (
    <>
      <a class="skip" href="#content">{APP.skip}</a>
      <header>
        <span class="brand">Sluice</span>
        <button
          type="button"
          class="menu"
          aria-expanded={menuOpen}
          aria-controls="pages"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          {menuOpen ? NAV.closeMenu : NAV.menu}
        </button>
        <nav id="pages" aria-label={NAV.pages} class={menuOpen ? "open" : undefined} onClick={() => setMenuOpen(false)}>
          {PAGES.filter((page) =>
            (page.admin !== true || isAdmin(user)) && (page.root !== true || user.role === "root")
          ).map((page) => (
            <a key={page.name} href={`#/${page.name}`} aria-current={route.value === page.name ? "page" : undefined}>
              {APP.pages[page.name]}
            </a>
          ))}
        </nav>
        <span class="who">{user.display_name || user.username} ({user.role})</span>
        <LanguagePicker />
        <button type="button" onClick={signOut}>{APP.signOut}</button>
      </header>
      <main id="content" tabIndex={-1}>
        <Content user={user} />
      </main>
    </>
  )
}

render(<App />, document.getElementById("app")!)
