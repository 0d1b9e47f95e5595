/**
 * The stream bridge: upstream SSE events → the upstream format's decoder →
 * canonical parts → the caller's encoder → framed text, with what the batch
 * meant for billing (usage, delivered characters, the end or a failure) as a
 * plain value. The steps are pure functions of `(state, events)`, tested with
 * plain values. Around them, the bridge is a state machine over the upstream's
 * reads (`BridgePhase`: streaming, held awaiting the bill, billed, done),
 * pure too (`bridgeRead`, `bridgeBill`); `bridgeBody` runs it as an Effect
 * `Stream` over the reads, one upstream read (one batch of events) per step,
 * with the bill made between a hold and what it held back.
 *
 * A same-format stream is passed event by event (still decoded, for billing
 * and to catch an in-band error), less what the format hides from the caller
 * (`Passthrough.hides`); another format's stream is translated.
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import { Sse } from "effect/encoding"
import type { MeterDelta } from "../../billing/Meter.ts"
import type { OutputPart } from "../../canonical/Content.ts"
import type { StreamPart } from "../../canonical/StreamPart.ts"
import type { Usage } from "../../canonical/Usage.ts"
import { toProblem } from "../../errors/Envelope.ts"
import { type LedgerUnavailable, UpstreamFailed } from "../../errors/GatewayError.ts"
import { type DecodeStep, type Format, isFormat, type ResponseMeta, type UpstreamWire } from "../../formats/Format.ts"

/** What stays fixed over one answer. @category models */
export interface BridgeConfig {
  /** The caller's format. */
  readonly inbound: Format<unknown, unknown>
  /** The upstream's wire (a `Format`, or an outbound-only wire such as Bedrock's Converse). */
  readonly wire: UpstreamWire
  /**
   * Same format (`sameFormatWire`, so `wire` is a `Format`): events are forwarded as received (less hidden ones, each
   * as its `passthrough.event` shows it), not re-encoded.
   */
  readonly passthrough: boolean
  readonly meta: ResponseMeta
  /** Generate-content without `alt=sse`: one JSON array instead of SSE frames. */
  readonly jsonArray: boolean
  /** Assemble the answer's content (for `onAnswer`, e.g. the Responses store). */
  readonly assemble: boolean
}

/** The bridge between two reads. @category models */
export interface BridgeState {
  readonly decoded: unknown
  readonly encoded: unknown
  /**
   * The first event's decoder step, already taken (by the failover probe, or by the step that held the events back
   * at the final usage); used for the first event.
   */
  readonly firstStep: DecodeStep<unknown> | undefined
  /** `firstStep`'s parts were metered already (the step that held the events back metered them). */
  readonly firstMetered: boolean
  /**
   * Events held back at the final usage, from the one that carried it: the answer is billed (and the bill made
   * durable) before they are framed, so no byte of the answer's end leaves unbilled. `undefined`: none held.
   */
  readonly held: ReadonlyArray<Sse.Event> | undefined
  /** The bill's cost was written into the caller's final usage (`Format.withCost`). */
  readonly costWritten: boolean
  /** The JSON array framing has written its `[`. */
  readonly opened: boolean
  /** The end, or a failure, has been framed: nothing more is written. */
  readonly done: boolean
  /** The answer's parts by block index (only when `assemble`). */
  readonly assembled: ReadonlyMap<number, OutputPart> | undefined
}

/** One step's result: the next state, the framed text to write (maybe empty), and the billing delta. */
export type BridgeStep = readonly [BridgeState, string, MeterDelta]

/**
 * The state before the first event; `firstStep` is the failover probe's
 * decoding of it.
 *
 * @category constructors
 */
export const bridgeInitial = (config: BridgeConfig, firstStep: DecodeStep<unknown> | undefined): BridgeState => ({
  decoded: config.wire.streamDecoder.initial(),
  encoded: config.inbound.streamEncoder.initial(config.meta),
  firstStep,
  firstMetered: false,
  held: undefined,
  costWritten: false,
  opened: false,
  done: false,
  assembled: config.assemble ? new Map() : undefined
})

