// What to undo when the process is interrupted (SIGINT or SIGTERM): stop a progress bar, remove a
// temporary file, say how far a load got. Each undo is synchronous, since the process exits right
// after, and returns a note for the one "tessera: interrupted by …" line.
import { EXIT } from './errors';

type Undo = () => string;

const undos = new Set<Undo>();

/** Runs `undo` if the process is interrupted before the returned function is called. */
export function onInterrupt(undo: Undo): () => void {
  undos.add(undo);
  return () => undos.delete(undo);
}

function interrupt(signal: 'SIGINT' | 'SIGTERM'): void {
  let note = '';
  for (const undo of undos) {
    try {
      note += undo();
    } catch {
      /* exiting anyway */
    }
  }
  process.stderr.write(`tessera: interrupted by ${signal}${note}\n`);
  process.exit(EXIT[signal]);
}

/** Listens for SIGINT and SIGTERM until the returned function is called. */
export function handleSignals(): () => void {
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  return () => {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  };
}
