/**
 * A small SVG line-chart renderer: two axes (linear, logarithmic, or "nines" for percentile
 * spectra), ticks and grid lines, labelled series with optional point markers, and a legend.
 * Self-contained SVG 1.1 text that any browser or image viewer shows; no dependencies.
 */

export type ScaleKind = 'linear' | 'log' | 'nines';

export interface Axis {
  label: string;
  scale: ScaleKind;
}

export interface ChartLine {
  label: string;
  color: string;
  dashed?: boolean;
  /** Heavier stroke, for the thing being measured as opposed to its baselines. */
  emphasis?: boolean;
  /** Circles at each point, for lines of few measured points. */
  markers?: boolean;
  points: Array<{ x: number; y: number }>;
}

export interface LineChart {
  title: string;
  subtitle?: string;
  x: Axis;
  y: Axis;
  lines: ChartLine[];
}

/** Distinct colours readable on white, in the order series are given them. */
export const PALETTE = ['#1565c0', '#e65100', '#2e7d32', '#6a1b9a', '#c62828', '#00838f', '#795548', '#546e7a'];

interface Tick {
  value: number;
  label: string;
  /** Minor ticks get a fainter grid line and no label. */
  major: boolean;
}

interface Scale {
  toPx(value: number): number;
  ticks: Tick[];
}

/** The plot area's width; the legend beside it adds what its longest label needs. */
const PLOT_WIDTH = 534;
const HEIGHT = 460;
const MARGIN = { left: 76, top: 64, bottom: 58 };
/** Roughly the advance of one character at 12 px in a sans-serif face, to size the legend. */
const CHAR_WIDTH = 7;

/** A tick label: few digits, thousands separated, no float noise. */
export function formatNumber(value: number): string {
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 1) return String(Number(value.toPrecision(3)));
  return String(Number(value.toPrecision(2)));
}

function linearScale(min: number, max: number, from: number, to: number): Scale {
  const lo = Math.min(0, min);
  const span = max > lo ? max - lo : 1;
  const rough = span / 6;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough)!;
  const hi = Math.ceil(max / step) * step || step;
  const toPx = (v: number) => from + ((v - lo) / (hi - lo)) * (to - from);
  const ticks: Tick[] = [];
  for (let v = lo; v <= hi + step / 2; v += step) ticks.push({ value: v, label: formatNumber(v), major: true });
  return { toPx, ticks };
}

function logScale(min: number, max: number, from: number, to: number): Scale {
  const lo = Math.floor(Math.log10(min));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(max)));
  const toPx = (v: number) => from + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (to - from);
  const ticks: Tick[] = [];
  // Over few decades the 2 and 5 ticks are labelled too, or the axis would carry two numbers.
  const labelMinor = hi - lo <= 2;
  for (let e = lo; e <= hi; e++) {
    for (const m of [1, 2, 5]) {
      const value = m * 10 ** e;
      if (e === hi && m > 1) break;
      ticks.push({ value, label: m === 1 || labelMinor ? formatNumber(value) : '', major: m === 1 });
    }
  }
  return { toPx, ticks };
}

/** Percentile → its number of nines: 0 → 0, 90 → 1, 99 → 2, 99.9 → 3. */
function nines(percentile: number): number {
  return -Math.log10(Math.max(1 - percentile / 100, 1e-9));
}

function ninesScale(max: number, from: number, to: number): Scale {
  const hi = Math.max(1, nines(max));
  const toPx = (p: number) => from + (nines(p) / hi) * (to - from);
  const ticks = [0, 50, 90, 99, 99.9, 99.99, 99.999]
    .filter((p) => nines(p) <= hi + 1e-9)
    .map((p) => ({ value: p, label: `${p}%`, major: p !== 50 }));
  return { toPx, ticks };
}