/** A delta being built over one step. */
interface Tally {
  usage: Usage | undefined
  final: boolean
  finished: boolean
  deliveredCharacters: number
  deliveredText: Array<string> | undefined
  failure: UpstreamFailed | undefined
  answerId: string | undefined
  answer: ReadonlyArray<OutputPart> | undefined
}

const tally = (): Tally => ({
  usage: undefined,
  final: false,
  finished: false,
  deliveredCharacters: 0,
  deliveredText: undefined,
  failure: undefined,
  answerId: undefined,
  answer: undefined
})

/** Meters `parts` into `delta`: usage, delivered characters, the final usage. */
const meter = (parts: ReadonlyArray<StreamPart>, delta: Tally): void => {
  for (const part of parts) {
    switch (part._tag) {
      case "UsageUpdate":
        // After the final usage, later updates change nothing: the bill is made.
        if (delta.final) break
        delta.usage = part.usage
        if (part.final === true) delta.final = true
        break
      case "Finish":
        delta.finished = true
        break
      case "TextDelta":
      case "ReasoningDelta":
        delta.deliveredCharacters += part.text.length
        ;(delta.deliveredText ??= []).push(part.text)
        break
      case "ToolInputDelta":
        delta.deliveredCharacters += part.json.length
        ;(delta.deliveredText ??= []).push(part.json)
        break
    }
  }
}

/** The assembled answer after `parts`, and its id and final content into `delta`. */
const assemble = (
  config: BridgeConfig,
  assembled: ReadonlyMap<number, OutputPart>,
  parts: ReadonlyArray<StreamPart>,
  delta: Tally
): ReadonlyMap<number, OutputPart> => {
  let next = assembled
  const update = (index: number, part: OutputPart) => {
    if (next === assembled) next = new Map(assembled)
    ;(next as Map<number, OutputPart>).set(index, part)
  }
  for (const part of parts) {
    switch (part._tag) {
      case "ResponseStart":
        delta.answerId = config.passthrough ? part.id : config.meta.id
        break
      case "BlockStart":
        update(
          part.index,
          part.block.type === "tool-call"
            ? { type: "tool-call", callId: part.block.callId, name: part.block.name, arguments: "" }
            : part.block.type === "reasoning"
            ? { type: "reasoning", text: "" }
            : { type: "text", text: "" }
        )
        break
      case "TextDelta":
      case "ReasoningDelta": {
        const current = next.get(part.index)
        if (current !== undefined && current.type !== "tool-call") {
          update(part.index, { ...current, text: current.text + part.text })
        }
        break
      }
      case "ReasoningSignature": {
        const current = next.get(part.index)
        if (current?.type === "reasoning") {
          update(part.index, { ...current, signature: part.signature, origin: part.origin })
        }
        break
      }
      case "ToolInputDelta": {
        const current = next.get(part.index)
        if (current?.type === "tool-call") update(part.index, { ...current, arguments: current.arguments + part.json })
        break
      }
      case "Finish":
        delta.answer = [...next.entries()].sort((a, b) => a[0] - b[0]).map(([, value]) => value)
        break
    }
  }
  return next
}

/**
 * Framed text being built over one step: events in the caller's framing (SSE,
 * or the JSON array, whose `[` is written before its first element).
 */
interface Framing {
  text: string
  opened: boolean
  /** The cost (USD) to write into the caller's final usage, until written; `undefined`: none to write. */
  cost: number | undefined
  costWritten: boolean
}

/** A framing for one step: `cost` is written into the first event that carries the final usage. */
const framingOf = (state: BridgeState, cost: number | undefined): Framing => ({
  text: "",
  opened: state.opened,
  cost: state.costWritten ? undefined : cost,
  costWritten: state.costWritten
})

