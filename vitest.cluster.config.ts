import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:cluster`: the cluster suite (test/cluster/), which starts `npm run cluster` with the real
// Temporal server; several minutes, so not part of `npm test`.
export default defineConfig({
  test: { ...base.test, include: ['test/cluster/**/*.test.ts'], exclude: configDefaults.exclude, maxWorkers: 1 },
});
