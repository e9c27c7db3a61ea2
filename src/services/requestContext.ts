import type { Viewer } from '../auth';
import type { Loaders } from '../loaders';

/** What every service method gets first: who is calling, and the request's batching loaders. */
export interface RequestContext {
  readonly viewer: Viewer;
  readonly loaders: Loaders;
}
