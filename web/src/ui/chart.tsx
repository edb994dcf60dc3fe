import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

// Time series charts (analytics counts, metric series, monitor latencies) through uPlot: canvas,
// tens of thousands of points without effort, ~50 KB. One wrapper so every chart has the same
// axes, colours, size handling and accessible name.

export interface Series {
  label: string;
  /** One value per x (null: no value there, a gap). */
  values: (number | null)[];
}

const COLORS = ["#4338ca", "#0891b2", "#c2410c", "#15803d", "#a21caf", "#b91c1c", "#4d7c0f", "#0369a1"];

export function TimeChart(props: {
  /** Accessible name of the chart (what it shows). */
  title: string;
  /** x values: Unix seconds. */
  x: number[];
  series: Series[];
  height?: number;
  kind?: "line" | "bars";
  /** Formats a y value on the axis and in the legend. */
  format?: (v: number) => string;
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
      scales: { x: { time: true } },
      legend: { show: props.series.length > 0 },
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
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          fill: props.kind === "bars" ? COLORS[i % COLORS.length] + "cc" : COLORS[i % COLORS.length] + "14",
          paths: bars,
          points: { show: false },
          value: fmt ? (_u: uPlot, v: number | null) => (v === null ? "—" : fmt(v)) : undefined,
        })),
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
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [props.x, props.series, props.height, props.kind, props.format]);
  return <div class="chart" ref={box} role="img" aria-label={props.title} />;
}
