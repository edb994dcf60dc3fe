import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

// Time series charts (analytics counts, metric series, monitor latencies) through uPlot: canvas,
// tens of thousands of points without effort, ~50 KB. One wrapper so every chart has the same
// axes, colours, size handling and accessible name.
//
// After uPlot has drawn, the container carries `data-rendered="<number of x points>"` (set again on
// every redraw): the dashboard benchmark and the browser tests wait for it to know the data is on
// the canvas, not merely fetched.

export interface Series {
  label: string;
  /** One value per x (null: no value there, a gap). */
  values: (number | null)[];
  /** A reference line (an alert's threshold): drawn dashed in its own colour, without points or fill. */
  reference?: { color: string };
}

/** A shaded span of x (Unix seconds), e.g. an incident; `to` null: still open at the chart's end. */
export interface Band {
  from: number;
  to: number | null;
}

/** A y range from 0 (or the lowest value, when below 0) to the highest value plus a tenth. */
const zeroBased: uPlot.Range.Function = (_u, min, max) => {
  const lo = Math.min(0, min ?? 0);
  const hi = Math.max(0, max ?? 0);
  return hi === lo ? [lo, lo + 1] : [lo, hi + (hi - lo) * 0.1];
};

/** An x range half a bucket wider on each side than `x` (the smallest gap between its values). */
const padded =
  (x: number[]): uPlot.Range.Function =>
  (_u, min, max) => {
    let gap = Infinity;
    for (let i = 1; i < x.length; i++) gap = Math.min(gap, x[i] - x[i - 1]);
    const half = Number.isFinite(gap) && gap > 0 ? gap / 2 : 1800;
    return [min - half, max + half];
  };

const COLORS = ["#4338ca", "#0891b2", "#c2410c", "#15803d", "#a21caf", "#b91c1c", "#4d7c0f", "#0369a1"];

export function TimeChart(props: {
  /** Accessible name of the chart (what it shows). */
  title: string;
  /** x values: Unix seconds. */
  x: number[];
  series: Series[];
  height?: number;
  kind?: "line" | "bars";
  /** Draws lines across missing values (null) instead of leaving a gap (sparse measurements). */
  spanGaps?: boolean;
  /** Formats a y value on the axis and in the legend. */
  format?: (v: number) => string;
  /** Shaded spans behind the series (an alert's incidents); `data-bands` says how many were drawn. */
  bands?: Band[];
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot>();
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const bars = props.kind === "bars" ? uPlot.paths.bars?.({ size: [0.7, 60] }) : undefined;
    const fmt = props.format;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: props.height ?? 260,
      hooks: {
        // The bands under the series: shaded from `from` to `to` (or the right edge), full height.
        drawClear: [
          (u) => {
            if (!props.bands?.length) return;
            const { ctx, bbox } = u;
            ctx.save();
            ctx.fillStyle = "rgba(220, 38, 38, 0.14)";
            for (const b of props.bands) {
              const left = Math.max(bbox.left, u.valToPos(b.from, "x", true));
              const right =
                b.to === null ? bbox.left + bbox.width : Math.min(bbox.left + bbox.width, u.valToPos(b.to, "x", true));
              // An incident opened and resolved at neighbouring evaluations still shows: at least 2 px.
              if (right >= left) ctx.fillRect(left, bbox.top, Math.max(2, right - left), bbox.height);
            }
            ctx.restore();
          },
        ],
        draw: [
          (u) => {
            el.dataset.rendered = String(u.data[0].length);
            el.dataset.bands = String(props.bands?.length ?? 0);
            // The y-axis' lowest value drawn, for the tests (bars start at 0).
            el.dataset.yMin = String(u.scales.y.min);
          },
        ],
      },
      // Bars are read by their length, so their axis starts at 0 (uPlot's default range fits the
      // data: a 43 next to a 131 would look a twentieth of it). Lines keep the fitted range.
      // Their x range also reaches half a bucket past the first and last ones, so the edge bars are
      // drawn whole (a two-day chart would show two half bars).
      scales:
        props.kind === "bars"
          ? { x: { time: true, range: padded(props.x) }, y: { range: zeroBased } }
          : { x: { time: true } },
      // One series: its name is the chart's title, and the numbers are in ChartTable.
      legend: { show: props.series.length > 1 },
      axes: [
        { stroke: "#475569", grid: { stroke: "#e2e8f0" } },
        {
          stroke: "#475569",
          grid: { stroke: "#e2e8f0" },
          size: 60,
          values: fmt ? (_u, vals) => vals.map((v) => fmt(v)) : undefined,
        },
      ],
      series: [
        {},
        ...props.series.map((s, i) =>
          s.reference
            ? {
                label: s.label,
                stroke: s.reference.color,
                width: 2,
                dash: [8, 5],
                points: { show: false },
                value: fmt ? (_u: uPlot, v: number | null) => (v === null ? "—" : fmt(v)) : undefined,
              }
            : {
                label: s.label,
                stroke: COLORS[i % COLORS.length],
                width: 2,
                fill: props.kind === "bars" ? COLORS[i % COLORS.length] + "cc" : COLORS[i % COLORS.length] + "14",
                paths: bars,
                spanGaps: props.spanGaps,
                // Lines with few values (or values between gaps) would be invisible without their points.
                points: {
                  show: props.kind !== "bars" && s.values.filter((v) => v !== null).length <= 120,
                  size: 6,
                  fill: COLORS[i % COLORS.length],
                },
                value: fmt ? (_u: uPlot, v: number | null) => (v === null ? "—" : fmt(v)) : undefined,
              },
        ),
      ],
    };
    const data = [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData;
    plot.current?.destroy();
    plot.current = new uPlot(opts, data, el);
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: opts.height }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      delete el.dataset.rendered;
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [props.x, props.series, props.height, props.kind, props.format, props.spanGaps, props.bands]);
  return <div class="chart" ref={box} role="img" aria-label={props.title} />;
}

/**
 * The chart's numbers as a table, behind a "Show the numbers" disclosure (for screen readers,
 * copying, and checking a value): rendered only while open, so a long series costs nothing.
 */
export function ChartTable(props: {
  x: number[];
  series: Series[];
  format?: (v: number) => string;
  /** Formats an x value (default: the local date and time). */
  formatX?: (t: number) => string;
}) {
  const [open, setOpen] = useState(false);
  const fx = props.formatX ?? ((t: number) => new Date(t * 1000).toLocaleString());
  const fy = props.format ?? ((v: number) => String(v));
  return (
    <details class="chart-table" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Show the numbers</summary>
      {open && (
        <div class="chart-table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {props.series.map((s) => (
                  <th key={s.label} scope="col" class="num">
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {props.x.map((t, i) => (
                <tr key={t}>
                  <td>
                    <time dateTime={new Date(t * 1000).toISOString()}>{fx(t)}</time>
                  </td>
                  {props.series.map((s) => (
                    <td key={s.label} class="num">
                      {s.values[i] === null || s.values[i] === undefined ? "—" : fy(s.values[i] as number)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </details>
  );
}
