// Time-series charts of a run (uPlot): which series go on which chart, and a small resizable chart.
import uPlot from 'uplot';
import { el } from './text.js';

/**
 * The charts every run view shows, over the run's series columns (docs/wasm-api.md).
 * `cumulative` columns are drawn as running totals; `range` pins the y axis.
 */
export const RUN_CHARTS = [
  {
    id: 'replicas', title: 'Replicas: desired (HPA) and ready', unit: 'replicas', stepped: true,
    lines: [
      { key: 'desired_replicas', label: 'desired', color: '#7c3aed', dash: [6, 4] },
      { key: 'ready_replicas', label: 'ready', color: '#0f766e' },
    ],
  },
  {
    id: 'waiting', title: 'Requests waiting (vllm:num_requests_waiting)', unit: 'requests',
    lines: [{ key: 'num_requests_waiting', label: 'waiting', color: '#c2410c' }],
  },
  {
    id: 'gpu', title: 'GPU duty cycle (DCGM_FI_DEV_GPU_UTIL)', unit: '%', range: [0, 100],
    lines: [{ key: 'DCGM_FI_DEV_GPU_UTIL', label: 'GPU util', color: '#1d4ed8' }],
  },
  {
    id: 'dropped', title: 'Dropped requests (cumulative)', unit: 'requests', stepped: true,
    lines: [{ key: 'num_dropped', label: 'dropped', color: '#b91c1c', cumulative: true }],
  },
];

/** Cluster mode only: the `nodes` column, nodes launched and not yet terminated, at each scrape. */
export const NODES_CHART = {
  id: 'nodes', title: 'Nodes (launched, not yet terminated)', unit: 'nodes', stepped: true,
  lines: [{ key: 'nodes', label: 'nodes', color: '#475569' }],
};

/** `specs`, followed by NODES_CHART when any of the series has a `nodes` column (cluster mode). */
export function withNodesChart(specs, seriesList) {
  return seriesList.some((series) => Array.isArray(series?.nodes) && series.nodes.length > 0) ? [...specs, NODES_CHART] : specs;
}

/**
 * A column is cumulative in the core if it never decreases; otherwise it holds per-scrape counts
 * and the running total is computed here. Either way the chart shows the running total.
 */
function columnValues(series, line) {
  const values = (series?.[line.key] ?? []).map((v) => (v === null || v === undefined ? null : Number(v)));
  if (!line.cumulative) return values;
  const monotone = values.every((v, i) => i === 0 || v === null || values[i - 1] === null || v >= values[i - 1]);
  if (monotone) return values;
  let total = 0;
  return values.map((v) => (total += v ?? 0));
}

/** The data arrays for one chart spec: [t, ...lines]. */
export function chartData(spec, series) {
  return [(series?.t_s ?? []).map(Number), ...spec.lines.map((line) => columnValues(series, line))];
}

/** The largest value a chart spec shows across several runs' series (to share one y scale). */
export function chartMax(spec, seriesList) {
  let max = 0;
  for (const series of seriesList) {
    for (const values of chartData(spec, series).slice(1)) {
      for (const v of values) if (v !== null && Number.isFinite(v) && v > max) max = v;
    }
  }
  return max;
}

const MINUTE_TICKS = [15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 14400, 28800, 86400];
const HOUR = 3600;
const DAY = 86400;

