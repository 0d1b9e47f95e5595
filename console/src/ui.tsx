/**
 * Small pieces every page uses: a labelled field, an error shown in words,
 * dates as text.
 */
import type { ComponentChildren } from "preact"

/** A label around one control, so it is named for assistive technology. */
export const Field = (props: { label: string; children: ComponentChildren }) => (
  <label class="field">
    <span>{props.label}</span>
    {props.children}
  </label>
)

/** An API error in words, announced to screen readers, next to what caused it. */
export const ErrorText = (props: { error: string | null; id?: string }) =>
  props.error === null ? null : <p class="error" role="alert" id={props.id}>{props.error}</p>

/** Epoch seconds as `YYYY-MM-DD HH:MM:SS` UTC. */
export const timeText = (seconds: number | null): string =>
  seconds === null ? "never" : new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC"
