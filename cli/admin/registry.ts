import type { ParseArgsConfig } from 'node:util';
import type { AdminContext } from './context.ts';

export type ParsedArgs = {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
};

export type AdminCommand = {
  /** One or two words: `selfcheck`, `account create`. */
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(ctx: AdminContext, args: ParsedArgs): Promise<void>;
};

export class UsageError extends Error {}