/** Appends `event` to `framing` in the caller's framing (with the cost, when it carries the final usage). */
const frame = (config: BridgeConfig, framing: Framing, given: Sse.Event): void => {
  let event = given
  if (framing.cost !== undefined) {
    const withCost = config.inbound.withCost(event, framing.cost)
    if (withCost !== undefined) {
      event = withCost
      framing.cost = undefined
      framing.costWritten = true
    }
  }
  if (config.jsonArray) {
    framing.text += (framing.opened ? ",\r\n" : "[") + event.data
    framing.opened = true
  } else {
    framing.text += Sse.encoder.write(event)
  }
}

/** Encodes `parts` in the caller's format onto `framing`; returns the encoder's next state. */
const encodeParts = (
  config: BridgeConfig,
  encoded: unknown,
  parts: ReadonlyArray<StreamPart>,
  framing: Framing
): unknown => {
  let state = encoded
  for (const part of parts) {
    const step = config.inbound.streamEncoder.step(state, part)
    state = step[0]
    for (const event of step[1]) frame(config, framing, event)
  }
  return state
}

/**
 * The step's result once `framing` is complete: the next state (one object of
 * a fixed shape, built once per step) and the framed text (the JSON array
 * closed when `done`).
 */
const finishStep = (
  config: BridgeConfig,
  decoded: unknown,
  encoded: unknown,
  firstStep: DecodeStep<unknown> | undefined,
  done: boolean,
  assembled: ReadonlyMap<number, OutputPart> | undefined,
  framing: Framing,
  delta: Tally
): BridgeStep => {
  if (done && config.jsonArray) framing.text += framing.opened ? "]" : "[]"
  return [
    {
      decoded,
      encoded,
      firstStep,
      firstMetered: false,
      held: undefined,
      costWritten: framing.costWritten,
      opened: framing.opened,
      done,
      assembled
    },
    framing.text,
    delta
  ]
}

/**
 * The caller's error event for `error` (never an end marker), ending the
 * answer. The delta carries an upstream failure (the answer failed); a ledger
 * that could not make the bill durable leaves the meter alone (the bill is
 * made).
 *
 * @category bridge
 */
export const bridgeFail = (
  config: BridgeConfig,
  state: BridgeState,
  error: UpstreamFailed | LedgerUnavailable
): BridgeStep =>
  failWith(config, state.decoded, state.encoded, state.assembled, error, framingOf(state, undefined), tally())

/** The caller's error event for `error` after what `framing` holds, ending the answer. */
const failWith = (
  config: BridgeConfig,
  decoded: unknown,
  encoded: unknown,
  assembled: ReadonlyMap<number, OutputPart> | undefined,
  error: UpstreamFailed | LedgerUnavailable,
  framing: Framing,
  delta: Tally
): BridgeStep => {
  if (error._tag === "UpstreamFailed") delta.failure = error
  for (const event of config.inbound.streamEncoder.fail(encoded, toProblem(error))) frame(config, framing, event)
  return finishStep(config, decoded, encoded, undefined, true, assembled, framing, delta)
}

/**
 * One upstream read: each event decoded (the first with the probe's step),
 * metered, and forwarded or translated. An in-band upstream error ends the
 * answer with the caller's error event. At the event that carries the final
 * usage the step stops: that event and the rest are held back (`held`), so
 * the caller of the bridge can bill the answer before any of them is framed;
 * `cost` (USD), once known, is written into the caller's final usage
 * (`Format.withCost`).
 *
 * @category bridge
 */
