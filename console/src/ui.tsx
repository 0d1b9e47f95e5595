/**
 * Small pieces every page uses: a labelled field, an error shown in words,
 * dates as text.
 */
import type { ComponentChildren } from "preact"
import { COMMON } from "./strings.ts"

/** A label around one control, so it is named for assistive technology. */
export const Field = (props: { label: string; children: ComponentChildren }) => (
  <label class="field">
    <span>{props.label}</span>
    {props.children}
  </label>
)

/**
 * A table wider than a narrow screen scrolls sideways inside this frame, so the page itself does not; the frame is a
 * region named `label` (the table's caption) that the keyboard can focus and scroll, as axe's
 * `scrollable-region-focusable` asks of a region with nothing focusable in it.
 */
export const TableScroll = (props: { label: string; children: ComponentChildren }) => (
  <div class="scroll" role="region" aria-label={props.label} tabIndex={0}>
    {props.children}
  </div>
)

/** An API error in words, announced to screen readers, next to what caused it. */
export const ErrorText = (props: { error: string | null; id?: string }) =>
  props.error === null ? null : <p class="error" role="alert" id={props.id}>{props.error}</p>

/** Epoch seconds as `YYYY-MM-DD HH:MM:SS` UTC. */
export const timeText = (seconds: number | null): string =>
  seconds === null ? COMMON.never : new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC"

/** Previous / next buttons and "Page n of m" for a server-paginated list, labelled `label`. */
export const Pager = (props: { label: string; page: number; pages: number; setPage: (page: number) => void }) => (
  <nav class="pager" aria-label={props.label}>
    <button
      type="button"
      disabled={props.page <= 1}
      onClick={() =>
        props.setPage(props.page - 1)}
    >
      {COMMON.previous}
    </button>
    <span>{COMMON.pageOf(props.page, props.pages)}</span>
    <button
      type="button"
      disabled={props.page >= props.pages}
      onClick={() =>
        props.setPage(props.page + 1)}
    >
      {COMMON.next}
    </button>
  </nav>
)
