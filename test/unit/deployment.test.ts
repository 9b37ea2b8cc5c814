import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// docker-compose.yml cannot run here (no Docker engine); its security-relevant settings are checked by
// reading it: the Temporal UI is not exposed and cannot change workflows, every service restarts, and
// no secret has a default value.

const text = readFileSync(path.resolve(import.meta.dirname, '../../docker-compose.yml'), 'utf8');
type Service = { ports?: string[]; environment?: Record<string, string>; restart?: string };
const compose = parse(text, { merge: true }) as { services: Record<string, Service> };

describe('docker-compose.yml', () => {
  it('publishes the Temporal UI on the loopback interface only, with its write actions off', () => {
    const ui = compose.services['temporal-ui']!;
    expect(ui.ports!.length).toBeGreaterThan(0);
    for (const p of ui.ports!) expect(p).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    expect(ui.environment!.TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
  });

  it('gives every service a restart policy', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      expect([name, service.restart]).toEqual([name, expect.stringMatching(/^(unless-stopped|always|on-failure)/)]);
    }
  });

  it('takes secrets from the environment with no default, and requires the database password', () => {
    const defaulted = [...text.matchAll(/\$\{(\w*(?:PASSWORD|PASSWD|PWD|TOKEN|SECRET|KEY)\w*):?-([^}]*)\}/g)].filter((m) => m[2] !== '');
    expect(defaulted.map((m) => m[0])).toEqual([]);
    const uses = [...text.matchAll(/\$\{POSTGRES_PASSWORD([^}]*)\}/g)].map((m) => m[1]);
    expect(uses.length).toBeGreaterThan(0);
    for (const u of uses) expect(u).toMatch(/^:\?/);
  });
});