function trimmed(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/**
 * The time axis for a run of `span` seconds: minutes up to 4 h (the exercise-1 scale), hours up
 * to 3 days, days beyond. Ticks stay on whole units of the chosen scale.
 */
export function timeAxis(span) {
  if (span <= 4 * HOUR) return { unit: 'min', incrs: MINUTE_TICKS, format: (t) => trimmed(t / 60) };
  if (span <= 3 * DAY) {
    return { unit: 'h', incrs: [HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY], format: (t) => trimmed(t / HOUR) };
  }
  return { unit: 'days', incrs: [6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY], format: (t) => trimmed(t / DAY) };
}

function spanOf(data) {
  const t = data[0];
  return t.length ? t[t.length - 1] - t[0] : 0;
}

// ---- Marks: the burst window (shaded bands) and the scale events (vertical lines) ----------------

/**
 * The controllers that decide the replica count; the same list as decision-log.js's
 * REPLICA_AUTOSCALERS (kept here so the chart module stands alone).
 */
const REPLICA_AUTOSCALERS = new Set(['hpa', 'keda', 'planner', 'wva']);

/**
 * The burst windows of a run: the phases at the workload's peak rate, when that peak is at least
 * twice the time-weighted rate of the other phases (a daily curve has no burst). The phases are the
 * ones the core ran (`result.workload.phases`: a preset's, scaled; none for a closed loop) and repeat
 * to fill the run, so each repetition gives a band. Also the windows in which the cloud has no
 * capacity of an instance type (cluster.insufficient_capacity).
 */
export function burstBands(scenario, result) {
  const bands = [];
  const duration = Number(scenario?.duration_s ?? 3600);
  const phases = (Array.isArray(result?.workload?.phases) ? result.workload.phases : [])
    .map((p) => ({ duration_s: Number(p?.duration_s), rate_rps: Number(p?.rate_rps) }))
    .filter((p) => p.duration_s > 0 && Number.isFinite(p.rate_rps));
  const cycle = phases.reduce((sum, p) => sum + p.duration_s, 0);
  const peak = Math.max(0, ...phases.map((p) => p.rate_rps));
  const rest = phases.filter((p) => p.rate_rps < peak);
  const restTime = rest.reduce((sum, p) => sum + p.duration_s, 0);
  const restRate = restTime > 0 ? rest.reduce((sum, p) => sum + p.rate_rps * p.duration_s, 0) / restTime : 0;
  if (cycle > 0 && peak > 0 && rest.length > 0 && peak >= 2 * restRate) {
    for (let start = 0, n = 0; start < duration && n < 400; start += cycle) {
      let t = start;
      for (const p of phases) {
        if (p.rate_rps === peak && t < duration) {
          const last = bands[bands.length - 1];
          if (last && Math.abs(last.to_s - t) < 1e-9) last.to_s = Math.min(duration, t + p.duration_s);
          else { bands.push({ from_s: t, to_s: Math.min(duration, t + p.duration_s), label: 'burst', kind: 'burst' }); n++; }
        }
        t += p.duration_s;
      }
    }
  }
  for (const window of scenario?.cluster?.insufficient_capacity ?? []) {
    const from = Number(window?.from_s), to = Number(window?.until_s);
    if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) continue;
    const what = [window.capacity_type, window.instance_type].filter(Boolean).join(' ');
    bands.push({ from_s: from, to_s: to, kind: 'shortage',
                 label: `${Number(window.probability ?? 1) >= 1 ? 'no' : 'short of'} ${what || 'capacity'}`.trim() });
  }
  return bands;
}

/** The scale events of a run: a replica autoscaler's decisions that changed the replica count. */
export function scaleEvents(decisions) {
  return (decisions ?? []).filter((d) => REPLICA_AUTOSCALERS.has(d?.controller) && d.current_replicas !== d.desired_replicas
                                         && typeof d.t_s === 'number')
    .map((d) => ({ t_s: d.t_s, kind: d.desired_replicas > d.current_replicas ? 'up' : 'down',
                   label: `${d.controller}${d.pool ? ` (${d.pool})` : ''}: ${d.current_replicas} → ${d.desired_replicas} replicas` }));
}

/** The marks of a run: its burst window(s) and its decisions' scale events. */
export function runMarks(scenario, result) {
  return { bands: burstBands(scenario, result), events: scaleEvents(result?.decisions) };
}

