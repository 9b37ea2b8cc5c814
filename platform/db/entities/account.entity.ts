import { defineEntity, p } from '@mikro-orm/core';

export type AccountState = 'active' | 'deletion_pending';
/** The two external sign-in providers; both false until such a provider is configured and linked. */
export type LinkedProviders = { google: boolean; github: boolean };

export const AccountSchema = defineEntity({
  name: 'Account',
  tableName: 'account',
  properties: {
    id: p.uuid().primary(),
    email: p.text(),
    emailNormalized: p.text().unique(),
    passwordHash: p.text().hidden(),
    displayName: p.text().nullable(),
    state: p.text().$type<AccountState>().default('active'),
    disabledAt: p.datetime().nullable(),
    linkedProviders: p.json<LinkedProviders>(),
    monthlyCredits: p.integer(),
    onboardingCredits: p.integer(),
    queryDailyLimit: p.integer(),
    ingestDailyLimit: p.integer(),
    queryMonthlyLimit: p.integer(),
    ingestMonthlyLimit: p.integer(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export class Account extends AccountSchema.class {}
AccountSchema.setClass(Account);
