import { readdirSync, readFileSync } from 'node:fs';

// The database's functions and triggers, one current source file each: platform/db/functions/<name>.sql
// and platform/db/triggers/<name>.sql. Each file is the object exactly as PostgreSQL prints it
// (pg_get_functiondef, pg_get_triggerdef), so test/integration/routines.test.ts can hold a migrated
// database to the files. To change one, edit its file and add a migration that applies it
// (`applyRoutines`); a function whose arguments change is dropped first.

export type Routine = { kind: 'function' | 'trigger'; name: string; text: string };

const DIRS = { function: new URL('../functions/', import.meta.url), trigger: new URL('../triggers/', import.meta.url) } as const;

/** Every function and trigger source, functions first (triggers name them), each kind by name. */
export function routineSources(): Routine[] {
  return (['function', 'trigger'] as const).flatMap((kind) =>
    readdirSync(DIRS[kind]).filter((f) => f.endsWith('.sql')).sort((a, b) => (a < b ? -1 : 1)).map((f) => ({
      kind, name: f.slice(0, -'.sql'.length), text: readFileSync(new URL(f, DIRS[kind]), 'utf8').trimEnd(),
    })));
}

/**
 * The statements that make the database's routines equal their files: a function is created or
 * replaced in place; a trigger (which cannot always be replaced: constraint triggers) is dropped and
 * created again, inside the migration's transaction.
 */
export function routineStatements(routines: Routine[] = routineSources()): string[] {
  return routines.flatMap((r) => {
    if (r.kind === 'function') return [r.text];
    const table = /\bON (\S+) /.exec(r.text)?.[1];
    if (!table) throw new Error(`platform/db/triggers/${r.name}.sql: no "ON <table>"`);
    return [`DROP TRIGGER IF EXISTS ${r.name} ON ${table};`, r.text];
  });
}
