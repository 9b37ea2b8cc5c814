import { Migration0001Init } from './0001-init.ts';

/**
 * Committed migrations, in order. New ones are appended here; the schema is never auto-synced.
 * `npm run migrate` and every start-up apply the pending ones.
 */
export const migrationsList = [{ name: '0001-init', class: Migration0001Init }];
