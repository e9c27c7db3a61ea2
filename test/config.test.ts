// Configuration is read once and validated, with messages that name the variable.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config';
import { tempDir } from './helpers/tempDirs';

const scratch = () => path.join(tempDir('tessera-config-'), 'pgdata');

test('defaults: port 4000, embedded database, pool of 10 with a bounded acquire timeout', () => {
  const config = loadConfig({ EMBEDDED_PG_DIR: scratch(), ADMIN_API_KEY: 'a-long-enough-admin-key' });
  expect(config).toMatchObject({ port: 4000, databaseUrl: undefined, env: 'development', adminApiKeyGenerated: false });
  expect(config.database.poolSize).toBe(10);
  expect(config.webConcurrency).toBe(1);
  expect(config.database.poolTimeoutMs).toBeGreaterThan(0);
  expect(Object.isFrozen(config)).toBe(true);
});

test('without ADMIN_API_KEY outside production a key is generated once and kept for the next start', () => {
  const dir = scratch();
  const first = loadConfig({ EMBEDDED_PG_DIR: dir });
  const second = loadConfig({ EMBEDDED_PG_DIR: dir });
  expect(first.adminApiKeyGenerated).toBe(true);
  expect(first.adminApiKey.length).toBeGreaterThanOrEqual(32);
  expect(second.adminApiKey).toBe(first.adminApiKey);
  expect(readFileSync(path.join(path.dirname(dir), 'admin-api-key'), 'utf8').trim()).toBe(first.adminApiKey);
});

test('production refuses to start without DATABASE_URL and ADMIN_API_KEY, naming both', () => {
  expect(() => loadConfig({ NODE_ENV: 'production', EMBEDDED_PG_DIR: scratch() })).toThrow(
    /NODE_ENV=production requires DATABASE_URL and ADMIN_API_KEY/,
  );
  expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', EMBEDDED_PG_DIR: scratch() })).toThrow(/ADMIN_API_KEY/);
});

test.each([
  ['PORT', 'eighty', /PORT must be an integer from 0 to 65535/],
  ['PORT', '70000', /PORT must be an integer/],
  ['DATABASE_POOL_SIZE', '0', /DATABASE_POOL_SIZE must be an integer from 1/],
  ['DATABASE_POOL_TIMEOUT_MS', '-5', /DATABASE_POOL_TIMEOUT_MS must be an integer/],
  ['DATABASE_URL', 'mysql://x', /DATABASE_URL must be a postgres/],
  ['DATABASE_URL', 'postgres://a,b/x?target_session_attrs=standby', /target_session_attrs must be read-write .* or any/],
  ['ADMIN_API_KEY', 'short', /ADMIN_API_KEY must be at least 16 characters/],
  ['NODE_ENV', 'staging', /NODE_ENV must be one of/],
  ['DATABASE_READ_URL', 'postgres://a/x,mysql://b/y', /DATABASE_READ_URL must be one or more postgres/],
  ['READ_MAX_LAG_MS', 'soon', /READ_MAX_LAG_MS must be an integer/],
  ['REFUSAL_FLUSH_MS', '0', /REFUSAL_FLUSH_MS must be an integer/],
])('%s=%s is refused with a message naming it', (name, value, message) => {
  expect(() => loadConfig({ EMBEDDED_PG_DIR: scratch(), [name]: value })).toThrow(ConfigError);
  expect(() => loadConfig({ EMBEDDED_PG_DIR: scratch(), [name]: value })).toThrow(message);
});

test('DATABASE_URL may list several hosts the libpq way, asking for the read-write one', () => {
  const url = 'postgresql://u@db-a:5432,db-b:5432/tessera?target_session_attrs=read-write';
  expect(loadConfig({ EMBEDDED_PG_DIR: scratch(), DATABASE_URL: url }).databaseUrl).toBe(url);
});

test('DATABASE_READ_URL lists replicas, comma-separated; unset is none', () => {
  expect(loadConfig({ EMBEDDED_PG_DIR: scratch() }).readReplicas).toEqual({ urls: [], maxLagMs: 5000 });
  expect(loadConfig({ EMBEDDED_PG_DIR: scratch(), DATABASE_READ_URL: 'postgres://a/x, postgresql://b/y', READ_MAX_LAG_MS: '250' }).readReplicas).toEqual({
    urls: ['postgres://a/x', 'postgresql://b/y'],
    maxLagMs: 250,
  });
});

test('WEB_CONCURRENCY is a whole number of workers from 1 to 64', () => {
  const base = { EMBEDDED_PG_DIR: scratch(), ADMIN_API_KEY: 'a-long-enough-admin-key' };
  expect(loadConfig({ ...base, WEB_CONCURRENCY: '2' }).webConcurrency).toBe(2);
  expect(() => loadConfig({ ...base, WEB_CONCURRENCY: '0' })).toThrow(/WEB_CONCURRENCY/);
  expect(() => loadConfig({ ...base, WEB_CONCURRENCY: 'two' })).toThrow(/WEB_CONCURRENCY/);
});