const BAND_FILL = { burst: 'rgba(253, 230, 138, 0.5)', shortage: 'rgba(203, 213, 225, 0.55)' };
const BAND_INK = { burst: '#92400e', shortage: '#334155' };
const EVENT_INK = { up: 'rgba(21, 128, 61, 0.75)', down: 'rgba(194, 65, 12, 0.75)', other: 'rgba(71, 85, 105, 0.6)' };

/** A uPlot plugin drawing `chart.marks`: bands under the lines (drawClear), event lines over them (draw). */
function marksPlugin(chart) {
  // The plot area in canvas pixels, the visible time range, and canvas pixels per CSS pixel.
  const frame = (u) => ({
    ...u.bbox, min: u.scales.x.min, max: u.scales.x.max, ctx: u.ctx,
    ratio: u.bbox.width / Math.max(1, u.over.clientWidth || u.bbox.width),
  });
  return {
    hooks: {
      drawClear: [(u) => {
        const bands = chart.marks?.bands ?? [];
        if (!bands.length) return;
        const { left, top, width, height, min, max, ratio, ctx } = frame(u);
        ctx.save();
        let lastLabelEnd = -Infinity;
        for (const band of bands) {
          if (!(band.to_s > min && band.from_s < max)) continue;
          const x0 = Math.max(left, u.valToPos(Math.max(band.from_s, min), 'x', true));
          const x1 = Math.min(left + width, u.valToPos(Math.min(band.to_s, max), 'x', true));
          ctx.fillStyle = BAND_FILL[band.kind] ?? BAND_FILL.burst;
          ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
          if (band.label && x0 > lastLabelEnd) {
            ctx.font = `${Math.round(11 * ratio)}px system-ui, sans-serif`;
            const w = ctx.measureText(band.label).width;
            if (w + 8 * ratio <= x1 - x0) {
              ctx.fillStyle = BAND_INK[band.kind] ?? BAND_INK.burst;
              ctx.textBaseline = 'top';
              // Below the event triangles at the top edge.
              ctx.fillText(band.label, x0 + 4 * ratio, top + ((chart.marks?.events ?? []).length ? 10 : 3) * ratio);
              lastLabelEnd = x0 + w + 8 * ratio;
            }
          }
        }
        ctx.restore();
      }],
      draw: [(u) => {
        const events = chart.marks?.events ?? [];
        if (!events.length) return;
        const { left, top, width, height, min, max, ratio, ctx } = frame(u);
        ctx.save();
        ctx.lineWidth = Math.max(1, Math.round(ratio));
        ctx.setLineDash([3 * ratio, 3 * ratio]);
        const s = 4 * ratio;
        for (const event of events) {
          if (event.t_s < min || event.t_s > max) continue;
          const x = Math.round(u.valToPos(event.t_s, 'x', true)) + 0.5;
          if (x < left || x > left + width) continue;
          const ink = EVENT_INK[event.kind] ?? EVENT_INK.other;
          ctx.strokeStyle = ink;
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          // A small triangle at the top: pointing up for a scale-up, down for a scale-down.
          ctx.fillStyle = ink;
          ctx.beginPath();
          if (event.kind === 'down') { ctx.moveTo(x - s, top); ctx.lineTo(x + s, top); ctx.lineTo(x, top + 1.6 * s); }
          else { ctx.moveTo(x - s, top + 1.6 * s); ctx.lineTo(x + s, top + 1.6 * s); ctx.lineTo(x, top); }
          ctx.closePath();
          ctx.fill();
        }
        ctx.restore();
      }],
    },
  };
}

// ---- Numbers in words -------------------------------------------------------------------------

/** An exact value for the legend and the table: integers whole, fractions to 3 significant digits past the point. */
export function formatValue(v) {
  if (v === null || v === undefined || !Number.isFinite(Number(v))) return '—';
  const n = Number(v);
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  const digits = Math.abs(n) >= 100 ? 1 : Math.abs(n) >= 1 ? 2 : 3;
  return Number(n.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits });
}

