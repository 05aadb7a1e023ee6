// A time chart of speed (km/h, left axis) and battery (%, right axis) on uPlot: the time axis
// fits the data it is given, hovering shows each series' value at that moment in the legend,
// dragging across the plot zooms into that span and a double click zooms back out. uPlot draws
// on a canvas, so the figure's caption (set by the page) carries the summary for screen readers.
import uPlot from 'uplot';

export interface Sample {
  at: number;
  speed?: number;
  battery?: number;
}

const SPEED = '#1f6feb';
const BATTERY = '#1a7f37';

export interface Chart {
  /** Replaces the data; the time axis fits it again unless the person has zoomed in (or `reset`). */
  setData(samples: readonly Sample[], reset?: boolean): void;
  /** The span the chart shows now (after any zoom), in milliseconds since the epoch. */
  window(): { from: number; to: number } | undefined;
  destroy(): void;
}

function niceMax(value: number): number {
  if (value <= 0) return 10;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * magnitude >= value) return m * magnitude;
  return 10 * magnitude;
}

function timeText(seconds: number | null): string {
  return seconds === null ? '—' : new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

export function createChart(container: HTMLElement): Chart {
  const empty = document.createElement('p');
  empty.className = 'chart-empty muted';
  empty.textContent = 'No speed or battery readings in this period.';
  const options: uPlot.Options = {
    width: Math.max(300, container.clientWidth || 600),
    height: 260,
    scales: {
      x: { time: true },
      speed: { range: (_u, _min, max) => [0, niceMax(max ?? 0)] },
      battery: { range: [0, 100] },
    },
    series: [
      { label: 'Time', value: (_u, v) => timeText(v) },
      { label: 'Speed', scale: 'speed', stroke: SPEED, width: 2, spanGaps: true, points: { size: 5 }, value: (_u, v) => (v === null ? '—' : `${v.toFixed(1)} km/h`) },
      { label: 'Battery', scale: 'battery', stroke: BATTERY, width: 2, spanGaps: true, points: { size: 5 }, value: (_u, v) => (v === null ? '—' : `${Math.round(v)} %`) },
    ],
    axes: [
      {},
      { scale: 'speed', stroke: SPEED, label: 'km/h', size: 50 },
      { scale: 'battery', side: 1, stroke: BATTERY, label: '%', size: 50, grid: { show: false } },
    ],
    cursor: { drag: { x: true, y: false, setScale: true } },
    legend: { live: true },
    hooks: {
      setSelect: [(u) => {
        if (u.select.width > 0) zoomed = true;
      }],
      // The span on show, for whoever inspects the page (tests among them).
      setScale: [(u, key) => {
        if (key !== 'x') return;
        const { min, max } = u.scales.x!;
        if (typeof min === 'number' && typeof max === 'number') {
          container.dataset.from = new Date(min * 1000).toISOString();
          container.dataset.to = new Date(max * 1000).toISOString();
        }
      }],
    },
  };
  let zoomed = false;
  const plot = new uPlot(options, [[], [], []], container);
  container.append(empty);
  // uPlot's double click zooms back out to the whole data.
  plot.over.addEventListener('dblclick', () => {
    zoomed = false;
  });
  const resize = new ResizeObserver(() => {
    const width = container.clientWidth;
    if (width > 0 && Math.abs(width - plot.width) > 1) plot.setSize({ width, height: 260 });
  });
  resize.observe(container);

  return {
    setData(samples, reset = false) {
      const xs: number[] = [];
      const speeds: (number | null)[] = [];
      const batteries: (number | null)[] = [];
      for (const s of samples) {
        xs.push(s.at / 1000);
        speeds.push(s.speed ?? null);
        batteries.push(s.battery ?? null);
      }
      empty.hidden = samples.length > 0;
      if (reset) zoomed = false;
      // With `true`, the scales are fitted to the new data; a zoomed-in view is kept.
      plot.setData([xs, speeds, batteries], !zoomed);
    },
    window() {
      const { min, max } = plot.scales.x ?? {};
      return min === undefined || max === undefined || min === null || max === null ? undefined : { from: min * 1000, to: max * 1000 };
    },
    destroy() {
      resize.disconnect();
      plot.destroy();
    },
  };
}
