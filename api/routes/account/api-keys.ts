import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { apiKeyRecord, createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../../../core/auth/api-keys.ts';
import {
  ApiKeyCreateRequest,
  ApiKeyIdParams,
  ApiKeyListResponse,
  ApiKeyResponse,
  ApiKeyRotateRequest,
  ApiKeyWithSecretResponse,
} from '../../../core/contracts/account.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { principalOf, type AuthRule } from '../../plugins/auth.ts';

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };
/** Account management: browser session (with csrf on writes) or CLI token; never an API key. */
export const ACCOUNT_MANAGEMENT: AuthRule = { accept: ['browser', 'cli'] };
const tags = ['account'];

export const apiKeyRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/v1/account/api-keys',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: { tags, summary: 'List API keys (never secrets)', response: { 200: ApiKeyListResponse, ...errors } },
    },
    async (request) => {
      const keys = await listApiKeys(request.em, principalOf(request).accountId);
      return { schemaVersion: 'service-api-key-list-v1' as const, apiKeys: keys.map(apiKeyRecord) };
    },
  );

  app.post(
    '/v1/account/api-keys',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags,
        summary: 'Create an API key; the secret is returned once',
        body: ApiKeyCreateRequest,
        response: { 201: ApiKeyWithSecretResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { key, secret } = await createApiKey(request.em, principalOf(request).accountId, request.body);
      return reply.code(201).send({ schemaVersion: 'service-api-key-v1' as const, apiKey: apiKeyRecord(key), secret });
    },
  );

  app.delete(
    '/v1/account/api-keys/:apiKeyId',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags,
        summary: 'Revoke an API key',
        params: ApiKeyIdParams,
        response: { 200: ApiKeyResponse, ...errors },
      },
    },
    async (request) => {
      const key = await revokeApiKey(request.em, principalOf(request).accountId, request.params.apiKeyId);
      return { schemaVersion: 'service-api-key-v1' as const, apiKey: apiKeyRecord(key) };
    },
  );

  app.post(
    '/v1/account/api-keys/:apiKeyId/rotate',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags,
        summary: 'Replace an API key; the previous key stops working at once',
        params: ApiKeyIdParams,
        // No body at all arrives as null: the rotate body is optional.
        body: ApiKeyRotateRequest.nullish(),
        response: { 201: ApiKeyWithSecretResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { key, secret } = await rotateApiKey(
        request.em,
        principalOf(request).accountId,
        request.params.apiKeyId,
        request.body?.name,
      );
      return reply.code(201).send({ schemaVersion: 'service-api-key-v1' as const, apiKey: apiKeyRecord(key), secret });
    },
  );
};
