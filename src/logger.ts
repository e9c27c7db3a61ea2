// Structured JSON logs (pino). Authorization headers and API keys are redacted wherever they appear.
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(options: { level?: string; env: string }): Logger {
  return pino({
    level: options.level ?? (options.env === 'test' ? 'silent' : 'info'),
    base: { service: 'tessera' },
    redact: {
      paths: ['authorization', 'apiKey', 'adminApiKey', '*.authorization', '*.apiKey', 'req.headers.authorization'],
      censor: '[redacted]',
    },
  });
}