export const bridgeEvents = (
  config: BridgeConfig,
  state: BridgeState,
  events: ReadonlyArray<Sse.Event>,
  cost?: number | undefined
): BridgeStep => {
  const framing = framingOf(state, cost)
  const delta = tally()
  const decoder = config.wire.streamDecoder
  let decoded = state.decoded
  let encoded = state.encoded
  let assembled = state.assembled
  let firstStep = state.firstStep
  let metered = state.firstMetered
  for (let index = 0; index < events.length; index++) {
    const event = events[index]
    const result = firstStep ?? decoder.step(decoded, event)
    firstStep = undefined
    if (result instanceof UpstreamFailed) {
      return failWith(config, decoded, encoded, assembled, result, framing, delta)
    }
    const parts = result[1]
    if (!metered) {
      meter(parts, delta)
      if (delta.final) {
        // Held back from this event on, its decoding kept (and metered): the bill comes first.
        const [next, text] = finishStep(config, decoded, encoded, result, false, assembled, framing, delta)
        return [{ ...next, firstMetered: true, held: events.slice(index) }, text, delta]
      }
    }
    metered = false
    decoded = result[0]
    if (assembled !== undefined) assembled = assemble(config, assembled, parts, delta)
    if (!config.passthrough) encoded = encodeParts(config, encoded, parts, framing)
    else if (isFormat(config.wire) && !config.wire.passthrough.hides(parts, config.meta)) {
      frame(config, framing, config.wire.passthrough.event?.(event) ?? event)
    }
  }
  return finishStep(config, decoded, encoded, firstStep, false, assembled, framing, delta)
}

/**
 * The upstream's body ended: the format's last events (with `cost`, USD, in
 * the caller's final usage when given), or, when the upstream never sent its
 * end marker, the caller's error event for a broken stream. Pure: called twice
 * with the same state it gives the same events (the relay meters the end
 * before it knows the cost).
 *
 * @category bridge
 */
export const bridgeEnd = (config: BridgeConfig, state: BridgeState, cost?: number | undefined): BridgeStep => {
  const decoder = config.wire.streamDecoder
  if (!decoder.complete(state.decoded)) {
    return bridgeFail(
      config,
      state,
      new UpstreamFailed({ kind: "stream-broken", status: 0, message: "The upstream stream ended early." })
    )
  }
  const framing = framingOf(state, cost)
  const delta = tally()
  const parts = decoder.flush(state.decoded)
  meter(parts, delta)
  const assembled = state.assembled === undefined ? undefined : assemble(config, state.assembled, parts, delta)
  const encoded = config.passthrough ? state.encoded : encodeParts(config, state.encoded, parts, framing)
  if (!config.passthrough) {
    for (const event of config.inbound.streamEncoder.end(encoded)) {
      frame(config, framing, event)
    }
  }
  return finishStep(config, state.decoded, encoded, undefined, true, assembled, framing, delta)
}

/**
 * One read of the upstream's body, as the bridge takes it: a batch of SSE
 * events (one network read's worth), the body's end, or the read failing.
 *
 * @category models
 */
export type UpstreamRead =
  | { readonly _tag: "Events"; readonly events: ReadonlyArray<Sse.Event> }
  | { readonly _tag: "End" }
  | { readonly _tag: "Failed"; readonly error: UpstreamFailed }

/**
 * The bill the held-back end waited for: made durable, with the cost (USD) to
 * write into the caller's final usage (`undefined`: none to write), or lost
 * (the ledger could not make it durable: the end is withheld).
 *
 * @category models
 */
export type BillOutcome =
  | { readonly _tag: "Made"; readonly cost: number | undefined }
  | { readonly _tag: "Lost"; readonly error: LedgerUnavailable }

/**
 * Where the bridge stands between two reads. `Streaming`: no final usage yet,
 * every read framed as it comes. `Held`: the final usage arrived (or the
 * upstream ended without one) and the answer is to be billed before any of
 * its end is framed; `held` is what waits: the events from the one that
 * carried the final usage on, or `"end"` (the format's last events, already
 * metered). `Billed`: the bill is made and durable; the rest is framed with
 * `cost` (USD, or `undefined`) in the caller's final usage. `Done`: the end,
 * or an error event, is framed; nothing more is read or written.
 *
 * @category models
 */
export type BridgePhase =
  | { readonly _tag: "Streaming"; readonly state: BridgeState }
  | { readonly _tag: "Held"; readonly state: BridgeState; readonly held: ReadonlyArray<Sse.Event> | "end" }
  | { readonly _tag: "Billed"; readonly state: BridgeState; readonly cost: number | undefined }
  | { readonly _tag: "Done" }

/**
 * One transition of the bridge: the next phase, the framed text to write
 * (maybe empty), and the billing deltas to meter, in order (maybe none).
 *
 * @category models
 */
