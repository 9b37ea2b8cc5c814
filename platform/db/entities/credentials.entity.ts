import { defineEntity, p } from '@mikro-orm/core';

// Every stored secret is a SHA-256 digest of a 256-bit random token; the raw value exists only in the
// response that issued it.

export const BrowserSessionSchema = defineEntity({
  name: 'BrowserSession',
  tableName: 'browser_session',
  properties: {
    id: p.uuid().primary(),
    accountId: p.uuid(),
    tokenHash: p.text().unique(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    lastSeenAt: p.datetime(),
    endedAt: p.datetime().nullable(),
  },
});
export class BrowserSession extends BrowserSessionSchema.class {}
BrowserSessionSchema.setClass(BrowserSession);

export type DeviceStatus = 'pending' | 'approved' | 'consumed';

export const CliDeviceAuthorizationSchema = defineEntity({
  name: 'CliDeviceAuthorization',
  tableName: 'cli_device_authorization',
  properties: {
    id: p.uuid().primary(),
    deviceCodeHash: p.text().unique(),
    userCode: p.text(),
    clientName: p.text().nullable(),
    status: p.text().$type<DeviceStatus>(),
    accountId: p.uuid().nullable(),
    intervalSeconds: p.integer(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    lastPolledAt: p.datetime().nullable(),
    approvedAt: p.datetime().nullable(),
    consumedAt: p.datetime().nullable(),
  },
});
export class CliDeviceAuthorization extends CliDeviceAuthorizationSchema.class {}
CliDeviceAuthorizationSchema.setClass(CliDeviceAuthorization);

export const CliSessionSchema = defineEntity({
  name: 'CliSession',
  tableName: 'cli_session',
  properties: {
    id: p.uuid().primary(),
    accountId: p.uuid(),
    tokenHash: p.text().unique(),
    clientName: p.text().nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export class CliSession extends CliSessionSchema.class {}
CliSessionSchema.setClass(CliSession);

export type Preset = 'efficient' | 'accuracy';

export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_key',
  properties: {
    id: p.uuid().primary(),
    accountId: p.uuid(),
    name: p.text(),
    prefix: p.text(),
    secretHash: p.text().unique(),
    scopes: p.array().columnType('text[]'),
    maxPreset: p.text().$type<Preset>(),
    audiences: p.array().columnType('text[]').nullable(),
    createdAt: p.datetime(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    rotatedTo: p.uuid().nullable(),
  },
});
export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
