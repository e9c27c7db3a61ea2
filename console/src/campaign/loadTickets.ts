// Loading tickets into a campaign: codes pasted one per line, or a CSV file's first column (a
// header row is skipped), sent 10,000 at a time with a progress bar; the status line adds up what
// was loaded and which duplicates were skipped, and says how far it got if a batch fails.
import { gql } from '../api';
import { fmt, h, may, problem } from '../ui';

/** Codes from a pasted list or a CSV file (first column; a header row without digits is skipped). */
export function parseCodes(text: string): string[] {
  const codes: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const first = line.split(',')[0]!.trim().replace(/^"(.*)"$/, '$1');
    if (first) codes.push(first);
  }
  if (codes.length > 0 && /^(code|codes|ticket|tickets)$/i.test(codes[0]!)) codes.shift();
  return codes;
}

const plural = (n: number, word: string) => (n === 1 ? word : `${word}s`);

/** What a load did, in words: "loaded 120 new tickets, 1 duplicate skipped". */
const loadedText = (loaded: number, duplicates: number) =>
  `loaded ${fmt(loaded)} new ${plural(loaded, 'ticket')}, ${fmt(duplicates)} ${plural(duplicates, 'duplicate')} skipped${duplicates ? ' (already in the campaign, or repeated in the list)' : ''}`;

function loadTicketsForm(campaignId: string): HTMLElement {
  const text = h('textarea', { id: 'f-codes', rows: '6', placeholder: 'One code per line', 'data-testid': 'codes' }) as HTMLTextAreaElement;
  const file = h('input', { id: 'f-file', type: 'file', accept: '.csv,.txt,text/csv,text/plain', 'data-testid': 'codes-file' }) as HTMLInputElement;
  const progress = h('progress', { max: '1', value: '0', 'data-testid': 'load-progress', 'aria-label': 'Codes checked' }) as HTMLProgressElement;
  const status = h('div', { 'data-testid': 'load-status', role: 'status' });
  const form = h(
    'form.stack',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const source = file.files?.[0] ? await file.files[0].text() : text.value;
        const codes = parseCodes(source);
        if (codes.length === 0) {
          status.textContent = 'No codes to load.';
          return;
        }
        const BATCH = 10_000;
        let loaded = 0;
        let duplicates = 0;
        progress.max = codes.length;
        progress.value = 0;
        try {
          for (let i = 0; i < codes.length; i += BATCH) {
            // loadTickets answers what this call added and what it skipped: the message adds them up.
            const data = await gql<{ loadTickets: { loaded: number; duplicates: number; campaign: { stats: { total: number } } } }>(
              'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates campaign { stats { total } } } }',
              { id: campaignId, codes: codes.slice(i, i + BATCH) },
            );
            loaded += data.loadTickets.loaded;
            duplicates += data.loadTickets.duplicates;
            const total = data.loadTickets.campaign.stats.total;
            const checked = Math.min(codes.length, i + BATCH);
            progress.value = checked;
            status.textContent = checked < codes.length ? `Checked ${fmt(checked)} of ${fmt(codes.length)} codes: ${loadedText(loaded, duplicates)} so far…` : `Done: ${loadedText(loaded, duplicates)}. The campaign has ${fmt(total)} ${plural(total, 'ticket')}.`;
          }
          text.value = '';
          file.value = '';
        } catch (error) {
          status.replaceChildren(
            h('span', {}, loaded + duplicates > 0 ? `Stopped after ${fmt(loaded + duplicates)} of ${fmt(codes.length)} codes: ${loadedText(loaded, duplicates)}. Loading the same list again loads the rest. ` : ''),
            problem(error),
          );
        }
      },
    },
    h('label', { for: 'f-codes' }, 'Ticket codes, one per line'),
    text,
    h('label', { for: 'f-file' }, 'or a CSV file (first column)'),
    file,
    h('button', { type: 'submit', 'data-testid': 'load' }, 'Load'),
    progress,
    status,
  );
  return form;
}

/** The "Load tickets" section, or null for a key that may not load. */
export function loadTicketsPanel(campaignId: string): HTMLElement | null {
  return may() ? h('section', { 'data-testid': 'load-section' }, h('h2', {}, 'Load tickets'), loadTicketsForm(campaignId)) : null;
}
