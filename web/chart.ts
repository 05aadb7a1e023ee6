// A time chart of speed (km/h, left axis) and battery (%, right axis), drawn on a canvas. The
// canvas is decorative for screen readers; the figure's caption carries the summary.

export interface Sample {
  at: number;
  speed?: number;
  battery?: number;
}

const SPEED = '#1f6feb';
const BATTERY = '#1a7f37';

function niceMax(value: number): number {
  if (value <= 0) return 10;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  // Multiples that divide into four even steps for the grid.
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * magnitude >= value) return m * magnitude;
  return 10 * magnitude;
}

export function drawChart(canvas: HTMLCanvasElement, samples: readonly Sample[], range: { from: number; to: number }): void {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 600;
  const height = canvas.clientHeight || 240;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const ctx = canvas.getContext('2d');
  if (ctx === null) return;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);

  const left = 48;
  const right = 48;
  const top = 16;
  const bottom = 28;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const speeds = samples.filter((s) => s.speed !== undefined).map((s) => s.speed!);
  const speedMax = niceMax(Math.max(0, ...speeds));
  const span = Math.max(1, range.to - range.from);
  const xOf = (at: number) => left + ((at - range.from) / span) * plotW;

  ctx.font = '11px system-ui, sans-serif';
  ctx.lineWidth = 1;
  // Horizontal grid with both axes' labels.
  for (let i = 0; i <= 4; i++) {
    const y = Math.round(top + (plotH * i) / 4) + 0.5;
    ctx.strokeStyle = '#d8dee4';
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + plotW, y);
    ctx.stroke();
    ctx.fillStyle = SPEED;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText(String(Number((speedMax * (1 - i / 4)).toFixed(1))), left - 6, y);
    ctx.fillStyle = BATTERY;
    ctx.textAlign = 'left';
    ctx.fillText(`${100 - 25 * i}%`, left + plotW + 6, y);
  }
  // Time labels: one per hour-ish, at most 7.
  ctx.fillStyle = '#57606a';
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (let i = 0; i <= 6; i++) {
    const at = range.from + (span * i) / 6;
    const text = new Date(at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
    ctx.fillText(text, xOf(at), top + plotH + 8);
  }

  const series = (color: string, pick: (s: Sample) => number | undefined, max: number) => {
    const points = samples.filter((s) => pick(s) !== undefined);
    if (points.length === 0) return;
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    points.forEach((s, i) => {
      const x = xOf(s.at);
      const y = top + plotH * (1 - Math.min(1, Math.max(0, pick(s)! / max)));
      if (i === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    });
    ctx.stroke();
    if (points.length < 30) {
      for (const s of points) {
        ctx.beginPath();
        ctx.arc(xOf(s.at), top + plotH * (1 - Math.min(1, Math.max(0, pick(s)! / max))), 3, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
  };
  series(SPEED, (s) => s.speed, speedMax);
  series(BATTERY, (s) => s.battery, 100);

  if (samples.length === 0) {
    ctx.fillStyle = '#57606a';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.font = '14px system-ui, sans-serif';
    ctx.fillText('No speed or battery readings in this period', left + plotW / 2, top + plotH / 2);
  }
}
