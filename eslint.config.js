// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
