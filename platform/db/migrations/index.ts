import { Migration0001Init } from './0001-init.ts';
import { Migration0002Accounts } from './0002-accounts.ts';
import { Migration0003IngestJobs } from './0003-ingest-jobs.ts';
import { Migration0004Metering } from './0004-metering.ts';
import { Migration0005Ingest } from './0005-ingest.ts';
import { Migration0006Memory } from './0006-memory.ts';
import { Migration0007Query } from './0007-query.ts';
import { Migration0008Oauth } from './0008-oauth.ts';
import { Migration0009IngestStorage } from './0009-ingest-storage.ts';
import { Migration0010MemorySlots } from './0010-memory-slots.ts';
import { Migration0011MeteringFunctions } from './0011-metering-functions.ts';
import { Migration0012RecordTrigramExcerpts } from './0012-record-trigram-excerpts.ts';
import { Migration0013MemoryEventBatches } from './0013-memory-event-batches.ts';
import { Migration0014RecordTerms } from './0014-record-terms.ts';
import { Migration0015RecordLexicon } from './0015-record-lexicon.ts';
import { Migration0016MemoryWriteFunction } from './0016-memory-write-function.ts';
import { Migration0017RecordIndexVersion } from './0017-record-index-version.ts';
import { Migration0018MemoryWriteNoNotify } from './0018-memory-write-no-notify.ts';
import { Migration0019MemoryFillfactor } from './0019-memory-fillfactor.ts';
import { Migration0020ClaimConflictsOneWay } from './0020-claim-conflicts-one-way.ts';
import { Migration0021RecordForeignKeys } from './0021-record-foreign-keys.ts';
import { Migration0022SearchStatistics } from './0022-search-statistics.ts';
import { Migration0023AudienceBoundaries } from './0023-audience-boundaries.ts';
import { Migration0024LoginThrottle } from './0024-login-throttle.ts';
import { Migration0025ExternalIdentities } from './0025-external-identities.ts';
import { Migration0026OauthClientExpiry } from './0026-oauth-client-expiry.ts';
import { Migration0027ConnectedAppRedirectUris } from './0027-connected-app-redirect-uris.ts';
import { Migration0028Embeddings } from './0028-embeddings.ts';
import { Migration0029Ocr } from './0029-ocr.ts';
import { Migration0030Routines } from './0030-routines.ts';
import { Migration0031ClaimsPerEvent } from './0031-claims-per-event.ts';
import { Migration0032LabelNfc } from './0032-label-nfc.ts';
import { Migration0037HeldTextOcrSettlement } from './0037-held-text-ocr-settlement.ts';
import { Migration0038JobStarted } from './0038-job-started.ts';

/**
 * Committed migrations, in order. New ones are appended here; the schema is never auto-synced.
 * `npm run migrate` and every start-up apply the pending ones.
 */
export const migrationsList = [
  { name: '0001-init', class: Migration0001Init },
  { name: '0002-accounts', class: Migration0002Accounts },
  { name: '0003-ingest-jobs', class: Migration0003IngestJobs },
  { name: '0004-metering', class: Migration0004Metering },
  { name: '0005-ingest', class: Migration0005Ingest },
  { name: '0006-memory', class: Migration0006Memory },
  // 0007 is reserved for the query work. Numbers only order the list: a database that already ran a
  // later migration still runs a pending earlier one.
  { name: '0007-query', class: Migration0007Query },
  { name: '0008-oauth', class: Migration0008Oauth },
  { name: '0009-ingest-storage', class: Migration0009IngestStorage },
  { name: '0010-memory-slots', class: Migration0010MemorySlots },
  { name: '0011-metering-functions', class: Migration0011MeteringFunctions },
  { name: '0012-record-trigram-excerpts', class: Migration0012RecordTrigramExcerpts },
  { name: '0013-memory-event-batches', class: Migration0013MemoryEventBatches },
  { name: '0014-record-terms', class: Migration0014RecordTerms },
  { name: '0015-record-lexicon', class: Migration0015RecordLexicon },
  { name: '0016-memory-write-function', class: Migration0016MemoryWriteFunction },
  { name: '0017-record-index-version', class: Migration0017RecordIndexVersion },
  { name: '0018-memory-write-no-notify', class: Migration0018MemoryWriteNoNotify },
  { name: '0019-memory-fillfactor', class: Migration0019MemoryFillfactor },
  { name: '0020-claim-conflicts-one-way', class: Migration0020ClaimConflictsOneWay },
  { name: '0021-record-foreign-keys', class: Migration0021RecordForeignKeys },
  { name: '0022-search-statistics', class: Migration0022SearchStatistics },
  { name: '0023-audience-boundaries', class: Migration0023AudienceBoundaries },
  { name: '0024-login-throttle', class: Migration0024LoginThrottle },
  { name: '0025-external-identities', class: Migration0025ExternalIdentities },
  { name: '0026-oauth-client-expiry', class: Migration0026OauthClientExpiry },
  { name: '0027-connected-app-redirect-uris', class: Migration0027ConnectedAppRedirectUris },
  { name: '0028-embeddings', class: Migration0028Embeddings },
  { name: '0029-ocr', class: Migration0029Ocr },
  { name: '0030-routines', class: Migration0030Routines },
  { name: '0031-claims-per-event', class: Migration0031ClaimsPerEvent },
  { name: '0032-label-nfc', class: Migration0032LabelNfc },
  { name: '0037-held-text-ocr-settlement', class: Migration0037HeldTextOcrSettlement },
  { name: '0038-job-started', class: Migration0038JobStarted },
];
