// Content-Security-Policy of every HTML page the service renders (console and OAuth pages): scripts
// and styles only from this origin (no inline code, no third-party origins), no framing, no plugins.

const BASE = ["default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"];

/** The console: forms are handled in script, so form posts may only target this origin. */
export const CONSOLE_CSP = [...BASE, "form-action 'self'"].join('; ');

/**
 * The OAuth sign-in and consent pages post forms whose answer redirects to the MCP client's own
 * redirect URI (another origin, often a loopback port or a custom scheme); browsers apply form-action
 * to that redirect, so it is left unrestricted there. They run no script at all.
 */
export const OAUTH_PAGE_CSP = BASE.filter((d) => !d.startsWith('script-src') && !d.startsWith('connect-src'))
  .concat("script-src 'none'")
  .join('; ');

/** Headers for every console response (HTML and assets). */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'x-frame-options': 'DENY',
};
