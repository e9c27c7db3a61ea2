// The CLI's failures. Each is one line on stderr, "tessera: <message>", and an exit status.

/** Exit statuses: 130 and 143 are the shell's for a process ended by SIGINT and SIGTERM. */
export const EXIT = { OK: 0, FAILED: 1, USAGE: 2, SIGINT: 130, SIGTERM: 143 } as const;

/** An expected failure: its message is the whole story, printed as "tessera: <message>". */
export class CliError extends Error {
  /** Standard output was the thing that failed: the note on how much of it was written is in the message. */
  told = false;

  constructor(
    message: string,
    readonly exitCode: number = EXIT.FAILED,
  ) {
    super(message);
  }
}

/** Wrong usage (exit 2), pointing at the help of the command it concerns. */
export const usage = (message: string, command?: string): CliError =>
  new CliError(`${message} (see: tessera ${command ? `${command} ` : ''}--help)`, EXIT.USAGE);

const FS_ERRORS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  ENOSPC: 'no space left on device',
};

/** A file system error in a few words. */
export function describeFsError(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return (code !== undefined ? FS_ERRORS[code] : undefined) ?? message ?? String(error);
}
