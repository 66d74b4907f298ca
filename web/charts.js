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

/**
 * One chart: a titled figure with a uPlot inside that follows its container's width.
 * Charts with the same `syncKey` share the cursor.
 */
export class RunChart {
  constructor(container, spec, { syncKey, height = 170 } = {}) {
    this.spec = spec;
    this.height = height;
    this.syncKey = syncKey;
    this.plotBox = el('div', { class: 'chart-plot' });
    this.figure = el('figure', { class: 'chart', dataset: { chart: spec.id } },
      el('figcaption', { text: spec.title }), this.plotBox);
    container.append(this.figure);
    this.plot = null;
    this.yMax = null;
    this.resizer = new ResizeObserver(() => this._resize());
    this.resizer.observe(this.plotBox);
  }

  /** Draws `series`; `yMax` (optional) fixes the top of the y axis so side-by-side runs compare. */
  update(series, yMax = null) {
    const data = chartData(this.spec, series);
    this.yMax = yMax;
    const axis = timeAxis(spanOf(data));
    if (this.plot && this.axis?.unit !== axis.unit) {
      this.plot.destroy();
      this.plot = null;
    }
    this.axis = axis;
    if (!this.plot) {
      this.plot = new uPlot(this._options(), data, this.plotBox);
    } else {
      this.plot.setData(data);
    }
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
    return {
      width: this._width(),
      height: this.height,
      cursor: { sync: this.syncKey ? { key: this.syncKey } : undefined, drag: { x: true, y: false } },
      legend: { live: true },
      scales: { x: { time: false }, y: { range: yRange } },
      axes: [
        {
          label: `time (${this.axis.unit})`, labelSize: 18, size: 36, incrs: this.axis.incrs,
          values: (u, ticks) => ticks.map(this.axis.format), stroke: '#475569',
          grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1' },
        },
        {
          label: spec.unit, labelSize: 18, size: 46, stroke: '#475569',
          grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1' },
        },
      ],
      series: [
        { label: 't', value: (u, v) => (v === null || v === undefined ? '—' : formatClock(v)) },
        ...spec.lines.map((line) => ({
          label: line.label,
          stroke: line.color,
          width: 1.75,
          dash: line.dash,
          paths: stepped,
          points: { show: false },
          value: (u, v) => (v === null || v === undefined ? '—' : String(Number(Number(v).toPrecision(4)))),
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

/** The legend's time: seconds for short runs, then "d 3, 14:05:30" style for long ones. */
function formatClock(t) {
  if (t < 4 * HOUR) return `${Number(t.toFixed(1))} s`;
  const day = Math.floor(t / DAY);
  const rest = t - day * DAY;
  const pad = (n) => String(Math.floor(n)).padStart(2, '0');
  const clock = `${pad(rest / HOUR)}:${pad((rest % HOUR) / 60)}:${pad(rest % 60)}`;
  return day > 0 ? `day ${day + 1}, ${clock}` : clock;
}

/** A column of charts for one run (RUN_CHARTS unless `specs` says otherwise), cursor shared under `syncKey`. */
export class RunCharts {
  /**
   * `nodesWhenPresent`: add NODES_CHART after the others whenever a run has a `nodes` column (the
   * playground, whose runs switch between fixed-delay nodes and a cluster), hidden otherwise.
   */
  constructor(container, { syncKey, specs = RUN_CHARTS, height, nodesWhenPresent = false } = {}) {
    this.container = container;
    this.options = { syncKey, height };
    this.nodesWhenPresent = nodesWhenPresent;
    this.nodes = null;
    this.charts = specs.map((spec) => new RunChart(container, spec, this.options));
  }

  /** @param {object} series the run's series; @param {Object<string, number>} [yMax] per chart id */
  update(series, yMax = {}) {
    const clustered = Array.isArray(series?.nodes) && series.nodes.length > 0;
    if (this.nodesWhenPresent && clustered && !this.nodes) {
      this.nodes = new RunChart(this.container, NODES_CHART, this.options);
      this.charts.push(this.nodes);
    }
    if (this.nodes) this.nodes.figure.hidden = !clustered;
    for (const chart of this.charts) {
      if (!chart.figure.hidden) chart.update(series, yMax[chart.spec.id] ?? null);
    }
  }
}
