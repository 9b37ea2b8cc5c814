import { AccountSchema } from './account.entity.ts';
import {
  ApiKeySchema,
  BrowserSessionSchema,
  CliDeviceAuthorizationSchema,
  CliSessionSchema,
} from './credentials.entity.ts';

/**
 * Every entity the ORM knows: only accounts and credentials, whose code uses the ORM's unit of work
 * (docs/decisions/0002-data-access.md); every other table is reached with SQL (platform/db/sql.ts).
 * Explicit rather than a folder glob so bundling and type stripping stay simple.
 */
export const entities = [
  AccountSchema,
  BrowserSessionSchema,
  CliDeviceAuthorizationSchema,
  CliSessionSchema,
  ApiKeySchema,
];

export { Account, type AccountState, type LinkedProviders } from './account.entity.ts';
export {
  ApiKey,
  BrowserSession,
  CliDeviceAuthorization,
  CliSession,
  type DeviceStatus,
  type Preset,
} from './credentials.entity.ts';