// Units that take a singular after a value of 1 ("1 replica").
const SINGULAR = { replicas: 'replica', requests: 'request', nodes: 'node' };

/** A value with the chart's unit: "87.5 %", "4 replicas", "1 replica", "2.1 s". */
function withUnit(v, unit) {
  const text = formatValue(v);
  if (text === '—' || !unit) return text;
  if (unit === '%') return `${text} %`;
  return `${text} ${Number(v) === 1 ? (SINGULAR[unit] ?? unit) : unit}`;
}

/** The legend's time: seconds and minutes for short runs, then "d 3, 14:05:30" style for long ones. */
function formatClock(t) {
  if (t < 4 * HOUR) return `${Number(t.toFixed(1))} s (${trimmed(t / 60)} min)`;
  const day = Math.floor(t / DAY);
  const rest = t - day * DAY;
  const pad = (n) => String(Math.floor(n)).padStart(2, '0');
  const clock = `${pad(rest / HOUR)}:${pad((rest % HOUR) / 60)}:${pad(rest % 60)}`;
  return day > 0 ? `day ${day + 1}, ${clock}` : clock;
}

/** A list of times in words, at most `max` of them: "3, 12.5 and 20 min" / "… and 9 more". */
function timeList(times, axis, max = 6) {
  const shown = times.slice(0, max).map(axis.format);
  const more = times.length - shown.length;
  if (more > 0) return `${shown.join(', ')} ${axis.unit} and ${more} more`;
  if (shown.length === 1) return `${shown[0]} ${axis.unit}`;
  return `${shown.slice(0, -1).join(', ')} and ${shown[shown.length - 1]} ${axis.unit}`;
}

/**
 * One sentence per line of a chart: min, max and when, final; then the marks. `brief`: the scale
 * events only counted (a stack's other charts: the replicas chart lists their times).
 */
export function describeChart(spec, data, axis, marks, { brief = false } = {}) {
  const t = data[0];
  if (!t.length) return 'No data yet.';
  const at = (time) => `${axis.format(time)} ${axis.unit}`;
  const parts = spec.lines.map((line, k) => {
    const values = data[k + 1];
    let min = Infinity, max = -Infinity, tMax = null, final = null, firstRise = null;
    values.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) return;
      if (v < min) min = v;
      if (v > max) { max = v; tMax = t[i]; }
      if (firstRise === null && i > 0 && values[0] !== null && v > values[0]) firstRise = t[i];
      final = v;
    });
    if (final === null) return `${line.label}: no values`;
    const u = (v) => withUnit(v, spec.unit);
    if (line.cumulative) {
      return max <= 0 ? `${line.label}: none` : `${line.label}: ${u(final)} in total, the first at ${at(firstRise ?? t[0])}`;
    }
    if (min === max) return `${line.label}: ${u(final)} throughout`;
    return `${line.label}: min ${u(min)}, max ${u(max)} at ${at(tMax)}, final ${u(final)}`;
  });
  let text = `${parts.join('; ')}.`;
  const start = t[0], end = t[t.length - 1];
  const bands = (marks?.bands ?? []).filter((b) => b.to_s > start && b.from_s < end);
  // Bands by what they mark: "Burst window (shaded): 10–35 min." / "no spot p5.48xlarge (shaded): 12–14 h."
  for (const label of [...new Set(bands.map((b) => b.label ?? ''))]) {
    const these = bands.filter((b) => (b.label ?? '') === label);
    const spans = these.slice(0, 4).map((b) => `${axis.format(Math.max(b.from_s, start))}–${axis.format(Math.min(b.to_s, end))} ${axis.unit}`);
    const name = label === 'burst' ? `Burst window${these.length > 1 ? 's' : ''}` : label ? label[0].toUpperCase() + label.slice(1) : 'Shaded';
    text += ` ${name} (shaded): ${spans.join(', ')}${these.length > 4 ? ` and ${these.length - 4} more` : ''}.`;
  }
  const events = (marks?.events ?? []).filter((e) => e.t_s >= start && e.t_s <= end);
  if (events.length) {
    const ups = events.filter((e) => e.kind === 'up').length, downs = events.filter((e) => e.kind === 'down').length;
    const what = `${events.length} scale event${events.length > 1 ? 's' : ''}`;
    text += brief ? ` Dashed lines: the ${what}.`
      : ` ${what} (dashed lines; ${ups} up ▲, ${downs} down ▼) at ${timeList(events.map((e) => e.t_s), axis)}.`;
  }
  return text;
}

