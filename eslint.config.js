// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The domain folders under shared/. */
const DOMAIN = '{answer,auth,ingest,memory,metering,oauth,query,retrieval}';
const NO_TEST_TOOLING = { group: ['**/test/**', '@temporalio/testing', 'vitest'], message: 'Production code does not import test tooling.' };
// One way to PostgreSQL (docs/decisions/0002-data-access.md): SQL through shared/db/sql.ts, other
// connections through shared/db/connections.ts.
const NO_DIRECT_DB = { group: ['pg', 'kysely'], message: 'Reach PostgreSQL through shared/db (sql.ts, connections.ts).' };
const ONE_WAY_TO_POSTGRES = [
  'error',
  { selector: "CallExpression[callee.property.name='getConnection']", message: 'Run SQL with bound/prepared (shared/db/sql.ts).' },
  { selector: "CallExpression[callee.property.name='getKysely']", message: 'Run SQL with bound/prepared (shared/db/sql.ts).' },
];

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
    // A function a reader can hold in mind. Migrations are SQL scripts; tests read as scenarios.
    files: ['{shared,api,activities,workflows,bin,cli}/**/*.ts'],
    ignores: ['shared/db/migrations/**'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  // Layers (docs/architecture.md, Layers). One rule entry per file group: a later entry for the same
  // files would replace an earlier one's patterns, so each group lists all of its own.
  {
    // The domain folders decide; they never reach Temporal: the workflow starts they need are given to
    // them as functions (shared/temporal/starts.ts workflowStarts).
    files: [`shared/${DOMAIN}/**/*.ts`],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { group: ['@temporalio/*', '**/temporal/*'], message: 'Domain code does not use Temporal: take the start function as a dependency.' },
          { group: ['**/api/**', '**/activities/**', '**/activities', '**/workflows/**'], message: 'Domain code does not import its adapters.' },
          NO_TEST_TOOLING,
          NO_DIRECT_DB,
        ],
      }],
      'no-restricted-syntax': ONE_WAY_TO_POSTGRES,
    },
  },
  {
    // Temporal infrastructure knows nothing of the domain: the activities and the background work a
    // worker runs are injected (bin/worker.ts).
    files: ['shared/temporal/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { group: [`../${DOMAIN}/*`, '**/activities/**', '**/activities'], message: 'shared/temporal does not import the domain or the activities: inject them.' },
          NO_TEST_TOOLING,
          NO_DIRECT_DB,
        ],
      }],
      'no-restricted-syntax': ONE_WAY_TO_POSTGRES,
    },
  },
  {
    // The MCP tools and the REST routes are sibling adapters over the same domain functions.
    files: ['api/mcp/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ group: ['**/routes/**'], message: 'MCP code does not import REST routes: both call the domain (shared/).' }, NO_TEST_TOOLING, NO_DIRECT_DB],
      }],
      'no-restricted-syntax': ONE_WAY_TO_POSTGRES,
    },
  },
  {
    // Test tooling lives under test/; the product never imports it.
    files: ['{shared,api,activities,bin,cli}/**/*.ts'],
    ignores: [`shared/${DOMAIN}/**`, 'shared/temporal/**', 'api/mcp/**', 'shared/db/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [NO_TEST_TOOLING, NO_DIRECT_DB] }],
      'no-restricted-syntax': ONE_WAY_TO_POSTGRES,
    },
  },
  {
    files: ['shared/db/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [NO_TEST_TOOLING] }] },
  },
  {
    // Workflow code must be deterministic: no I/O, no Node built-ins, no infrastructure. Activities are
    // imported as types only (proxyActivities<Activities>).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'Workflows may not use Node built-ins.' },
            {
              group: ['fs', 'path', 'os', 'crypto', 'http', 'https', 'net', 'child_process', 'timers', 'pg', 'pino', '@mikro-orm/*', 'fastify', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
              message: 'Workflows may not do I/O or import infrastructure.',
            },
            {
              group: ['**/api/**', '**/shared/db/**', '**/shared/logger*', '**/shared/config*', '**/shared/temporal/**'],
              message: 'Workflows may not import API, database, logger or configuration code.',
            },
            {
              group: ['**/activities/**', '**/activities'],
              allowTypeImports: true,
              message: 'Import activities as types only and call them through proxyActivities.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() in a loop from @temporalio/workflow.' },
        { name: 'fetch', message: 'Do I/O in an activity.' },
      ],
    },
  },
);
