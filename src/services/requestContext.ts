import type { Viewer } from '../auth';
import type { Loaders } from '../loaders';
import type { Span } from '../tracing';

/** What every service method gets first: who is calling, and the request's batching loaders. */
export interface RequestContext {
  readonly viewer: Viewer;
  readonly loaders: Loaders;
  /** The operation's span while tracing is on (src/tracing): the spans of the work done for it go under it. */
  readonly trace?: Span;
}
