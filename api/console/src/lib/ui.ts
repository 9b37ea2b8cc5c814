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

export type Paged<T> = { items?: T[]; error?: unknown; next: string | null; loading: boolean };

/**
 * A cursor-paged list (the memory routes' `items` and `pagination.next_cursor`): the first page on
 * mount and whenever `key` changes, `more()` appends the next page, `reload()` starts again.
 */
export function usePaged<T>(
  load: (cursor: string | null) => Promise<{ items: T[]; pagination: { next_cursor: string | null } }>,
  key: unknown,
): [Paged<T>, { more: () => Promise<void>; reload: () => Promise<void> }] {
  const [state, setState] = useState<Paged<T>>({ next: null, loading: true });
  const fetchPage = async (cursor: string | null, before: T[]) => {
    setState((s) => ({ ...s, loading: true }));
    try {
      const page = await load(cursor);
      setState({ items: [...before, ...page.items], next: page.pagination.next_cursor, loading: false });
    } catch (error) {
      setState({ items: before, error, next: cursor, loading: false });
    }
  };
  useEffect(() => {
    void fetchPage(null, []);
  }, [key]);
  return [state, { more: () => fetchPage(state.next, state.items ?? []), reload: () => fetchPage(null, []) }];
}

/** The list's "more" button, shown while the service says there is a next page. */
export function MoreButton({ state, more, what }: { state: Paged<unknown>; more: () => Promise<void>; what: string }) {
  if (!state.next) return null;
  return html`<button type="button" onClick=${more} disabled=${state.loading}>${state.loading ? 'Loading…' : `Show more ${what}`}</button>`;
}
