/**
 * What a video wire format offers the video relay and the task poller: the
 * submit call that starts an upstream task from a canonical `VideoRequest`
 * (and, where the vendor has one, the remix call), how to read the upstream's
 * task id from its answer, the poll call and how to read its answer into an
 * `UpstreamTaskState`, the content call, and how to classify an error answer.
 * Paths are relative to the channel's root; URL and headers (key) come from
 * the channel type's `VideoAdapter` (`upstreams/VideoAdapter.ts`).
 *
 * @since 0.1.0
 */
import type { UpstreamTaskState, VideoRequest } from "../../canonical/Video.ts"
import type { UpstreamFailed, UpstreamFailureKind } from "../../errors/GatewayError.ts"

/** The video wire formats. @category models */
export type VideoFormatName = "openai" | "ark" | "gemini" | "kling"

/** One upstream call: method, path below the channel root, and body (JSON or a multipart form). @category models */
export interface VideoCall {
  readonly method: "GET" | "POST"
  /** Below the channel root, starting with `/`; an absolute `https://` URL only for a vendor-given content URL. */
  readonly path: string
  readonly body?:
    | { readonly _tag: "json"; readonly body: Record<string, unknown> }
    | { readonly _tag: "form"; readonly form: FormData }
    | undefined
}

/** One video wire format, as the relay and the poller use it on an upstream. @category models */
export interface VideoWire {
  readonly name: VideoFormatName
  /** The call that submits `request` as the upstream's `model`; media refs are already resolved to URLs. */
  readonly submit: (request: VideoRequest, model: string) => VideoCall
  /** The call that remixes upstream task `upstreamId` with `request`'s prompt, where the vendor can remix. */
  readonly remix?: ((upstreamId: string, request: VideoRequest, model: string) => VideoCall) | undefined
  /**
   * A 2xx submit answer (parsed JSON) to `call` (the submit or remix call made, for a vendor whose task ids are
   * only readable on the path they were made on): the upstream task id, or `UpstreamFailed` (`bad-body`).
   */
  readonly decodeSubmit: (json: unknown, call?: VideoCall) => { readonly upstreamId: string } | UpstreamFailed
  /** The call that polls upstream task `upstreamId` (`model` for vendors whose path names it). */
  readonly poll: (upstreamId: string, model: string) => VideoCall
  /**
   * A 2xx poll answer (parsed JSON), the vendor's statuses mapped by its synonym table. `channelUrl` is the
   * URL the poll was sent to (any URL on the channel's video API will do; only its origin is read): a content
   * location that must be fetched with the key (`withKey`) is refused (`bad-body`) unless it has that origin,
   * so the key never goes to another host.
   */
  readonly decodePoll: (json: unknown, channelUrl: string) => UpstreamTaskState | UpstreamFailed
  /** The call that fetches the bytes of a completed task (`state` from its last poll). */
  readonly content: (upstreamId: string, state: UpstreamTaskState) => VideoCall
  /** The failure kind and caller-safe message of an upstream error answer. */
  readonly classifyError: (
    status: number,
    text: string
  ) => { readonly kind: UpstreamFailureKind; readonly message: string }
}