function makeScale(kind: ScaleKind, values: number[], from: number, to: number): Scale {
  const finite = values.filter((v) => Number.isFinite(v));
  const max = finite.length ? Math.max(...finite) : 1;
  if (kind === 'nines') return ninesScale(max, from, to);
  if (kind === 'log') {
    const positive = finite.filter((v) => v > 0);
    return logScale(positive.length ? Math.min(...positive) : 0.1, positive.length ? Math.max(...positive) : 1, from, to);
  }
  return linearScale(finite.length ? Math.min(...finite) : 0, max, from, to);
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

const round = (n: number) => Math.round(n * 10) / 10;

/** Renders `chart` as a standalone SVG document. */
export function renderLineChart(chart: LineChart): string {
  const legendWidth = 18 + 34 + Math.max(10, ...chart.lines.map((l) => l.label.length)) * CHAR_WIDTH + 16;
  const width = MARGIN.left + PLOT_WIDTH + legendWidth;
  const plot = { left: MARGIN.left, right: MARGIN.left + PLOT_WIDTH, top: MARGIN.top, bottom: HEIGHT - MARGIN.bottom };
  const points = chart.lines.flatMap((l) => l.points);
  const xs = makeScale(chart.x.scale, points.map((p) => p.x), plot.left, plot.right);
  const ys = makeScale(chart.y.scale, points.map((p) => p.y), plot.bottom, plot.top);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${HEIGHT}" viewBox="0 0 ${width} ${HEIGHT}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<title>${escapeXml(chart.title)}</title>`);
  out.push(`<rect width="${width}" height="${HEIGHT}" fill="#ffffff"/>`);
  out.push(`<text x="${plot.left}" y="26" font-size="16" font-weight="600" fill="#212121">${escapeXml(chart.title)}</text>`);
  if (chart.subtitle) out.push(`<text x="${plot.left}" y="46" fill="#616161">${escapeXml(chart.subtitle)}</text>`);

  out.push('<g class="grid">');
  for (const t of xs.ticks) {
    const x = round(xs.toPx(t.value));
    out.push(`<line x1="${x}" y1="${plot.top}" x2="${x}" y2="${plot.bottom}" stroke="${t.major ? '#e0e0e0' : '#f2f2f2'}"/>`);
  }
  for (const t of ys.ticks) {
    const y = round(ys.toPx(t.value));
    out.push(`<line x1="${plot.left}" y1="${y}" x2="${plot.right}" y2="${y}" stroke="${t.major ? '#e0e0e0' : '#f2f2f2'}"/>`);
  }
  out.push('</g>');

  out.push('<g class="axes" fill="#424242">');
  out.push(`<line x1="${plot.left}" y1="${plot.bottom}" x2="${plot.right}" y2="${plot.bottom}" stroke="#757575"/>`);
  out.push(`<line x1="${plot.left}" y1="${plot.top}" x2="${plot.left}" y2="${plot.bottom}" stroke="#757575"/>`);
  for (const t of xs.ticks) {
    const x = round(xs.toPx(t.value));
    out.push(`<line x1="${x}" y1="${plot.bottom}" x2="${x}" y2="${plot.bottom + (t.major ? 5 : 3)}" stroke="#757575"/>`);
    if (t.label) out.push(`<text x="${x}" y="${plot.bottom + 19}" text-anchor="middle">${escapeXml(t.label)}</text>`);
  }
  for (const t of ys.ticks) {
    const y = round(ys.toPx(t.value));
    out.push(`<line x1="${plot.left - (t.major ? 5 : 3)}" y1="${y}" x2="${plot.left}" y2="${y}" stroke="#757575"/>`);
    if (t.label) out.push(`<text x="${plot.left - 8}" y="${y + 4}" text-anchor="end">${escapeXml(t.label)}</text>`);
  }
  out.push(`<text x="${(plot.left + plot.right) / 2}" y="${HEIGHT - 14}" text-anchor="middle" font-size="13">${escapeXml(chart.x.label)}</text>`);
  out.push(`<text transform="translate(18 ${(plot.top + plot.bottom) / 2}) rotate(-90)" text-anchor="middle" font-size="13">${escapeXml(chart.y.label)}</text>`);
  out.push('</g>');

  out.push('<g class="series" fill="none" stroke-linejoin="round" stroke-linecap="round">');
  for (const line of chart.lines) {
    const coords = line.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)).map((p) => `${round(xs.toPx(p.x))},${round(ys.toPx(p.y))}`);
    if (coords.length === 0) continue;
    const dash = line.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(`<polyline points="${coords.join(' ')}" stroke="${line.color}" stroke-width="${line.emphasis ? 3 : 2}"${dash}><title>${escapeXml(line.label)}</title></polyline>`);
    if (line.markers) for (const c of coords) {
      const [cx, cy] = c.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${line.color}" stroke="#ffffff" stroke-width="1"/>`);
    }
  }
  out.push('</g>');

  out.push('<g class="legend">');
  chart.lines.forEach((line, i) => {
    const y = plot.top + 8 + i * 22;
    const x = plot.right + 18;
    const dash = line.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(`<line x1="${x}" y1="${y}" x2="${x + 26}" y2="${y}" stroke="${line.color}" stroke-width="${line.emphasis ? 3 : 2}"${dash}/>`);
    out.push(`<text x="${x + 34}" y="${y + 4}" fill="#212121">${escapeXml(line.label)}</text>`);
  });
  out.push('</g>');
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
