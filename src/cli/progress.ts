// A progress bar on stderr: cli-progress's, redrawn in place, on a terminal. Otherwise (a pipe, a
// file, a CI log) lines of the same text, each on its own: at the start, at each tenth of the total,
// at least every PROGRESS_MS while the count moves (the only ones when the total is not known), and
// at the end — cli-progress's own line mode draws on a timer only, which for a load of a few
// seconds is one line at 0%, one somewhere and one at 100%.
import cliProgress from 'cli-progress';

export const PROGRESS_MS = 2000;
const PROGRESS_STEPS = 10;
const WIDTH = 40;

/** What load and export use of a bar; cli-progress's SingleBar has it all. */
export interface Bar {
  start(total: number, value: number, payload?: Record<string, unknown>): void;
  update(value: number, payload?: Record<string, unknown>): void;
  getTotal(): number;
  setTotal(total: number): void;
  stop(): void;
}

export function progressBar(format: string, options: { hideCursor?: boolean } = {}): Bar {
  const preset = cliProgress.Presets.shades_classic;
  if (!process.stderr.isTTY) return new ProgressLines(format, preset);
  // gracefulExit false: our own SIGINT handler stops the bar (cli-progress's would keep the process running).
  return new cliProgress.SingleBar({ format, stream: process.stderr, gracefulExit: false, ...options }, preset);
}

class ProgressLines implements Bar {
  private total = 0;
  private value = 0;
  private readonly payload: Record<string, unknown> = {};
  private shown: string | null = null; // the text of the last line written
  private shownAt = 0;
  private step = -1; // the last tenth a line was written at

  constructor(
    private readonly format: string,
    private readonly preset: cliProgress.Preset,
  ) {}

  start(total: number, value: number, payload: Record<string, unknown> = {}): void {
    this.total = total;
    this.update(value, payload);
    this.write();
  }

  getTotal(): number {
    return this.total;
  }

  setTotal(total: number): void {
    this.total = total;
  }

  update(value: number, payload: Record<string, unknown> = {}): void {
    this.value = value;
    Object.assign(this.payload, payload);
    if (this.tenth() > this.step || (this.shown !== null && Date.now() - this.shownAt >= PROGRESS_MS)) this.write();
  }

  stop(): void {
    this.write();
  }

  private tenth(): number {
    return this.total > 0 ? Math.floor((Math.min(this.value, this.total) * PROGRESS_STEPS) / this.total) : -1;
  }

  private write(): void {
    const text = this.text();
    if (text === this.shown) return;
    this.shown = text;
    this.shownAt = Date.now();
    if (this.total > 0) this.step = this.tenth();
    process.stderr.write(`${text}\n`);
  }

  private text(): string {
    const share = this.total > 0 ? Math.min(this.value / this.total, 1) : 0;
    const done = Math.round(share * WIDTH);
    const values: Record<string, unknown> = {
      ...this.payload,
      bar: this.preset.barCompleteChar.repeat(done) + this.preset.barIncompleteChar.repeat(WIDTH - done),
      percentage: Math.floor(share * 100),
      value: this.value,
      total: this.total,
    };
    return this.format.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));
  }
}
