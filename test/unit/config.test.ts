import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../platform/config.ts';

const cwd = '/srv/cairn';

function issuesFor(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env, cwd);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => i.variable);
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('has documented defaults', () => {
    const c = loadConfig({}, cwd);
    expect(c.port).toBe(8080);
    expect(c.mcpPort).toBe(8081);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:8080');
    expect(c.allowedOrigins).toEqual(['http://127.0.0.1:8080']);
    expect(c.dataDir).toBe(path.join(cwd, '.data'));
    expect(c.databaseUrl).toBeUndefined();
    expect(c.temporal).toMatchObject({ address: undefined, namespace: 'default', taskQueue: 'cairn' });
    expect(c.ingestUrlAllowlist).toEqual([]);
    expect(c.logLevel).toBe('info');
  });

  it('derives PUBLIC_BASE_URL from PORT and ALLOWED_ORIGINS from PUBLIC_BASE_URL', () => {
    expect(loadConfig({ PORT: '9090' }, cwd).publicBaseUrl).toBe('http://127.0.0.1:9090');
    const c = loadConfig({ PUBLIC_BASE_URL: 'https://cairn.example.com/' }, cwd);
    expect(c.publicBaseUrl).toBe('https://cairn.example.com');
    expect(c.allowedOrigins).toEqual(['https://cairn.example.com']);
  });

  it('reads lists of origins', () => {
    const c = loadConfig(
      { ALLOWED_ORIGINS: 'https://a.example, http://127.0.0.1:3000', INGEST_URL_ALLOWLIST: 'http://127.0.0.1:9977' },
      cwd,
    );
    expect(c.allowedOrigins).toEqual(['https://a.example', 'http://127.0.0.1:3000']);
    expect(c.ingestUrlAllowlist).toEqual(['http://127.0.0.1:9977']);
  });

  it('reads TRUST_PROXY as proxy addresses, ranges or range names, and refuses trusting everyone', () => {
    expect(loadConfig({}, cwd).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }, cwd).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' }, cwd).trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::1']);
    for (const bad of ['true', '*', '10.0.0.0/40', 'proxy.example']) expect(issuesFor({ TRUST_PROXY: bad })).toEqual(['TRUST_PROXY']);
  });

  it('treats empty strings as unset', () => {
    const c = loadConfig({ DATABASE_URL: '', TEMPORAL_ADDRESS: ' ' }, cwd);
    expect(c.databaseUrl).toBeUndefined();
    expect(c.temporal.address).toBeUndefined();
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ MCP_PORT: '0' }, 'MCP_PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ TEMPORAL_ADDRESS: 'http://localhost:7233' }, 'TEMPORAL_ADDRESS'],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL'],
    [{ ALLOWED_ORIGINS: 'https://a.example/path' }, 'ALLOWED_ORIGINS'],
    [{ INGEST_URL_ALLOWLIST: 'not a url' }, 'INGEST_URL_ALLOWLIST'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
  ])('rejects %j naming the variable', (env, variable) => {
    expect(issuesFor(env)).toEqual([variable]);
  });

  it('names every bad variable at once', () => {
    expect(issuesFor({ PORT: 'x', LOG_LEVEL: 'y' }).sort()).toEqual(['LOG_LEVEL', 'PORT']);
  });

  it('stops a process at start-up with a message naming the variable', () => {
    const res = spawnSync(process.execPath, [path.resolve('bin/api.ts')], {
      env: { PATH: process.env.PATH, PORT: 'not-a-port' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(res.status).toBe(78);
    expect(res.stderr).toContain('PORT');
    expect(res.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });

  it('refuses to start the API without a database', () => {
    const res = spawnSync(process.execPath, [path.resolve('bin/api.ts')], {
      env: { PATH: process.env.PATH },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(res.status).toBe(78);
    expect(res.stderr).toContain('DATABASE_URL');
  });
});
