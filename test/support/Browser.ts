/**
 * A browser as the `/api/*` tests need one: `fetch` with a cookie jar (the
 * cookies a response sets are sent back, expired ones dropped) and the CSRF
 * header on every change unless told otherwise.
 */

/** An `/api/*` answer: the HTTP status and the api envelope. */
export interface ApiAnswer<A = unknown> {
  readonly status: number
  readonly success: boolean
  readonly message: string
  readonly data: A
  readonly headers: Headers
}

/** A cookie-keeping client of one gateway. */
export interface Browser {
  readonly cookies: Map<string, string>
  /** Calls `path` with a JSON `body`; `csrf: false` leaves the CSRF header out. */
  readonly call: <A = unknown>(
    method: string,
    path: string,
    body?: unknown,
    options?: { readonly csrf?: boolean; readonly headers?: Record<string, string> }
  ) => Promise<ApiAnswer<A>>
  /** Logs in with a password; throws unless it succeeds. */
  readonly login: (username: string, password: string) => Promise<ApiAnswer>
}

/** The `Set-Cookie` lines of a response, split into name, value and attributes. */
export const setCookies = (headers: Headers): Array<{ name: string; value: string; attributes: string }> =>
  headers.getSetCookie().map((line) => {
    const [pair, ...rest] = line.split(";")
    const index = pair.indexOf("=")
    return { name: pair.slice(0, index).trim(), value: pair.slice(index + 1).trim(), attributes: rest.join(";") }
  })

/** A new browser on `baseUrl`. */
export const browser = (baseUrl: string): Browser => {
  const cookies = new Map<string, string>()
  const call = async <A>(
    method: string,
    path: string,
    body?: unknown,
    options: { readonly csrf?: boolean; readonly headers?: Record<string, string> } = {}
  ): Promise<ApiAnswer<A>> => {
    const headers: Record<string, string> = { ...options.headers }
    if (cookies.size > 0) headers.cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join("; ")
    if (body !== undefined) headers["content-type"] = "application/json"
    if (options.csrf !== false && method !== "GET") headers["x-sluice-csrf"] = "1"
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual"
    })
    for (const cookie of setCookies(response.headers)) {
      if (/max-age=0\b/i.test(cookie.attributes) || cookie.value === "") cookies.delete(cookie.name)
      else cookies.set(cookie.name, cookie.value)
    }
    const text = await response.text()
    let parsed: { success?: boolean; message?: string; data?: A } = {}
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = { message: text }
    }
    return {
      status: response.status,
      success: parsed.success === true,
      message: parsed.message ?? "",
      data: parsed.data as A,
      headers: response.headers
    }
  }
  return {
    cookies,
    call,
    login: async (username, password) => {
      const answer = await call("POST", "/api/user/login", { username, password })
      if (!answer.success) throw new Error(`login of ${username} failed: ${answer.status} ${answer.message}`)
      return answer
    }
  }
}