export type BridgeTransition = readonly [BridgePhase, string, ReadonlyArray<MeterDelta>]

const done: BridgePhase = { _tag: "Done" }

/**
 * The bridge before the first read: streaming from `bridgeInitial`.
 *
 * @category constructors
 */
export const bridgeStart = (config: BridgeConfig, firstStep: DecodeStep<unknown> | undefined): BridgePhase => ({
  _tag: "Streaming",
  state: bridgeInitial(config, firstStep)
})

/**
 * `events` through `bridgeEvents` from `state`: the phase after them (held at
 * the final usage unless `billed`, when what was held back goes on at once
 * with its cost), their framed text and deltas.
 */
const eventsFrom = (
  config: BridgeConfig,
  state: BridgeState,
  events: ReadonlyArray<Sse.Event>,
  billed: { readonly cost: number | undefined } | undefined
): BridgeTransition => {
  const cost = billed?.cost
  let [next, text, delta] = bridgeEvents(config, state, events, cost)
  const deltas = [delta]
  // Billed already (a second final usage after the first): nothing waits, the held events are framed now.
  while (billed !== undefined && next.held !== undefined && !next.done) {
    const [after, more, moreDelta] = bridgeEvents(config, { ...next, held: undefined }, next.held, cost)
    next = after
    text += more
    deltas.push(moreDelta)
  }
  if (next.done) return [done, text, deltas]
  if (next.held !== undefined) {
    return [{ _tag: "Held", state: { ...next, held: undefined }, held: next.held }, text, deltas]
  }
  return [
    billed === undefined ? { _tag: "Streaming", state: next } : { _tag: "Billed", state: next, cost },
    text,
    deltas
  ]
}

/**
 * The bridge takes one upstream read (pure). Events are decoded, metered and
 * framed; at the final usage the bridge is `Held`, the events from it on kept
 * back. The upstream's end, before a bill, is metered and held (`"end"`),
 * unless the stream broke (the upstream never sent its end marker): then the
 * caller's error event ends it, billed later as cut. A failed read ends the
 * answer with the caller's error event.
 *
 * @category bridge
 */
export const bridgeRead = (
  config: BridgeConfig,
  phase: Extract<BridgePhase, { readonly _tag: "Streaming" | "Billed" }>,
  read: UpstreamRead
): BridgeTransition => {
  const billed = phase._tag === "Billed" ? phase : undefined
  switch (read._tag) {
    case "Events":
      return eventsFrom(config, phase.state, read.events, billed)
    case "Failed": {
      const [, text, delta] = bridgeFail(config, phase.state, read.error)
      return [done, text, [delta]]
    }
    case "End": {
      const [, text, delta] = bridgeEnd(config, phase.state, billed?.cost)
      if (billed !== undefined || delta.failure !== undefined) return [done, text, [delta]]
      return [{ _tag: "Held", state: phase.state, held: "end" }, "", [delta]]
    }
  }
}

/**
 * The held-back bridge takes the bill's outcome (pure). Made: what was held
 * is framed, with the cost in the caller's final usage, and the bridge goes on
 * billed (or is done, when the end was held). Lost: what was held (the final
 * usage and the end) is dropped and the caller's error event for the ledger
 * ends the answer, never its end marker.
 *
 * @category bridge
 */
export const bridgeBill = (
  config: BridgeConfig,
  phase: Extract<BridgePhase, { readonly _tag: "Held" }>,
  bill: BillOutcome
): BridgeTransition => {
  if (bill._tag === "Lost") return [done, bridgeFail(config, phase.state, bill.error)[1], []]
  // The end was metered when it was held: only its text now, with the cost.
  if (phase.held === "end") return [done, bridgeEnd(config, phase.state, bill.cost)[1], []]
  return eventsFrom(config, phase.state, phase.held, bill)
}

/** Marks the bridge's last output: the body ends after the chunk it closes (no read after it). */
const ended: unique symbol = Symbol("sluice/relay/pipeline/StreamBridge/ended")

