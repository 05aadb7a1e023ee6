// Charts on uPlot. A time chart of speed (km/h, left axis) and battery (%, right axis): the time
// axis fits the data it is given, hovering shows each series' value at that moment in the legend,
// dragging across the plot zooms into that span and a double click zooms back out. A chart by date
// of a summary report: distance as bars (km, left axis) and driving time as a line (hours, right
// axis). uPlot draws on a canvas, so the figure's caption (set by the page) carries the summary
// for screen readers.
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

const HEIGHT = 260;

/** Keeps the plot as wide as its container; answers the observer, to disconnect when the chart goes. */
function fitWidth(plot: uPlot, container: HTMLElement): ResizeObserver {
  const resize = new ResizeObserver(() => {
    const width = container.clientWidth;
    if (width > 0 && Math.abs(width - plot.width) > 1) plot.setSize({ width, height: HEIGHT });
  });
  resize.observe(container);
  return resize;
}

/** A note over the plot, shown while it has no data. */
function emptyNote(text: string): HTMLParagraphElement {
  const empty = document.createElement('p');
  empty.className = 'chart-empty muted';
  empty.textContent = text;
  return empty;
}

export function createChart(container: HTMLElement): Chart {
  const empty = emptyNote('No speed or battery readings in this period.');
  const options: uPlot.Options = {
    width: Math.max(300, container.clientWidth || 600),
    height: HEIGHT,
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
  const resize = fitWidth(plot, container);

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

/** One date of a summary report by day. */
export interface DaySample {
  /** `YYYY-MM-DD`, in the report's time zone. */
  date: string;
  distanceKm: number;
  drivingHours: number;
}

export interface DailyChart {
  /** Replaces the dates shown; the axes fit them. */
  setData(days: readonly DaySample[]): void;
  destroy(): void;
}

const DISTANCE = '#1f6feb';
const DRIVING = '#bc4c00';
const DAY = 86_400;

/**
 * A chart by date: distance as bars (km, left axis), driving time as a line with points (hours,
 * right axis). A date is placed at its midnight in UTC and its ticks are read in UTC, so each
 * label is the report's own date whatever the browser's time zone.
 */
export function createDailyChart(container: HTMLElement): DailyChart {
  const empty = emptyNote('Nothing was counted on these dates.');
  const format = uPlot.fmtDate('{YYYY}-{MM}-{DD}');
  const utc = (seconds: number) => uPlot.tzDate(new Date(seconds * 1000), 'UTC');
  const dateText = (seconds: number) => format(utc(seconds));
  const options: uPlot.Options = {
    width: Math.max(300, container.clientWidth || 600),
    height: HEIGHT,
    tzDate: utc,
    scales: {
      // Half a day on either side, so the first and last bars are whole.
      x: { time: true, range: (_u, min, max) => [(min ?? 0) - DAY / 2, (max ?? 0) + DAY / 2] },
      km: { range: (_u, _min, max) => [0, niceMax(max ?? 0)] },
      hours: { range: (_u, _min, max) => [0, niceMax(max ?? 0)] },
    },
    series: [
      { label: 'Date', value: (_u, v) => (v === null ? '—' : dateText(v)) },
      {
        label: 'Distance', scale: 'km', stroke: DISTANCE, fill: 'rgba(31, 111, 235, 0.35)', width: 1,
        paths: uPlot.paths.bars!({ size: [0.6, 80], each: (_u, _series, index, _left, _top, _width, height) => {
          if (height > 0) drawn.add(index);
        } }),
        points: { show: false },
        value: (_u, v) => (v === null ? '—' : `${v.toFixed(1)} km`),
      },
      {
        label: 'Driving', scale: 'hours', stroke: DRIVING, width: 2, points: { size: 6 },
        value: (_u, v) => (v === null ? '—' : `${v.toFixed(2)} h`),
      },
    ],
    axes: [
      // Whole days only: a tick per day, or per few days when they are many.
      { space: 60, incrs: [DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 91 * DAY], values: (_u, ticks) => ticks.map(dateText) },
      { scale: 'km', stroke: DISTANCE, label: 'km', size: 50 },
      { scale: 'hours', side: 1, stroke: DRIVING, label: 'hours', size: 50, grid: { show: false } },
    ],
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    hooks: {
      // For whoever inspects the page (tests among them): how many bars the last drawing drew.
      draw: [() => {
        container.dataset.bars = String(drawn.size);
      }],
    },
  };
  /** The indexes of the bars drawn since the data was last set. */
  const drawn = new Set<number>();
  const plot = new uPlot(options, [[], [], []], container);
  container.append(empty);
  const resize = fitWidth(plot, container);
  return {
    setData(days) {
      const xs = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
      empty.hidden = days.length > 0;
      // For whoever inspects the page (tests among them): the dates on show.
      container.dataset.days = String(days.length);
      container.dataset.from = days[0]?.date ?? '';
      container.dataset.to = days.at(-1)?.date ?? '';
      drawn.clear();
      plot.setData([xs, days.map((d) => d.distanceKm), days.map((d) => d.drivingHours)]);
    },
    destroy() {
      resize.disconnect();
      plot.destroy();
    },
  };
}
