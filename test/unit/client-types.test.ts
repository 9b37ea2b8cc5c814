import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, clientTypes } from '../../bin/client-types.ts';

it('the TypeScript client types are those of the current OpenAPI document (regenerate: npm run client:types)', async () => {
  expect(await readFile(CLIENT_TYPES_FILE, 'utf8')).toBe(await clientTypes());
}, 60_000);
