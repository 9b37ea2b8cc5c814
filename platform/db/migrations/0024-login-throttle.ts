import { Migration } from '@mikro-orm/migrations';

/**
 * Sign-in throttling per (account, client address) pair with doubling waits, and per address
 * (core/auth/throttle.ts): a key now records when it may next try (`blocked_until`) instead of when its
 * window started. The counters are transient, so the old ones (per account, per address) are dropped.
 */
export class Migration0024LoginThrottle extends Migration {
  override name = '0024-login-throttle';

  override up(): void {
    this.addSql('truncate auth_throttle;');
    this.addSql('alter table auth_throttle drop column window_started_at, add column blocked_until timestamptz not null default now();');
  }

  override down(): void {
    this.addSql('truncate auth_throttle;');
    this.addSql('alter table auth_throttle drop column blocked_until, add column window_started_at timestamptz not null default now();');
  }
}
