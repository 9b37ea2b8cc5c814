// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers (docs/architecture.md, "Layers", shows this table word for word; a test holds them equal).
 * One row per folder: the folders its code may import, top to bottom. A folder imports only what its
 * row names; anything else is a lint error. `activities (types)` means type-only imports.
 */
export const LAYERS = [
  { folder: 'bin', may: ['api', 'cli', 'runners', 'temporal', 'workflows', 'activities', 'core', 'platform'], says: 'composition roots: the npm scripts build every dependency here' },
  { folder: 'cli/admin', may: ['runners', 'temporal', 'core', 'platform'], says: 'operator commands, run beside the database' },
  { folder: 'cli/cairn', may: ['core/contracts'], says: 'the cairn CLI: an HTTP client of the API' },
  { folder: 'api', may: ['temporal', 'core', 'platform'], says: 'REST routes, hosted MCP, OAuth pages, console: adapters over core' },
  { folder: 'runners', may: ['temporal', 'workflows', 'platform'], says: 'provision PostgreSQL and Temporal for npm start and npm run cluster' },
  { folder: 'temporal', may: ['workflows', 'platform'], says: 'Temporal client, worker and typed workflow starts' },
  { folder: 'workflows', may: ['activities (types)'], says: 'deterministic orchestration: no I/O' },
  { folder: 'activities', may: ['core', 'platform'], says: 'thin, idempotent adapters over core' },
  { folder: 'core', may: ['platform'], says: 'the domain: decisions, with their SQL in *.queries.ts' },
  { folder: 'platform', may: [], says: 'config, errors, logging, ids, database access, ops, safe fetch' },
  { folder: 'packages', may: [], says: 'client libraries, published on their own: HTTP clients of the API' },
];

/** The top-level source folders; cli has two rows (its commands differ in reach). */
const TOP = ['bin', 'cli', 'api', 'runners', 'temporal', 'workflows', 'activities', 'core', 'platform', 'packages'];
const filesOf = (folder) => [`${folder}/**/*.ts`, `${folder}.ts`, ...(folder === 'cli/cairn' ? ['cli/lib/**/*.ts'] : [])];

/** The import patterns a row forbids: every top folder it does not name (a named sub-folder opens only it). */
function forbiddenBy(row) {
  const own = row.folder.split('/')[0];
  const patterns = [];
  for (const top of TOP) {
    if (top === own || row.may.includes(top)) continue;
    const opened = row.may.filter((m) => m.startsWith(`${top}/`)).map((m) => m.slice(top.length + 1));
    const typesOnly = row.may.includes(`${top} (types)`);
    patterns.push({
      // A relative path or a bare folder; never a scoped package such as @langchain/core.
      regex: `^(?!@)(.*/)?${top}/${opened.length ? `(?!(${opened.join('|')})/)` : ''}`,
      ...(typesOnly ? { allowTypeImports: true } : {}),
      message: typesOnly
        ? `${row.folder} imports ${top} as types only (docs/architecture.md, Layers).`
        : `${row.folder} does not import ${top}${opened.length ? ` beyond ${row.may.filter((m) => m.startsWith(`${top}/`)).join(', ')}` : ''} (docs/architecture.md, Layers).`,
    });
  }
  return patterns;
}

const NO_TEST_TOOLING = { group: ['**/test/**', '@temporalio/testing', 'vitest'], message: 'Production code does not import test tooling.' };
// One way to PostgreSQL (docs/decisions/0002-data-access.md): SQL through platform/db/sql.ts, other
// connections through platform/db/connections.ts.
const NO_DIRECT_DB = { group: ['pg', 'kysely'], message: 'Reach PostgreSQL through platform/db (sql.ts, connections.ts).' };
const NO_TEMPORAL = { group: ['@temporalio/*'], message: 'The domain does not use Temporal: take the start function as a dependency.' };
const ONE_WAY_TO_POSTGRES = [
  'error',
  { selector: "CallExpression[callee.property.name='getConnection']", message: 'Run SQL with bound/prepared (platform/db/sql.ts).' },
  { selector: "CallExpression[callee.property.name='getKysely']", message: 'Run SQL with bound/prepared (platform/db/sql.ts).' },
];
// Workflow code must be deterministic: no I/O, no Node built-ins, no infrastructure.
const WORKFLOW_PURITY = [
  { group: ['node:*'], message: 'Workflows may not use Node built-ins.' },
  {
    group: ['fs', 'path', 'os', 'crypto', 'http', 'https', 'net', 'child_process', 'timers', 'pino', '@mikro-orm/*', 'fastify', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
    message: 'Workflows may not do I/O or import infrastructure.',
  },
];

// Inside a layer: the MCP tools and the REST routes are sibling adapters over the same core functions.
const NO_ROUTES = { regex: '(^|/)routes/', message: 'MCP code does not import REST routes: both call core.' };
/** What a kind of code may never use, whichever folders it may import. */
const EXTRA = { core: [NO_TEMPORAL], workflows: WORKFLOW_PURITY };

/** One rule entry per layer row (api/mcp: its row plus NO_ROUTES); platform/db has its own below. */
const layerRule = (row, files, ignores, extra) => ({
  files,
  ignores,
  rules: {
    '@typescript-eslint/no-restricted-imports': ['error', { patterns: [...forbiddenBy(row), ...extra, NO_TEST_TOOLING, NO_DIRECT_DB] }],
    'no-restricted-syntax': ONE_WAY_TO_POSTGRES,
  },
});
const layerRules = LAYERS.flatMap((row) => {
  const extra = EXTRA[row.folder] ?? [];
  if (row.folder === 'platform') return [layerRule(row, filesOf(row.folder), ['platform/db/**'], extra)];
  if (row.folder === 'api') return [layerRule(row, filesOf(row.folder), ['api/mcp/**'], extra), layerRule(row, ['api/mcp/**/*.ts'], [], [NO_ROUTES])];
  return [layerRule(row, filesOf(row.folder), [], extra)];
});

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'coverage/', 'api/console/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Swallowed errors hide failures; an intentional ignore says why in a comment.
      'no-empty': ['error', { allowEmptyCatch: false }],
    },
  },
  {
    // A function a reader can hold in mind, called with named arguments past four. Migrations are SQL
    // scripts; tests read as scenarios.
    files: [`{${TOP.join(',')}}/**/*.ts`],
    ignores: ['platform/db/migrations/**'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/max-params': ['error', { max: 4 }],
    },
  },
  ...layerRules,
  {
    // SQL text only in platform/db and the *.queries.ts modules: elsewhere no statement can be written
    // or run (platform/db/sql.ts's header). bound/changed/prepared take only the tag's Sql.
    files: [`{${TOP.join(',')}}/**/*.ts`],
    ignores: ['platform/db/**', '**/*.queries.ts', 'test/**', 'bench/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{
        group: ['**/platform/db/sql.ts'], importNames: ['sql', 'bound', 'changed', 'prepared'],
        message: 'Statements live in platform/db and *.queries.ts modules; call a function of one.',
      }] }],
    },
  },
  {
    // The database layer itself: the one place that holds connections (it is platform's, minus pg).
    files: ['platform/db/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [...forbiddenBy(LAYERS.at(-1)), NO_TEST_TOOLING] }] },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() in a loop from @temporalio/workflow.' },
        { name: 'fetch', message: 'Do I/O in an activity.' },
      ],
    },
  },
);