/** Nice steps for the data table, in seconds. */
const TABLE_STEPS = [15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, DAY];
const TABLE_ROWS = 120;

/** The indices the data table shows: one scrape per step (at most ~120 rows), and the last one. */
function tableIndices(t) {
  if (t.length <= TABLE_ROWS) return t.map((_, i) => i);
  const span = t[t.length - 1] - t[0];
  const step = TABLE_STEPS.find((s) => span / s <= TABLE_ROWS) ?? Math.ceil(span / TABLE_ROWS);
  const indices = [];
  let i = 0;
  for (let at = t[0]; at <= t[t.length - 1]; at += step) {
    while (i + 1 < t.length && t[i + 1] <= at + 1e-9) i++;
    if (indices[indices.length - 1] !== i) indices.push(i);
  }
  if (indices[indices.length - 1] !== t.length - 1) indices.push(t.length - 1);
  return indices;
}

/** "every 1 min", "every 15 s", "every 2 h". */
function stepText(seconds) {
  if (seconds % HOUR === 0) return `${seconds / HOUR} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${Number(seconds.toFixed(1))} s`;
}

// Text widths for the y axis: its size follows the widest tick label.
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif';
const LABEL_FONT = `bold ${AXIS_FONT}`;
let measureContext = null;
function textWidth(text, font = AXIS_FONT) {
  measureContext ??= document.createElement('canvas').getContext('2d');
  if (!measureContext) return String(text).length * 7.2;
  measureContext.font = font;
  return measureContext.measureText(String(text)).width;
}

const TICK_SIZE = 6;   // px of the tick marks
const TICK_GAP = 4;    // px between a tick and its label
const LABEL_SIZE = 18; // px of the band holding the axis title
const LABEL_GAP = 4;   // px between the widest tick label and the title

/** uPlot axis `size`: ticks, gap and the widest tick label, plus room between the labels and the title. */
function yAxisSize(u, values) {
  // At least four digits wide, so the charts of a stack line up unless one needs more room.
  const widest = (values ?? []).reduce((w, v) => Math.max(w, v === null || v === undefined ? 0 : textWidth(v)), textWidth('1000'));
  return Math.ceil(TICK_SIZE + TICK_GAP + widest + LABEL_GAP);
}

let chartCount = 0;

/**
 * One chart: a titled figure with a uPlot inside that follows its container's width.
 * Charts with the same `syncKey` share the cursor.
 *
 * For a reader without sight or a mouse: the figure is described by a sentence with each line's
 * minimum, maximum (and when) and final value, and the marks; the plot is one tab stop, a slider
 * over the scrapes (ArrowLeft/ArrowRight step point by point, PageUp/PageDown by 10, Home/End),
 * whose value text and the legend give the exact values; Enter opens a table of the values (the
 * small "table" button opens it with a mouse). `marks` ({bands: [{from_s, to_s, label}], events:
 * [{t_s, label, kind?}]}) shade the burst window and draw the scale events.
 */
