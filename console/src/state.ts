/**
 * The console's shared state: the signed-in user (or `null` when signed out,
 * `undefined` while the first check runs) and the page named by the URL's
 * hash (`#/keys`; a query after `?` in the hash is not part of the name).
 */
import { signal } from "@preact/signals"

/** The caller as `GET /api/user/self` answers it. */
export interface Me {
  readonly id: number
  readonly username: string
  readonly display_name: string | null
  readonly email: string | null
  readonly role: string
  readonly group: string
  readonly quota: number
  readonly used_quota: number
  readonly request_count: number
  readonly oauth: ReadonlyArray<string>
}

/** The signed-in user; `undefined` until known, `null` when signed out. */
export const me = signal<Me | null | undefined>(undefined)

/** The page in the hash, without `#/` (default `dashboard`). */
export const route = signal(routeOf(location.hash))

function routeOf(hash: string): string {
  const name = hash.replace(/^#\/?/, "").replace(/\?.*$/, "")
  return name === "" ? "dashboard" : name
}

addEventListener("hashchange", () => {
  route.value = routeOf(location.hash)
})
