// CSV export of a run: the time series (one row per scrape) and the per-request lifecycle.

/** Quotes one CSV field when it needs it (RFC 4180); null and undefined become empty fields. */
function field(value) {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Rows of objects or arrays → CSV text with a header line. */
export function toCsv(header, rows) {
  const lines = [header.map(field).join(',')];
  for (const row of rows) {
    lines.push(header.map((key, i) => field(Array.isArray(row) ? row[i] : row[key])).join(','));
  }
  return lines.join('\n') + '\n';
}

/** The column-oriented series object → CSV, t_s first, then every other column in its order. */
export function seriesCsv(series) {
  const keys = Object.keys(series ?? {}).filter((k) => Array.isArray(series[k]));
  const header = ['t_s', ...keys.filter((k) => k !== 't_s')].filter((k) => keys.includes(k));
  const length = Math.max(0, ...header.map((k) => series[k].length));
  const rows = [];
  for (let i = 0; i < length; i++) rows.push(header.map((k) => series[k][i]));
  return toCsv(header, rows);
}

const REQUEST_COLUMNS = ['id', 'arrived_at', 'scheduled_at', 'first_token_at', 'completed_at', 'dropped_at',
                         'replica', 'prompt_tokens', 'output_tokens'];

/** The per-request lifecycle → CSV; documented columns first, any extra ones after. */
export function requestsCsv(requests) {
  const extra = new Set();
  for (const r of requests ?? []) for (const k of Object.keys(r)) if (!REQUEST_COLUMNS.includes(k)) extra.add(k);
  return toCsv([...REQUEST_COLUMNS, ...extra], requests ?? []);
}

/** Offers `text` as a file download (a same-origin blob: URL, revoked afterwards). */
export function downloadText(filename, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