export class RunChart {
  constructor(container, spec, { syncKey, height = 170, marks = null } = {}) {
    this.spec = spec;
    this.height = height;
    this.syncKey = syncKey;
    this.marks = marks;
    this.idx = null;
    this.data = [[]];
    const id = `chart-${++chartCount}`;
    this.numbers = el('p', { class: 'chart-numbers', id: `${id}-numbers` });
    const keys = el('span', { class: 'sr-only', id: `${id}-keys`,
                              text: 'Left and right arrows step through the scrapes, Home and End go to the first and last; Enter shows the values as a table.' });
    this.tableBox = el('div', { class: 'chart-table', id: `${id}-table`, hidden: true, tabindex: '0', role: 'region',
                                'aria-label': `${spec.title}: the values`,
                                onkeydown: (event) => { if (event.key === 'Escape') { event.preventDefault(); this.toggleTable(false, { focus: 'plot' }); } } });
    this.tableButton = el('button', { type: 'button', class: 'link chart-table-toggle', tabindex: '-1', text: 'table of values',
                                      'aria-expanded': 'false', 'aria-controls': this.tableBox.id,
                                      onclick: () => this.toggleTable() });
    this.plotBox = el('div', { class: 'chart-plot', tabindex: '0', role: 'slider',
                               'aria-label': `${spec.title}, over time`, 'aria-describedby': `${this.numbers.id} ${keys.id}`,
                               'aria-valuemin': '0', 'aria-valuemax': '0', 'aria-valuenow': '0', 'aria-valuetext': 'no data yet',
                               onkeydown: (event) => this._key(event),
                               onfocus: () => this._focused(),
                               onblur: () => this._blurred() });
    this.figure = el('figure', { class: 'chart', dataset: { chart: spec.id }, 'aria-describedby': this.numbers.id },
      el('figcaption', { text: spec.title }), this.plotBox,
      el('div', { class: 'chart-meta' }, this.numbers, this.tableButton), keys, this.tableBox);
    container.append(this.figure);
    this.plot = null;
    this.yMax = null;
    this.resizer = new ResizeObserver(() => this._resize());
    this.resizer.observe(this.plotBox);
  }

  /**
   * Draws `series`; `yMax` (optional) fixes the top of the y axis so side-by-side runs compare;
   * `marks` (optional, else the constructor's) are the bands and events to draw.
   */
  update(series, yMax = null, marks = undefined) {
    const data = chartData(this.spec, series);
    this.data = data;
    this.yMax = yMax;
    if (marks !== undefined) this.marks = marks;
    const axis = timeAxis(spanOf(data));
    if (this.plot && this.axis?.unit !== axis.unit) {
      this.plot.destroy();
      this.plot = null;
    }
    this.axis = axis;
    if (!this.plot) {
      this.plot = new uPlot(this._options(), data, this.plotBox);
      // The canvas is a picture of what the description, the slider and the table say.
      this.plot.root.setAttribute('aria-hidden', 'true');
    } else {
      this.plot.setData(data);
    }
    const n = data[0].length;
    if (this.idx !== null && this.idx >= n) this.idx = n ? n - 1 : null;
    this.numbers.textContent = describeChart(this.spec, data, axis, this.marks, { brief: this.spec.id !== 'replicas' });
    this.plotBox.setAttribute('aria-valuemax', String(Math.max(0, n - 1)));
    this._announce();
    if (!this.tableBox.hidden) this._renderTable();
  }

  /** Opens or closes the table of values (`open` omitted: toggles); `focus`: 'table' or 'plot'. */
  toggleTable(open, { focus } = {}) {
    const want = open ?? this.tableBox.hidden;
    this.tableBox.hidden = !want;
    this.tableButton.setAttribute('aria-expanded', String(want));
    this.tableButton.textContent = want ? 'hide table' : 'table of values';
    if (want) this._renderTable();
    else this.tableBox.replaceChildren();
    if (focus === 'table' && want) this.tableBox.focus();
    if (focus === 'plot') this.plotBox.focus();
  }

