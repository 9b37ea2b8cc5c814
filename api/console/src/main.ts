// The console shell: reads the browser session, then shows sign-in, the deletion_pending recovery
// view, or the signed-in pages with their navigation.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { CONSOLE_PAGES, type ConsolePath } from '../pages.ts';
import { get, setSignedOutHandler, type Json } from './lib/api.ts';
import { AccountPage } from './pages/account.ts';
import { AppsPage } from './pages/apps.ts';
import { DevicePage } from './pages/device.ts';
import { KeysPage } from './pages/keys.ts';
import { MemoryPage, ReviewPage } from './pages/memory.ts';
import { PlaygroundPage } from './pages/playground.ts';
import { RecoveryPage } from './pages/recovery.ts';
import { SignInPage, SignOutButton } from './pages/signin.ts';
import { SourcesPage } from './pages/sources.ts';
import { UsagePage } from './pages/usage.ts';
import { interceptLinks, useRoute } from './lib/router.ts';
import { html, PageTitle } from './lib/ui.ts';

const VIEWS: Record<ConsolePath, (props: { session: Json; refreshSession: () => Promise<void> }) => unknown> = {
  '/': UsagePage,
  '/keys': KeysPage,
  '/sources': SourcesPage,
  '/memory': MemoryPage,
  '/memory/review': ReviewPage,
  '/playground': PlaygroundPage,
  '/apps': AppsPage,
  '/account': AccountPage,
  '/device': DevicePage,
};

function NotFound() {
  return html`<${PageTitle}>Page not found</${PageTitle}><p><a href="/" data-nav="1">Go to the console home</a></p>`;
}

function Nav({ path }: { path: string }) {
  return html`<nav aria-label="Console">
    <ul>
      ${CONSOLE_PAGES.filter((p) => p.path !== '/device').map(
        (p) => html`<li><a href=${p.path} data-nav="1" aria-current=${p.path === path ? 'page' : undefined}>${p.label}</a></li>`,
      )}
    </ul>
  </nav>`;
}

function App() {
  const route = useRoute();
  const [session, setSession] = useState<Json>(undefined);
  const [failed, setFailed] = useState<string | null>(null);
  const refreshSession = async () => {
    try {
      setSession(await get('/v1/auth/session'));
      setFailed(null);
    } catch (err) {
      setFailed(String((err as Error).message));
    }
  };
  useEffect(() => {
    setSignedOutHandler(() => void refreshSession());
    void refreshSession();
  }, []);

  if (failed) {
    return html`<main id="main"><${PageTitle}>Cairn console</${PageTitle}>
      <p class="notice error" role="alert">${failed}</p>
      <button type="button" onClick=${refreshSession}>Try again</button></main>`;
  }
  if (!session) return html`<main id="main"><p class="muted" role="status">Loading…</p></main>`;

  const View = VIEWS[route.path as ConsolePath];
  const header = (signedIn: boolean) => html`<header class="top">
    <a class="brand" href="/" data-nav="1">Cairn</a>
    ${signedIn ? html`<span class="who">${session.account?.email}</span><${SignOutButton} onDone=${refreshSession} />` : null}
  </header>`;

  if (session.accountState === 'signed_out') {
    return html`${header(false)}<main id="main"><${SignInPage} onSignedIn=${refreshSession} forDevice=${route.path === '/device'} /></main>`;
  }
  if (session.accountState === 'deletion_pending') {
    return html`${header(true)}<main id="main"><${RecoveryPage} session=${session} onChange=${refreshSession} /></main>`;
  }
  return html`<a class="skip" href="#main">Skip to content</a>${header(true)}
    <div class="layout">
      <${Nav} path=${route.path} />
      <main id="main" key=${route.path}>
        ${View ? html`<${View} session=${session} refreshSession=${refreshSession} />` : html`<${NotFound} />`}
      </main>
    </div>`;
}

const root = document.getElementById('app')!;
interceptLinks(document.body);
render(html`<${App} />`, root);
