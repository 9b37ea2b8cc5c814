// Client-side navigation between the console's pages (History API). The server answers every page
// path with the same shell, so links work when opened directly or reloaded.
import { useEffect, useState } from 'preact/hooks';

export type Route = { path: string; query: URLSearchParams };

const current = (): Route => ({ path: location.pathname, query: new URLSearchParams(location.search) });
const listeners = new Set<() => void>();

export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const update = () => setRoute(current());
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** Same-origin link clicks (without modifier keys) navigate in place. */
export function interceptLinks(root: HTMLElement) {
  root.addEventListener('click', (event) => {
    const a = (event.target as Element).closest('a');
    if (!a || a.origin !== location.origin || a.target || a.hasAttribute('download')) return;
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (!a.dataset.nav) return;
    event.preventDefault();
    navigate(a.pathname + a.search);
  });
}