  _renderTable() {
    const [t, ...lines] = this.data;
    const indices = tableIndices(t);
    const steps = indices.length > 1 ? t[indices[1]] - t[indices[0]] : 0;
    const all = indices.length === t.length;
    const unit = this.spec.unit;
    this.tableBox.replaceChildren(el('table', { class: 'chart-values' },
      el('caption', { text: `${this.spec.title}: ${all ? 'every scrape' : `one scrape every ${stepText(steps)} (${t.length.toLocaleString('en-US')} in the run; the time-series CSV has them all)`}` }),
      el('thead', {}, el('tr', {},
        el('th', { scope: 'col', text: `time (${this.axis.unit})` }),
        this.spec.lines.map((line) => el('th', { scope: 'col', text: `${line.label} (${unit})` })))),
      el('tbody', {}, indices.map((i) => el('tr', {},
        el('th', { scope: 'row', class: 'num', text: this.axis.format(t[i]) }),
        lines.map((values) => el('td', { class: 'num', text: formatValue(values[i]) })))))));
  }

  /** The slider's value text: the time and every line's exact value at the chosen scrape. */
  _valueText(i) {
    const [t, ...lines] = this.data;
    if (i === null || i === undefined || !t.length) return t.length ? 'no point chosen: press an arrow key' : 'no data yet';
    const values = this.spec.lines.map((line, k) => `${line.label} ${withUnit(lines[k][i], this.spec.unit)}`);
    return `t = ${formatClock(t[i])}: ${values.join(', ')}`;
  }

  _announce() {
    this.plotBox.setAttribute('aria-valuenow', String(this.idx ?? 0));
    this.plotBox.setAttribute('aria-valuetext', this._valueText(this.idx));
  }

  /** Moves uPlot's cursor (and the synced charts') to scrape i; the legend shows its values. */
  _moveTo(i) {
    const t = this.data[0];
    if (!this.plot || !t.length) return;
    this.idx = Math.max(0, Math.min(t.length - 1, i));
    this.keyboard = true;
    const left = this.plot.valToPos(t[this.idx], 'x');
    const first = this.data.slice(1).map((values) => values[this.idx]).find((v) => v !== null && Number.isFinite(v));
    const top = first === undefined ? this.plot.over.clientHeight / 2 : this.plot.valToPos(first, 'y');
    this.moving = true;
    this.plot.setCursor({ left, top }, true, true);  // fire the hooks, publish to the synced charts
    this.moving = false;
    this._announce();
  }

  _key(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const n = this.data[0].length;
    const i = this.idx;
    const page = 10;
    let next = null;
    switch (event.key) {
      case 'ArrowRight': case 'ArrowUp': next = i === null ? 0 : i + 1; break;
      case 'ArrowLeft': case 'ArrowDown': next = i === null ? n - 1 : i - 1; break;
      case 'PageUp': next = (i ?? 0) + page; break;
      case 'PageDown': next = (i ?? 0) - page; break;
      case 'Home': next = 0; break;
      case 'End': next = n - 1; break;
      case 'Enter': case ' ':
        event.preventDefault();
        this.toggleTable(undefined, { focus: this.tableBox.hidden ? 'table' : undefined });
        return;
      case 'Escape':
        if (!this.tableBox.hidden) { event.preventDefault(); this.toggleTable(false); }
        return;
      default: return;
    }
    event.preventDefault();
    if (n) this._moveTo(next);
  }

  _focused() {
    // From the keyboard (not a click, where the mouse already places the cursor): show the point.
    if (this.plotBox.matches(':focus-visible') && this.data[0].length) this._moveTo(this.idx ?? 0);
  }

  _blurred() {
    if (this.keyboard && this.plot) this.plot.setCursor({ left: -10, top: -10 }, true, true);
    this.keyboard = false;
  }

  _width() {
    return Math.max(240, Math.floor(this.plotBox.clientWidth || this.figure.clientWidth || 480));
  }

