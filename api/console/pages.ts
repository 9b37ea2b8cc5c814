// The console's page paths, shared by the server (which answers each with the console shell) and the
// browser bundle (which renders the page). /device is the verificationUrl the CLI device flow issues.
export const CONSOLE_PAGES = [
  { path: '/', label: 'Usage' },
  { path: '/keys', label: 'API keys' },
  { path: '/sources', label: 'Sources' },
  { path: '/memory', label: 'Memory' },
  { path: '/memory/review', label: 'Review queue' },
  { path: '/playground', label: 'Playground' },
  { path: '/apps', label: 'Connected apps' },
  { path: '/account', label: 'Account' },
  { path: '/device', label: 'Approve CLI sign-in' },
] as const;

export type ConsolePath = (typeof CONSOLE_PAGES)[number]['path'];
