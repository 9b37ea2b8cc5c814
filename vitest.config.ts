import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The cluster suite runs on its own (npm run test:cluster, vitest.cluster.config.ts).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    // One PostgreSQL and one Temporal dev server for the whole run; each file gets its own database
    // and task queue.
    globalSetup: ['test/global-setup.ts'],
    // Temporal's native bridge has crashed worker threads out of memory (sdk-typescript#876).
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
  },
});
