import { execFile } from 'node:child_process';
import path from 'node:path';
import type { Json } from './accounts.ts';

const ADMIN = path.resolve(import.meta.dirname, '../../cli/admin.ts');

export type AdminRun = { code: number; stdout: string; stderr: string; json: Json };

/** Runs an operator command (`npm run admin -- ...`) as the real process against `databaseUrl`. */
export function runAdmin(databaseUrl: string, ...args: string[]): Promise<AdminRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [ADMIN, ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        let json: Json;
        try {
          json = stdout.trim() ? JSON.parse(stdout) : undefined;
        } catch {
          json = undefined; // not JSON: the assertions on `json` report it
        }
        resolve({ code, stdout, stderr, json });
      },
    );
  });
}
