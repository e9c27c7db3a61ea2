// Tracing's configuration: the standard OTEL_* environment variables (the OpenTelemetry SDK
// specification's names and meanings), read once at start-up with the rest of config.ts. Tracing is
// off unless OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only variant) or OTEL_TRACES_EXPORTER says
// where spans go; OTEL_SDK_DISABLED=true turns it off whatever else is set. A value Tessera cannot
// honour stops the start with a message naming the variable, as every other setting does.
//
// The exporter reads its own OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout,
// compression, certificates) itself; what is read here is what decides whether tracing is on, which
// exporter, the sampler, the batch processor's limits and the service's name.

/** How spans leave the process: OTLP over HTTP (protobuf or JSON), or one JSON line each in the log on stdout (logExporter.ts). */
export type TracesExporter = { kind: 'otlp'; protocol: 'http/protobuf' | 'http/json' } | { kind: 'console' };

export interface TracingConfig {
  readonly exporter: TracesExporter;
  /**
   * The share of new traces (no sampled parent) exported, 0 to 1. A caller's sampled flag is
   * followed when `parentBased` (the default); refusals and errors are exported whatever the ratio
   * (src/tracing/sampling.ts).
   */
  readonly ratio: number;
  readonly parentBased: boolean;
  readonly serviceName: string;
  /** The batch span processor (OTEL_BSP_*): the spec's defaults. */
  readonly batch: { readonly scheduledDelayMillis: number; readonly exportTimeoutMillis: number; readonly maxQueueSize: number; readonly maxExportBatchSize: number };
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** Tracing as the environment sets it; null when it is off. Throws an Error whose message names the variable. */
export function tracingConfigFrom(env: NodeJS.ProcessEnv): TracingConfig | null {
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw ? raw : undefined;
  };
  if (value('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const exporters = (value('OTEL_TRACES_EXPORTER') ?? '').toLowerCase().split(',').map((item) => item.trim()).filter(Boolean);
  const endpoint = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? value('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (exporters.includes('none') || (exporters.length === 0 && endpoint === undefined)) return null;
  if (exporters.length > 1) throw new Error(`OTEL_TRACES_EXPORTER must name one exporter: otlp, console or none (got "${env.OTEL_TRACES_EXPORTER}")`);
  const kind = exporters[0] ?? 'otlp';
  let exporter: TracesExporter;
  if (kind === 'console') exporter = { kind: 'console' };
  else if (kind === 'otlp') {
    const protocol = (value('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf').toLowerCase();
    if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
      throw new Error(
        `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (got "${protocol}"): Tessera exports OTLP over HTTP; a collector or Jaeger takes it on port 4318`,
      );
    }
    exporter = { kind: 'otlp', protocol };
  } else throw new Error(`OTEL_TRACES_EXPORTER must be otlp, console or none (got "${env.OTEL_TRACES_EXPORTER}")`);

  const sampler = (value('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on').toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(sampler)) throw new Error(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')} (got "${env.OTEL_TRACES_SAMPLER}")`);
  let ratio = sampler.endsWith('always_off') ? 0 : 1;
  if (sampler.endsWith('traceidratio')) {
    const arg = value('OTEL_TRACES_SAMPLER_ARG');
    ratio = arg === undefined ? 1 : Number(arg);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 for ${sampler} (got "${arg}")`);
  }
  const int = (name: string, fallback: number, min: number): number => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    const parsed = Number(raw);
    if (!Number.isInteger(parsed) || parsed < min) throw new Error(`${name} must be an integer of at least ${min} (got "${raw}")`);
    return parsed;
  };
  const maxQueueSize = int('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1);
  const batch = Object.freeze({
    scheduledDelayMillis: int('OTEL_BSP_SCHEDULE_DELAY', 5000, 0),
    exportTimeoutMillis: int('OTEL_BSP_EXPORT_TIMEOUT', 30000, 1),
    maxQueueSize,
    maxExportBatchSize: Math.min(int('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1), maxQueueSize),
  });
  const serviceName = value('OTEL_SERVICE_NAME') ?? resourceServiceName(value('OTEL_RESOURCE_ATTRIBUTES')) ?? 'tessera';
  return Object.freeze({ exporter, ratio, parentBased: sampler.startsWith('parentbased_'), serviceName, batch });
}

/** service.name from OTEL_RESOURCE_ATTRIBUTES (`key=value,…`, values percent-encoded), when it is there. */
function resourceServiceName(attributes: string | undefined): string | undefined {
  for (const pair of (attributes ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === 'service.name') {
      try {
        return decodeURIComponent(pair.slice(at + 1).trim()) || undefined;
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
