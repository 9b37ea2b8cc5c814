// A small SVG line chart for docs/ (no chart library: two series over a handful of points).

export type Series = { label: string; color: string; points: { x: number; y: number }[]; axis: 'left' | 'right' };

const W = 640;
const H = 360;
const PAD = { left: 64, right: 64, top: 36, bottom: 48 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((m) => m >= v)!;
}

/** x on a log2 scale (concurrency levels double), y linear from 0 per axis. */
export function lineChartSvg(opts: { title: string; xLabel: string; leftLabel: string; rightLabel: string; series: Series[]; marker?: { x: number; label: string } }): string {
  const xs = [...new Set(opts.series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const lx = (x: number) => Math.log2(x);
  const [x0, x1] = [lx(xs[0]!), lx(xs[xs.length - 1]!)];
  const px = (x: number) => PAD.left + ((lx(x) - x0) / Math.max(1e-9, x1 - x0)) * (W - PAD.left - PAD.right);
  const max = { left: 1, right: 1 };
  for (const s of opts.series) max[s.axis] = Math.max(max[s.axis], niceMax(Math.max(...s.points.map((p) => p.y))));
  const py = (y: number, axis: 'left' | 'right') => H - PAD.bottom - (y / max[axis]) * (H - PAD.top - PAD.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(opts.title)}</text>`,
    `<line x1="${PAD.left}" y1="${H - PAD.bottom}" x2="${W - PAD.right}" y2="${H - PAD.bottom}" stroke="#333"/>`,
    `<text x="${W / 2}" y="${H - 10}" text-anchor="middle">${esc(opts.xLabel)}</text>`,
  ];
  for (const x of xs) {
    out.push(`<text x="${px(x)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${x}</text>`);
    out.push(`<line x1="${px(x)}" y1="${PAD.top}" x2="${px(x)}" y2="${H - PAD.bottom}" stroke="#eee"/>`);
  }
  for (const axis of ['left', 'right'] as const) {
    const x = axis === 'left' ? PAD.left : W - PAD.right;
    const color = opts.series.find((s) => s.axis === axis)?.color ?? '#333';
    out.push(`<line x1="${x}" y1="${PAD.top}" x2="${x}" y2="${H - PAD.bottom}" stroke="${color}"/>`);
    for (let i = 0; i <= 4; i++) {
      const v = (max[axis] * i) / 4;
      out.push(`<text x="${axis === 'left' ? x - 6 : x + 6}" y="${py(v, axis) + 4}" text-anchor="${axis === 'left' ? 'end' : 'start'}" fill="${color}">${+v.toPrecision(3)}</text>`);
    }
    const label = axis === 'left' ? opts.leftLabel : opts.rightLabel;
    const lxPos = axis === 'left' ? 16 : W - 16;
    out.push(`<text x="${lxPos}" y="${H / 2}" text-anchor="middle" fill="${color}" transform="rotate(-90 ${lxPos} ${H / 2})">${esc(label)}</text>`);
  }
  for (const s of opts.series) {
    const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${px(p.x).toFixed(1)},${py(p.y, s.axis).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const p of s.points) out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y, s.axis).toFixed(1)}" r="3" fill="${s.color}"/>`);
  }
  if (opts.marker) {
    const x = px(opts.marker.x);
    out.push(`<line x1="${x}" y1="${PAD.top}" x2="${x}" y2="${H - PAD.bottom}" stroke="#888" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${x + 4}" y="${PAD.top + 12}" fill="#555">${esc(opts.marker.label)}</text>`);
  }
  opts.series.forEach((s, i) => {
    out.push(`<rect x="${PAD.left + 10 + i * 180}" y="${PAD.top + 4}" width="12" height="3" fill="${s.color}"/>`);
    out.push(`<text x="${PAD.left + 26 + i * 180}" y="${PAD.top + 9}">${esc(s.label)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