  _resize() {
    if (this.plot) this.plot.setSize({ width: this._width(), height: this.height });
  }

  _options() {
    const spec = this.spec;
    const stepped = spec.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    const yRange = (u, min, max) => {
      if (spec.range) return spec.range;
      const top = Math.max(this.yMax ?? max ?? 0, 1);
      return [0, Math.ceil(top * 1.08)];
    };
    const axisLines = { grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1', size: TICK_SIZE } };
    return {
      width: this._width(),
      height: this.height,
      cursor: { sync: this.syncKey ? { key: this.syncKey } : undefined, drag: { x: true, y: false } },
      legend: { live: true },
      scales: { x: { time: false }, y: { range: yRange } },
      plugins: [marksPlugin(this)],
      hooks: {
        // The mouse (or a synced chart) moved the cursor: the slider follows, so the keys go on from there.
        setCursor: [(u) => {
          if (this.moving || u.cursor.idx === null || u.cursor.idx === undefined || u.cursor.idx === this.idx) return;
          this.idx = u.cursor.idx;
          this._announce();
        }],
      },
      axes: [
        {
          label: `time (${this.axis.unit})`, labelSize: LABEL_SIZE, labelFont: LABEL_FONT, font: AXIS_FONT, size: 34, gap: TICK_GAP,
          incrs: this.axis.incrs, values: (u, ticks) => ticks.map(this.axis.format), stroke: '#475569', ...axisLines,
        },
        {
          label: spec.unit, labelSize: LABEL_SIZE, labelGap: 0, labelFont: LABEL_FONT, font: AXIS_FONT, gap: TICK_GAP,
          size: yAxisSize, stroke: '#475569', ...axisLines,
        },
      ],
      series: [
        { label: 'time', value: (u, v) => (v === null || v === undefined ? '—' : formatClock(v)) },
        ...spec.lines.map((line) => ({
          label: line.label,
          stroke: line.color,
          width: 1.75,
          dash: line.dash,
          paths: stepped,
          points: { show: false },
          value: (u, v) => withUnit(v, spec.unit),
        })),
      ],
    };
  }

  destroy() {
    this.resizer.disconnect();
    this.plot?.destroy();
    this.figure.remove();
  }
}

/** A column of charts for one run (RUN_CHARTS unless `specs` says otherwise), cursor shared under `syncKey`. */
export class RunCharts {
  /**
   * `nodesWhenPresent`: add NODES_CHART after the others whenever a run has a `nodes` column (the
   * playground, whose runs switch between fixed-delay nodes and a cluster), hidden otherwise.
   */
  constructor(container, { syncKey, specs = RUN_CHARTS, height, nodesWhenPresent = false, marks = null } = {}) {
    this.container = container;
    this.options = { syncKey, height, marks };
    this.nodesWhenPresent = nodesWhenPresent;
    this.nodes = null;
    this.charts = specs.map((spec) => new RunChart(container, spec, this.options));
  }

  /** The marks of a run (its burst windows and scale events): runMarks. */
  static marksFor(scenario, result) {
    return runMarks(scenario, result);
  }

  /**
   * @param {object} series the run's series; @param {Object<string, number>} [yMax] per chart id;
   * @param {{bands?: object[], events?: object[]}} [marks] drawn on every chart (runMarks)
   */
  update(series, yMax = {}, marks = undefined) {
    const clustered = Array.isArray(series?.nodes) && series.nodes.length > 0;
    if (this.nodesWhenPresent && clustered && !this.nodes) {
      this.nodes = new RunChart(this.container, NODES_CHART, this.options);
      this.charts.push(this.nodes);
    }
    if (this.nodes) this.nodes.figure.hidden = !clustered;
    if (marks !== undefined) this.options.marks = marks;
    for (const chart of this.charts) {
      if (!chart.figure.hidden) chart.update(series, yMax?.[chart.spec.id] ?? null, this.options.marks);
    }
  }
}
