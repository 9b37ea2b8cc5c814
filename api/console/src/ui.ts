// Shared view pieces: the htm binding, status messages, page headings that take focus, formatters.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.ts';

export { html };

/** The page's h1; it receives focus when the page is shown, so screen readers announce the new page. */
export function PageTitle({ children }: { children: unknown }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus();
  }, []);
  return html`<h1 tabindex="-1" ref=${ref}>${children}</h1>`;
}

export type Notice = { kind: 'error' | 'success' | 'info'; text: string } | null;

/** An error is announced at once (role=alert); other notices politely (role=status). */
export function NoticeView({ notice }: { notice: Notice }) {
  if (!notice) return html`<div role="status" class="sr-live"></div>`;
  return notice.kind === 'error'
    ? html`<p class="notice error" role="alert">${notice.text}</p>`
    : html`<p class="notice ${notice.kind}" role="status">${notice.text}</p>`;
}

export const errorNotice = (err: unknown): Notice => ({
  kind: 'error',
  text: err instanceof ApiError ? `${err.message} (${err.code})` : String(err),
});

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export const when = (iso: string | null | undefined, never = 'never') => (iso ? dateTime.format(new Date(iso)) : never);
export const num = (n: number) => new Intl.NumberFormat().format(n);

/** A <time> element with the exact instant as its machine-readable value. */
export const Time = ({ iso, never }: { iso: string | null | undefined; never?: string }) =>
  iso ? html`<time datetime=${iso}>${when(iso)}</time>` : html`<span class="muted">${never ?? 'never'}</span>`;

/** Loading, error and data states of one GET, with a retry. */
export function Loadable<T>({ state, retry, children }: { state: LoadState<T>; retry: () => void; children: (data: T) => unknown }) {
  if (state.error) {
    return html`<div><${NoticeView} notice=${errorNotice(state.error)} /><button type="button" onClick=${retry}>Try again</button></div>`;
  }
  if (state.data === undefined) return html`<p class="muted" role="status">Loading…</p>`;
  return children(state.data);
}

export type LoadState<T> = { data?: T; error?: unknown };

/** Loads a GET route on mount (and on reload()); the state feeds <Loadable>. */
export function useLoad<T>(load: () => Promise<T>): [LoadState<T>, () => Promise<void>] {
  const [state, setState] = useState<LoadState<T>>({});
  const reload = async () => {
    try {
      setState({ data: await load() });
    } catch (error) {
      setState({ error });
    }
  };
  useEffect(() => {
    void reload();
  }, []);
  return [state, reload];
}
