import { AccountSchema } from './account.entity.ts';
import {
  ApiKeySchema,
  BrowserSessionSchema,
  CliDeviceAuthorizationSchema,
  CliSessionSchema,
} from './credentials.entity.ts';
import { IngestJobSchema } from './ingest-job.entity.ts';
import { SelfCheckSchema } from './self-check.entity.ts';

/** Every entity the ORM knows. Explicit rather than a folder glob so bundling and type stripping stay simple. */
export const entities = [
  SelfCheckSchema,
  AccountSchema,
  BrowserSessionSchema,
  CliDeviceAuthorizationSchema,
  CliSessionSchema,
  ApiKeySchema,
  IngestJobSchema,
];

export { SelfCheck } from './self-check.entity.ts';
export { Account, type AccountState, type LinkedProviders } from './account.entity.ts';
export {
  ApiKey,
  BrowserSession,
  CliDeviceAuthorization,
  CliSession,
  type DeviceStatus,
  type Preset,
} from './credentials.entity.ts';
export { IngestJob, type IngestJobKind, type IngestJobStatus, type JobFailure } from './ingest-job.entity.ts';
