/**
 * Requests open at once per client address: a caller that opens many slow
 * requests (trickled bodies, streams it never reads) must not hold every
 * handler. A request is open from the moment the server hands it over until
 * its answer has been sent or has failed (`Deno.serve`'s `info.completed`, so
 * a stream counts until its end); past `max` open from one address, the next is
 * refused before routing with 429 `too_many_requests` and `Retry-After: 1`,
 * in the api envelope under `/api/`, else in the gateway envelope.
 *
 * The address is the caller's as per-address limits see it
 * (`openRequestAddressOf`: behind a trusted proxy the client it names; a
 * request forwarded by a proxy nobody listed is not counted when that proxy
 * is on loopback or a private network, since its address is everyone's, and
 * is counted against a public peer, which a forwarding header must not let
 * escape the bound), an IPv6
 * address by its /64 (`addressKey`). Open connections that send no request
 * (an unfinished head, idle keep-alive) never reach the handler: they are the
 * reverse proxy's to bound (docs/OPERATING.md, "Slow clients").
 *
 * @since 0.1.0
 */
import { apiStatus, envelopeBody, toProblem } from "../errors/Envelope.ts"
import { RateLimited } from "../errors/GatewayError.ts"
import { addressKey, openRequestAddressOf } from "./ClientAddress.ts"
import { errorHeaders } from "./Respond.ts"

/** The counts of one gateway. @category models */
export interface OpenRequests {
  /**
   * Counts `request` as open until `completed` settles; the refusal to answer
   * with instead when its address already has `max` open. Requests with no
   * address to count are let through.
   */
  readonly admit: (request: Request, completed: Promise<void>, api: boolean) => Response | undefined
}

const refusal = (max: number, api: boolean): Response => {
  const error = new RateLimited({
    message: `Too many requests open from this address (at most ${max}); try again when one has finished.`,
    retryAfterSeconds: 1
  })
  const problem = toProblem(error)
  return Response.json(envelopeBody(api ? "api" : "gateway", problem), {
    status: api ? apiStatus(problem) : problem.status,
    headers: errorHeaders(error)
  })
}

/** The key an address is counted under: IPv4 as it is, IPv6 by its /64. */
const keyOf = (address: string): string => address.includes(":") ? addressKey(address) : address

/**
 * Counts of requests open per address, at most `max` each; `max` 0: no bound.
 *
 * @category constructors
 */
export const makeOpenRequests = (max: number): OpenRequests => {
  const open = new Map<string, number>()
  const leave = (key: string) => {
    const count = open.get(key) ?? 0
    if (count <= 1) open.delete(key)
    else open.set(key, count - 1)
  }
  return {
    admit: (request, completed, api) => {
      if (max <= 0) return undefined
      const address = openRequestAddressOf(request)
      if (address === undefined) return undefined
      const key = keyOf(address)
      const count = open.get(key) ?? 0
      if (count >= max) return refusal(max, api)
      open.set(key, count + 1)
      const done = () => leave(key)
      completed.then(done, done)
      return undefined
    }
  }
}