/**
 * The upstream's body as reads: `first` (already read by the failover probe),
 * then `next` until its end (`undefined`) or a failure, both as a last read.
 */
const upstreamReads = (
  first: ReadonlyArray<Sse.Event>,
  next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>
): Stream.Stream<UpstreamRead> => {
  const end: UpstreamRead = { _tag: "End" }
  const read = Effect.match(next, {
    onFailure: (error): readonly [UpstreamRead, "ended"] => [{ _tag: "Failed", error }, "ended"],
    onSuccess: (events): readonly [UpstreamRead, "reading" | "ended"] =>
      events === undefined ? [end, "ended"] : [{ _tag: "Events", events }, "reading"]
  })
  return Stream.unfold<"first" | "reading" | "ended", UpstreamRead, never, never>("first", (cursor) => {
    if (cursor === "reading") return read
    if (cursor === "ended") return Effect.succeed(undefined)
    return Effect.succeed([{ _tag: "Events", events: first }, "reading"] as const)
  })
}

/**
 * The caller's answer body as a `Stream` of bytes: the upstream's reads (the
 * first batch, `first`, already read and decoded by the failover probe:
 * `firstStep`; then `next` until the end) through the bridge's state machine,
 * one read per step; each delta goes to `onDelta` before its bytes are handed
 * on. `onFinal` runs once, before any byte of the answer's end leaves: when
 * the final usage arrives (the events from it on held back until it is done),
 * or at the upstream's end when none came; it bills the answer, makes the bill
 * durable and gives the cost (USD) to write into the caller's final usage, or
 * `undefined` to write none; when it fails (`LedgerUnavailable`: the bill
 * could not be made durable) the held events are dropped and the caller's
 * error event ends the answer. The upstream's end, early end or failure
 * becomes the format's last events, then the stream ends. Never fails.
 *
 * @category bridge
 */
export const bridgeBody = (
  config: BridgeConfig,
  firstStep: DecodeStep<unknown>,
  first: ReadonlyArray<Sse.Event>,
  next: Effect.Effect<ReadonlyArray<Sse.Event> | undefined, UpstreamFailed>,
  onDelta: (delta: MeterDelta) => void,
  onFinal: Effect.Effect<number | undefined, LedgerUnavailable> = Effect.succeed(undefined)
): Stream.Stream<Uint8Array> => {
  const bytes = new TextEncoder()
  const bill = Effect.match(onFinal, {
    onFailure: (error): BillOutcome => ({ _tag: "Lost", error }),
    onSuccess: (cost): BillOutcome => ({ _tag: "Made", cost })
  })
  type Output = Uint8Array | typeof ended
  const meter = (deltas: ReadonlyArray<MeterDelta>) => {
    for (const delta of deltas) onDelta(delta)
  }
  const output = (phase: BridgePhase, text: string): readonly [BridgePhase, ReadonlyArray<Output>] => {
    const last = phase._tag === "Done"
    if (text === "") return [phase, last ? [ended] : []]
    return [phase, last ? [bytes.encode(text), ended] : [bytes.encode(text)]]
  }
  const step = (
    phase: BridgePhase,
    read: UpstreamRead
  ): Effect.Effect<readonly [BridgePhase, ReadonlyArray<Output>]> => {
    // Never reached: a hold is billed within its read's step, and nothing is read once done.
    if (phase._tag === "Held" || phase._tag === "Done") return Effect.succeed([done, [ended]])
    const [after, text, deltas] = bridgeRead(config, phase, read)
    meter(deltas)
    if (after._tag !== "Held") return Effect.succeed(output(after, text))
    return Effect.map(bill, (outcome) => {
      const [last, rest, more] = bridgeBill(config, after, outcome)
      meter(more)
      return output(last, text + rest)
    })
  }
  return upstreamReads(first, next).pipe(
    Stream.mapAccumEffect(() => bridgeStart(config, firstStep), step),
    Stream.takeWhile((chunk): chunk is Uint8Array => chunk !== ended)
  )
}
