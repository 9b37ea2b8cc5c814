import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { clusterLayout } from '../../runners/cluster/layout.ts';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION, temporalServerEnv } from '../../runners/cluster/temporal.ts';

// docker-compose.yml cannot run here (no Docker engine); its security-relevant settings are checked by
// reading it: the Temporal UI is not exposed and cannot change workflows, every service restarts, and
// no secret has a default value.

const text = readFileSync(path.resolve(import.meta.dirname, '../../docker-compose.yml'), 'utf8');
type Service = { image?: string; ports?: string[]; environment?: Record<string, string>; restart?: string; volumes?: string[] };
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

  it('is the shape npm run cluster runs: the same Temporal versions, configuration files and variables', () => {
    const { temporal, 'temporal-setup': setup, 'temporal-ui': ui } = compose.services;
    const version = (s: Service) => `v${s.image!.split(':')[1]}`;
    expect([version(temporal!), version(setup!), version(ui!)]).toEqual([TEMPORAL_SERVER_VERSION, TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION]);
    for (const s of [temporal!, setup!]) expect(s.volumes).toContain('./deploy/temporal:/etc/cairn-temporal:ro');
    // Every database variable the cluster gives the server and setup.sh, compose gives them too.
    const env = temporalServerEnv('postgres://u:p@h:5432/db', clusterLayout(8180).temporal, { db: 'temporal', visibilityDb: 'temporal_visibility' });
    const dbVariables = Object.keys(env).filter((k) => !/PORT$|^BIND_ON_IP$|^DYNAMIC/.test(k) || k === 'DB_PORT');
    for (const s of [temporal!, setup!]) expect(Object.keys(s.environment!)).toEqual(expect.arrayContaining(dbVariables));
    expect(Object.keys(temporal!.environment!)).toEqual(expect.arrayContaining(['DYNAMIC_CONFIG_FILE_PATH', 'BIND_ON_IP']));
  });
});
