//! The charts: what one run did over time, and how the variants of a comparison stand. Each
//! is a small struct holding the data it shows, drawn by [`Chart::draw`] on any backend.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{Chart, DrawError, colour, err};
use super::series::{SeriesData, SleepSeries};

const TITLE_SIZE: u32 = 22;
const LABEL_SIZE: u32 = 16;

/// The unit of the time axis: minutes for runs up to two hours, hours beyond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeAxis {
    per_unit: f64,
    name: &'static str,
}

impl TimeAxis {
    /// Seconds up to 5 minutes, minutes up to 2 hours, hours past that.
    pub fn for_duration(seconds: f64) -> Self {
        if seconds <= 300.0 {
            TimeAxis {
                per_unit: 1.0,
                name: "s",
            }
        } else if seconds <= 2.0 * 3600.0 {
            TimeAxis {
                per_unit: 60.0,
                name: "min",
            }
        } else {
            TimeAxis {
                per_unit: 3600.0,
                name: "h",
            }
        }
    }

    fn desc(&self) -> String {
        format!("time since start ({})", self.name)
    }

    fn x(&self, seconds: f64) -> f64 {
        seconds / self.per_unit
    }
}

/// "scenario: what (detail)" or "scenario / variant: what (detail)".
#[derive(Clone, Debug, PartialEq)]
pub struct Heading {
    pub scenario: String,
    pub variant: Option<String>,
    /// Seeds or sample, e.g. "seed 42" or "5 seeds".
    pub detail: String,
}

impl Heading {
    pub fn title(&self, what: &str) -> String {
        let who = match &self.variant {
            Some(v) => format!("{} / {v}", self.scenario),
            None => self.scenario.clone(),
        };
        if self.detail.is_empty() {
            format!("{who}: {what}")
        } else {
            format!("{who}: {what} ({})", self.detail)
        }
    }
}

/// Split a line at its gaps (NaN), so a group that leaves and rejoins is not joined across.
fn segments(xs: &[f64], ys: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for (&x, &y) in xs.iter().zip(ys) {
        if y.is_finite() {
            cur.push((x, y));
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A sampled value held until the next sample: each stretch as steps, not slopes, so a line
/// between two samples far apart invents no ramp the value never took.
fn steps(segs: Vec<Vec<(f64, f64)>>) -> Vec<Vec<(f64, f64)>> {
    segs.into_iter()
        .map(|seg| {
            let mut out = Vec::with_capacity(seg.len() * 2);
            for (i, &(x, y)) in seg.iter().enumerate() {
                if i > 0 {
                    out.push((x, seg[i - 1].1));
                }
                out.push((x, y));
            }
            out
        })
        .collect()
}

/// The band between `lo` and `hi` as closed polygons, one per stretch without gaps.
fn band(xs: &[f64], lo: &[f64], hi: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut upper = Vec::new();
    let mut lower = Vec::new();
    let mut close = |upper: &mut Vec<(f64, f64)>, lower: &mut Vec<(f64, f64)>| {
        if !upper.is_empty() {
            let mut poly = std::mem::take(upper);
            poly.extend(lower.drain(..).rev());
            out.push(poly);
        }
    };
    for i in 0..xs.len() {
        if lo[i].is_finite() && hi[i].is_finite() {
            upper.push((xs[i], hi[i]));
            lower.push((xs[i], lo[i]));
        } else {
            close(&mut upper, &mut lower);
        }
    }
    close(&mut upper, &mut lower);
    out
}

/// The top of a y axis that shows every finite value, with a little headroom.
fn y_top<'a>(values: impl IntoIterator<Item = &'a f64>) -> f64 {
    let max = values
        .into_iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if max > 0.0 { max * 1.08 } else { 1.0 }
}

/// The top of a y axis that leaves room above `data_top` for a legend of `rows` entries in a
/// top corner, so the legend covers no data: the plot is about 430 px tall and a legend row
/// about 20 px, with 24 px of frame.
fn top_with_legend(data_top: f64, rows: usize) -> f64 {
    let share = ((rows as f64 * 20.0 + 24.0) / 430.0).min(0.6);
    data_top / (1.0 - share)
}

type Axis = plotters::coord::types::RangedCoordf64;
type Plane = Cartesian2d<Axis, Axis>;

/// The frame every chart shares: its title, margins and a plane of `x` by `y`.
fn frame<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    y_label_area: u32,
) -> Result<ChartContext<'a, DB, Plane>, DrawError> {
    ChartBuilder::on(area)
        .caption(title, ("sans-serif", TITLE_SIZE))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// The grid and axis descriptions every chart shares; `adjust` changes what one chart needs
/// otherwise (no vertical grid lines, its own x labels).
fn grid<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut ChartContext<'a, DB, Plane>,
    x_desc: &str,
    y_desc: &str,
    adjust: impl FnOnce(&mut plotters::chart::MeshStyle<'a, 'b, Axis, Axis, DB>),
) -> Result<(), DrawError> {
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(("sans-serif", LABEL_SIZE))
        .light_line_style(BLACK.mix(0.04))
        .bold_line_style(BLACK.mix(0.12));
    adjust(&mut mesh);
    mesh.draw().map_err(err)
}

/// Prepare a line for plotters' wide-line rasterizer, which misdraws two cases: a step of zero
/// length (two points on one pixel) and a sharp turn back (a spike), whose inner corner it
/// puts far outside the chart. Points on the pixel of the one before are dropped, and the
/// line is split where it turns back by more than 120°.
fn on_pixels<DB: DrawingBackend>(
    chart: &ChartContext<'_, DB, Plane>,
    points: Vec<(f64, f64)>,
) -> Vec<Vec<(f64, f64)>> {
    let spec = chart.as_coord_spec();
    let mut out = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    let mut px: Vec<(i32, i32)> = Vec::new();
    for p in points {
        let q = spec.translate(&p);
        if px.last() == Some(&q) {
            continue;
        }
        if let [.., a, b] = px[..] {
            let u = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
            let v = (f64::from(q.0 - b.0), f64::from(q.1 - b.1));
            let dot = u.0 * v.0 + u.1 * v.1;
            if dot < -0.5 * (u.0.hypot(u.1) * v.0.hypot(v.1)) {
                let last = *cur.last().expect("cur holds the points of px");
                out.push(std::mem::take(&mut cur));
                cur.push(last);
                px = vec![b];
            }
        }
        cur.push(p);
        px.push(q);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Lines of one style from gap-free stretches, ready to draw.
fn paths<DB: DrawingBackend>(
    chart: &ChartContext<'_, DB, Plane>,
    segs: Vec<Vec<(f64, f64)>>,
    style: ShapeStyle,
) -> Vec<PathElement<(f64, f64)>> {
    segs.into_iter()
        .flat_map(|s| on_pixels(chart, s))
        .map(|s| PathElement::new(s, style))
        .collect()
}

/// Axis numbers without a useless ".0": 3500, 2.5, 0.25, and as many decimals as the ticks
/// need (up to 6) so that two ticks never read the same: 0.9955 beside 0.996.
fn tick(v: &f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3))
}

fn legend_box(c: RGBColor, opacity: f64) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], c.mix(opacity).filled())
}

fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), DrawError> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)
}

/// Every process's sleep value over time (the Heroku GCRA demo client's own chart); bands past
/// [`super::series::MAX_PROCESS_LINES`] processes.
pub struct SleepChart<'a> {
    pub heading: &'a Heading,
    pub data: &'a SeriesData,
    pub axis: TimeAxis,
}

impl Chart for SleepChart<'_> {
    fn stem(&self) -> &str {
        "sleep"
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        area.fill(&WHITE).map_err(err)?;
        let d = self.data;
        let xs: Vec<f64> = d.times.iter().map(|&t| self.axis.x(t)).collect();
        let x_max = xs.last().copied().unwrap_or(1.0).max(1e-9);
        let (top, what) = match &d.sleep {
            SleepSeries::Lines(lines) => (
                y_top(lines.iter().flat_map(|l| &l.values)),
                "sleep value of each process",
            ),
            SleepSeries::Bands(bands) => (
                y_top(bands.iter().flat_map(|b| &b.max)),
                "sleep values per group: median, 10-90 % and min-max over processes",
            ),
        };
        let rows = match &d.sleep {
            SleepSeries::Lines(lines) => lines.len(),
            SleepSeries::Bands(bands) => bands.len() * 3,
        };
        let top = top_with_legend(top, rows);
        let mut chart = frame(area, &self.heading.title(what), 0.0..x_max, 0.0..top, 64)?;
        grid(
            &mut chart,
            &self.axis.desc(),
            "sleep before each request (s)",
            |_| {},
        )?;
        match &d.sleep {
            SleepSeries::Lines(lines) => {
                for (i, line) in lines.iter().enumerate() {
                    // A process that never slept draws nothing: no legend entry either.
                    if !line.values.iter().any(|v| v.is_finite()) {
                        continue;
                    }
                    let c = colour(i);
                    let lines = paths(
                        &chart,
                        steps(segments(&xs, &line.values)),
                        c.stroke_width(2),
                    );
                    chart
                        .draw_series(lines)
                        .map_err(err)?
                        .label(line.label.clone())
                        .legend(legend_line(c));
                }
            }
            SleepSeries::Bands(bands) => {
                for b in bands
                    .iter()
                    .filter(|b| b.median.iter().any(|v| v.is_finite()))
                {
                    let c = colour(b.group);
                    let name = &d.groups[b.group];
                    chart
                        .draw_series(
                            band(&xs, &b.min, &b.max)
                                .into_iter()
                                .map(|p| Polygon::new(p, c.mix(0.12).filled())),
                        )
                        .map_err(err)?
                        .label(format!("{name} min-max"))
                        .legend(legend_box(c, 0.12));
                    chart
                        .draw_series(
                            band(&xs, &b.p10, &b.p90)
                                .into_iter()
                                .map(|p| Polygon::new(p, c.mix(0.3).filled())),
                        )
                        .map_err(err)?
                        .label(format!("{name} 10-90 %"))
                        .legend(legend_box(c, 0.3));
                    // The band's edges are sloped between samples: so is its median.
                    let lines = paths(&chart, segments(&xs, &b.median), c.stroke_width(2));
                    chart
                        .draw_series(lines)
                        .map_err(err)?
                        .label(format!("{name} median"))
                        .legend(legend_line(c));
                }
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// One line of the 429 ratio chart.
pub struct RatioLine {
    pub label: String,
    /// The line of all clients together: drawn last, in black, over the groups' lines.
    pub overall: bool,
    pub times: Vec<f64>,
    /// Ratios in [0, 1]; NaN where nothing was sent.
    pub ratio: Vec<f64>,
}

/// The share of requests answered 429 in a rolling window, one line per group or variant.
pub struct RatioChart<'a> {
    pub heading: &'a Heading,
    pub lines: Vec<RatioLine>,
    /// The rolling window, for the axis label ("6m").
    pub window: String,
    pub axis: TimeAxis,
    /// The most 429s `[expect]` allows (a fraction), drawn as a dashed line.
    pub threshold: Option<f64>,
    /// The run's 429 ratio over the whole run (a fraction), drawn as a dotted line.
    pub mean: Option<f64>,
}

impl RatioChart<'_> {
    /// The overall line and, for 2 to 8 groups, one per group; the `[expect]` threshold and
    /// the run's mean as lines, when given.
    pub fn of_run<'a>(
        heading: &'a Heading,
        d: &SeriesData,
        axis: TimeAxis,
        threshold: Option<f64>,
        mean: Option<f64>,
    ) -> RatioChart<'a> {
        let w = d.default_window();
        let mut lines = Vec::new();
        if (2..=8).contains(&d.groups.len()) {
            for (i, g) in d.groups.iter().enumerate() {
                lines.push(RatioLine {
                    label: g.clone(),
                    overall: false,
                    times: d.times.clone(),
                    ratio: d.rolling_ratio(i + 1, w),
                });
            }
        }
        lines.push(RatioLine {
            label: "all clients".into(),
            overall: true,
            times: d.times.clone(),
            ratio: d.rolling_ratio(0, w),
        });
        RatioChart {
            heading,
            lines,
            window: window_text(w as f64 * d.bucket_s),
            axis,
            threshold,
            mean,
        }
    }
}

/// A window length as a person writes it ("6m", "1h30m").
pub fn window_text(seconds: f64) -> String {
    crate::time::HumanDuration(crate::time::from_secs(seconds)).to_string()
}

impl Chart for RatioChart<'_> {
    fn stem(&self) -> &str {
        "ratio_429"
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        area.fill(&WHITE).map_err(err)?;
        let x_max = self
            .lines
            .iter()
            .filter_map(|l| l.times.last())
            .fold(0.0f64, |a, &b| a.max(self.axis.x(b)))
            .max(1e-9);
        let drawn: Vec<&RatioLine> = self
            .lines
            .iter()
            .filter(|l| l.ratio.iter().any(|r| r.is_finite()))
            .collect();
        let marks = [self.threshold, self.mean];
        let marked = marks.iter().flatten().filter(|m| m.is_finite());
        // A percentage: never past 100 %, even when the legend would want the room.
        let top = top_with_legend(
            y_top(drawn.iter().flat_map(|l| &l.ratio).chain(marked)) * 100.0,
            drawn.len() + marks.iter().flatten().count(),
        )
        .min(100.0);
        let mut chart = frame(
            area,
            &self
                .heading
                .title(&format!("429 ratio, rolling {} window", self.window)),
            0.0..x_max,
            0.0..top,
            64,
        )?;
        grid(
            &mut chart,
            &self.axis.desc(),
            &format!("429 responses / requests in the last {} (%)", self.window),
            |_| {},
        )?;
        // A line's colour follows its place among all lines, drawn or not, so a group keeps
        // its colour from chart to chart; only the drawn ones get a legend entry.
        let ordered = self
            .lines
            .iter()
            .filter(|l| !l.overall)
            .enumerate()
            .map(|(i, l)| (colour(i), l))
            .chain(
                self.lines
                    .iter()
                    .filter(|l| l.overall)
                    .map(|l| (RGBColor(20, 20, 20), l)),
            )
            .filter(|(_, l)| drawn.iter().any(|d| std::ptr::eq(*d, *l)));
        for (c, line) in ordered {
            let xs: Vec<f64> = line.times.iter().map(|&t| self.axis.x(t)).collect();
            let ys: Vec<f64> = line.ratio.iter().map(|r| r * 100.0).collect();
            let width = 2;
            let lines = paths(&chart, segments(&xs, &ys), c.stroke_width(width));
            chart
                .draw_series(lines)
                .map_err(err)?
                .label(line.label.clone())
                .legend(legend_line(c));
        }
        let level = |chart: &mut ChartContext<'_, DB, Plane>,
                     y: f64,
                     c: RGBColor,
                     dash: u32,
                     label: String| {
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    vec![(0.0, y * 100.0), (x_max, y * 100.0)],
                    dash,
                    dash,
                    c.stroke_width(2),
                )))
                .map_err(err)
                .map(|a| {
                    a.label(label).legend(move |(x, y)| {
                        DashedPathElement::new(vec![(x, y), (x + 20, y)], 4, 3, c.stroke_width(2))
                    });
                })
        };
        if let Some(t) = self.threshold.filter(|t| t.is_finite()) {
            let label = format!("[expect] at most {}", percent_text(t));
            level(&mut chart, t, RGBColor(200, 30, 30), 8, label)?;
        }
        if let Some(m) = self.mean.filter(|m| m.is_finite()) {
            let label = format!("mean over the run {}", percent_text(m));
            level(&mut chart, m, RGBColor(90, 90, 90), 3, label)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// "0.5 %", "12.3 %": a fraction as a percentage with up to two decimals.
fn percent_text(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
}

/// The server's `RateLimit-Remaining` as the clients saw it, per server key.
pub struct RemainingChart<'a> {
    pub heading: &'a Heading,
    pub data: &'a SeriesData,
    pub axis: TimeAxis,
}

impl Chart for RemainingChart<'_> {
    fn stem(&self) -> &str {
        "remaining"
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        area.fill(&WHITE).map_err(err)?;
        let d = self.data;
        let xs: Vec<f64> = d.times.iter().map(|&t| self.axis.x(t)).collect();
        let x_max = xs.last().copied().unwrap_or(1.0).max(1e-9);
        let top = top_with_legend(
            y_top(d.remaining.iter().flat_map(|r| &r.max)),
            d.remaining.len() * 2,
        );
        let mut chart = frame(
            area,
            &self
                .heading
                .title("requests left at the server (RateLimit-Remaining)"),
            0.0..x_max,
            0.0..top,
            72,
        )?;
        grid(
            &mut chart,
            &self.axis.desc(),
            "remaining requests (count)",
            |_| {},
        )?;
        let named = d.remaining.len() > 1;
        for (i, r) in d.remaining.iter().enumerate() {
            let c = colour(i);
            let who = if named {
                format!("key {}: ", r.key)
            } else {
                String::new()
            };
            chart
                .draw_series(
                    band(&xs, &r.min, &r.max)
                        .into_iter()
                        .map(|p| Polygon::new(p, c.mix(0.2).filled())),
                )
                .map_err(err)?
                .label(format!("{who}lowest to highest seen in each tick"))
                .legend(legend_box(c, 0.2));
            let lines = paths(&chart, segments(&xs, &r.median), c.stroke_width(2));
            chart
                .draw_series(lines)
                .map_err(err)?
                .label(format!("{who}median seen"))
                .legend(legend_line(c));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// Up to this many threads get a bar each; past it, a histogram of threads.
pub const MAX_THREAD_BARS: usize = 120;

/// Successful requests per thread: equal bars mean a fair share.
pub struct OkPerThreadChart<'a> {
    pub heading: &'a Heading,
    pub data: &'a SeriesData,
}

impl Chart for OkPerThreadChart<'_> {
    fn stem(&self) -> &str {
        "ok_per_thread"
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        area.fill(&WHITE).map_err(err)?;
        let d = self.data;
        if d.threads.len() <= MAX_THREAD_BARS {
            self.bars(area)
        } else {
            self.histogram(area)
        }
    }
}

impl OkPerThreadChart<'_> {
    fn bars<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let d = self.data;
        let n = d.threads.len();
        let top = y_top(
            d.threads
                .iter()
                .map(|t| t.ok as f64)
                .collect::<Vec<_>>()
                .iter(),
        );
        let mean = d.threads.iter().map(|t| t.ok as f64).sum::<f64>() / n.max(1) as f64;
        // The legend (each group and the mean) above the tallest bar.
        let top = top_with_legend(top, d.groups.len() + 1);
        // Thread i's bar is centred on i, so the axis numbers the threads (0, 1, 2, 3 for
        // four), not the spaces between them (0.5, 1.5, …).
        let mut chart = frame(
            area,
            &self.heading.title("successful requests per thread"),
            -0.5..n.max(1) as f64 - 0.5,
            0.0..top,
            72,
        )?;
        let whole = |v: &f64| {
            if v.fract() == 0.0 && *v >= 0.0 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        };
        grid(
            &mut chart,
            "thread (grouped by client group, then process)",
            "2xx responses over the run (count)",
            |m| {
                m.disable_x_mesh()
                    .x_labels(n.clamp(2, 20))
                    .x_label_formatter(&whole);
            },
        )?;
        for (gi, name) in d.groups.iter().enumerate() {
            let c = colour(gi);
            let bars: Vec<_> = d
                .threads
                .iter()
                .enumerate()
                .filter(|(_, t)| t.group == gi)
                .map(|(i, t)| {
                    Rectangle::new(
                        [(i as f64 - 0.38, 0.0), (i as f64 + 0.38, t.ok as f64)],
                        c.filled(),
                    )
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(name.clone())
                .legend(legend_box(c, 1.0));
        }
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, mean), (n as f64 - 0.5, mean)],
                BLACK.stroke_width(2),
            )))
            .map_err(err)?
            .label(format!("mean {mean:.0} (an equal share)"))
            .legend(legend_line(RGBColor(0, 0, 0)));
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }

    fn histogram<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), DrawError> {
        const BINS: usize = 30;
        let d = self.data;
        let lo = d.threads.iter().map(|t| t.ok).min().unwrap_or(0) as f64;
        let hi = d.threads.iter().map(|t| t.ok).max().unwrap_or(0) as f64;
        let width = ((hi - lo) / BINS as f64).max(1.0);
        let bin = |ok: u64| (((ok as f64 - lo) / width) as usize).min(BINS - 1);
        // counts[group][bin], stacked in group order.
        let mut counts = vec![vec![0u64; BINS]; d.groups.len()];
        for t in &d.threads {
            counts[t.group][bin(t.ok)] += 1;
        }
        let tallest = (0..BINS)
            .map(|b| counts.iter().map(|g| g[b]).sum::<u64>())
            .max()
            .unwrap_or(1) as f64;
        let mut chart = frame(
            area,
            &self.heading.title(&format!(
                "threads by successful requests ({} threads)",
                d.threads.len()
            )),
            lo..(lo + width * BINS as f64),
            0.0..top_with_legend(tallest * 1.08, d.groups.len()),
            72,
        )?;
        grid(
            &mut chart,
            "2xx responses of one thread over the run (count)",
            "threads (count)",
            |_| {},
        )?;
        let mut base = vec![0u64; BINS];
        for (gi, name) in d.groups.iter().enumerate() {
            let c = colour(gi);
            let rects: Vec<_> = (0..BINS)
                .filter(|&b| counts[gi][b] > 0)
                .map(|b| {
                    let x0 = lo + b as f64 * width;
                    let y0 = base[b] as f64;
                    let y1 = (base[b] + counts[gi][b]) as f64;
                    Rectangle::new([(x0, y0), (x0 + width * 0.92, y1)], c.filled())
                })
                .collect();
            for b in 0..BINS {
                base[b] += counts[gi][b];
            }
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(name.clone())
                .legend(legend_box(c, 1.0));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// One variant of a comparison: its mean, 95 % interval (low, high: held within the metric's
/// range), and each seed's value.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantPoint {
    pub name: String,
    pub x: f64,
    pub x_interval: Option<(f64, f64)>,
    pub y: f64,
    pub y_interval: Option<(f64, f64)>,
    pub seeds: Vec<(f64, f64)>,
}

/// ratio_429 against utilization, one point per variant with its seed spread.
pub struct TradeoffChart<'a> {
    pub heading: &'a Heading,
    pub points: Vec<VariantPoint>,
}

fn whisker(a: (f64, f64), b: (f64, f64), c: RGBColor) -> PathElement<(f64, f64)> {
    PathElement::new(vec![a, b], c.stroke_width(2))
}

impl Chart for TradeoffChart<'_> {
    fn stem(&self) -> &str {
        "tradeoff"
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        area.fill(&WHITE).map_err(err)?;
        // x = utilization, y = ratio_429 in %. Each point's extent: its seeds and interval.
        let lows: Vec<f64> = self
            .points
            .iter()
            .map(|p| {
                let lo = p.x_interval.map_or(p.x, |i| i.0);
                p.seeds.iter().map(|s| s.0).fold(lo.min(p.x), f64::min)
            })
            .collect();
        let highs: Vec<f64> = self
            .points
            .iter()
            .map(|p| {
                let hi = p.y_interval.map_or(p.y, |i| i.1);
                p.seeds.iter().map(|s| s.1).fold(hi.max(p.y), f64::max)
            })
            .collect();
        // A point far from the rest on either axis (`fixed` at 87 % 429s beside others under
        // 5 %) is drawn at the edge, marked and named, so the others are not squashed.
        let best_x = lows
            .iter()
            .chain(self.points.iter().map(|p| &p.x))
            .copied()
            .filter(|x| x.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        let shortfalls: Vec<f64> = lows.iter().map(|&x| best_x - x).collect();
        let off_x = outliers(&shortfalls, 0.01);
        let off_y = outliers(&highs, 0.01);
        let on = |i: usize| !off_x[i] && !off_y[i];
        let xs = self
            .points
            .iter()
            .enumerate()
            .filter(|&(i, _)| on(i))
            .flat_map(|(_, p)| {
                let (lo, hi) = p.x_interval.unwrap_or((p.x, p.x));
                p.seeds
                    .iter()
                    .map(|s| s.0)
                    .chain([lo, hi, p.x])
                    .collect::<Vec<_>>()
            });
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        for x in xs.filter(|x| x.is_finite()) {
            x0 = x0.min(x);
            x1 = x1.max(x);
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        let pad = ((x1 - x0) * 0.15).max(0.002);
        // Utilization is at most 1 (a live run can pass it a little): the axis goes past 1
        // only where a point does.
        let (x0, x1) = ((x0 - pad).max(0.0), (x1 + pad).min(x1.max(1.0)));
        let top = y_top(
            highs
                .iter()
                .enumerate()
                .filter(|&(i, _)| on(i))
                .map(|(_, h)| h)
                .collect::<Vec<_>>(),
        ) * 100.0;
        // A percentage: never past 100 %.
        let top = top_with_legend(top, self.points.len()).min(100.0);
        let mut chart = frame(
            area,
            &self.heading.title("429 ratio against utilization"),
            x0..x1,
            0.0..top,
            64,
        )?;
        let off = (0..self.points.len()).filter(|&i| !on(i)).count();
        grid(
            &mut chart,
            "utilization: 2xx / server capacity (better to the right)",
            &if off == 0 {
                "429 responses / requests (%, better lower)".to_string()
            } else {
                "429 responses / requests (%, better lower; ▲ off the scale)".to_string()
            },
            |_| {},
        )?;
        for (i, p) in self.points.iter().enumerate() {
            let c = colour(i);
            let (x, y) = (p.x, p.y * 100.0);
            if !on(i) {
                // At the edge it passes, its numbers beside it.
                let at = (
                    if off_x[i] { x0 + (x1 - x0) * 0.02 } else { x },
                    if off_y[i] { top * 0.97 } else { y.min(top) },
                );
                chart
                    .draw_series(std::iter::once(TriangleMarker::new(at, 9, c.filled())))
                    .map_err(err)?
                    .label(format!("{} (off the scale)", p.name))
                    .legend(move |(lx, ly)| TriangleMarker::new((lx + 10, ly), 7, c.filled()));
                // The numbers on the side with room: left of a marker in the right half.
                let right_half = at.0 > (x0 + x1) / 2.0;
                let nudge = (x1 - x0) * 0.015;
                let (tx, h) = if right_half {
                    (at.0 - nudge, HPos::Right)
                } else {
                    (at.0 + nudge, HPos::Left)
                };
                let font = ("sans-serif", 13)
                    .into_font()
                    .color(&c)
                    .pos(Pos::new(h, VPos::Center));
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("{}: utilization {:.3}, {:.2} % 429s", p.name, p.x, y),
                        (tx, at.1),
                        font,
                    )))
                    .map_err(err)?;
                continue;
            }
            chart
                .draw_series(
                    p.seeds
                        .iter()
                        .map(|&(sx, sy)| Circle::new((sx, sy * 100.0), 4, c.stroke_width(1))),
                )
                .map_err(err)?;
            let mut whiskers = Vec::new();
            if let Some((lo, hi)) = p.x_interval {
                whiskers.push(whisker((lo, y), (hi, y), c));
            }
            if let Some((lo, hi)) = p.y_interval {
                whiskers.push(whisker((x, lo * 100.0), (x, hi * 100.0), c));
            }
            chart.draw_series(whiskers).map_err(err)?;
            chart
                .draw_series(std::iter::once(Circle::new((x, y), 7, c.filled())))
                .map_err(err)?
                .label(p.name.clone())
                .legend(move |(lx, ly)| Circle::new((lx + 10, ly), 6, c.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// Which of `spans` (each point's distance from the best, ≥ 0) lie so far past the rest that
/// drawing them would squash the others: the largest ones, each more than 3 times the next
/// (and than `floor`), as long as at least two points and most of them stay on the scale.
fn outliers(spans: &[f64], floor: f64) -> Vec<bool> {
    let n = spans.len();
    let mut order: Vec<usize> = (0..n).filter(|&i| spans[i].is_finite()).collect();
    order.sort_by(|&a, &b| spans[b].total_cmp(&spans[a]));
    let mut out = vec![false; n];
    let most_off = n.saturating_sub(2).min(n / 2);
    let cut = (0..order.len().saturating_sub(1))
        .filter(|&k| k < most_off)
        .filter(|&k| spans[order[k]] > 3.0 * spans[order[k + 1]].max(floor))
        .max();
    if let Some(k) = cut {
        for &i in &order[..=k] {
            out[i] = true;
        }
    }
    out
}

/// A 95 % interval as (low, high).
pub type Interval = (f64, f64);

/// One bar per variant: mean fairness, its 95 % interval, and each seed as a dot.
pub struct FairnessChart<'a> {
    pub heading: &'a Heading,
    /// name, mean, 95 % interval (low, high), per-seed values.
    pub bars: Vec<(String, f64, Option<Interval>, Vec<f64>)>,
}

impl Chart for FairnessChart<'_> {
    fn stem(&self) -> &str {
        "fairness"
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        area.fill(&WHITE).map_err(err)?;
        let n = self.bars.len().max(1);
        let names: Vec<String> = self.bars.iter().map(|b| b.0.clone()).collect();
        let mut chart = frame(
            area,
            &self.heading.title("fairness (Jain's index over threads)"),
            0.0..n as f64,
            0.0..1.05,
            64,
        )?;
        let label = |v: &f64| {
            let i = v.floor() as usize;
            if (v - i as f64 - 0.5).abs() < 0.01 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        grid(
            &mut chart,
            "variant",
            "fairness (1 = every thread got an equal rate)",
            |m| {
                m.disable_x_mesh()
                    .x_labels(n * 2 + 1)
                    .x_label_formatter(&label);
            },
        )?;
        for (i, (_, mean, interval, seeds)) in self.bars.iter().enumerate() {
            let c = colour(i);
            let x = i as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x + 0.2, 0.0), (x + 0.8, *mean)],
                    c.mix(0.75).filled(),
                )))
                .map_err(err)?;
            // The interval comes cut to the metric's bounds, [0, 1] for fairness, from
            // `compare::stats` (`Stat::interval`): a whisker never reaches past a fairness of 1.
            if let Some(&(lo, hi)) = interval.as_ref() {
                chart
                    .draw_series([
                        whisker((x + 0.5, lo), (x + 0.5, hi), RGBColor(0, 0, 0)),
                        whisker((x + 0.42, lo), (x + 0.58, lo), RGBColor(0, 0, 0)),
                        whisker((x + 0.42, hi), (x + 0.58, hi), RGBColor(0, 0, 0)),
                    ])
                    .map_err(err)?;
            }
            chart
                .draw_series(
                    seeds
                        .iter()
                        .map(|&s| Circle::new((x + 0.5, s), 3, BLACK.filled())),
                )
                .map_err(err)?;
        }
        // No legend: each bar is named under it, and a legend sat on the bars.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_lines_and_bands() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        let ys = [1.0, f64::NAN, 3.0, 4.0];
        assert_eq!(
            segments(&xs, &ys),
            vec![vec![(1.0, 1.0)], vec![(3.0, 3.0), (4.0, 4.0)]]
        );
        let b = band(&xs, &[0.0, 0.0, f64::NAN, 1.0], &[2.0, 2.0, f64::NAN, 3.0]);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0], vec![(1.0, 2.0), (2.0, 2.0), (2.0, 0.0), (1.0, 0.0)]);
    }

    #[test]
    fn a_legend_in_a_top_corner_has_room_above_the_data() {
        // Four rows of 20 px and the frame: 104 of the plot's 430 px.
        let top = top_with_legend(100.0, 4);
        assert!((100.0 / top - (1.0 - 104.0 / 430.0)).abs() < 1e-12);
        assert!(top_with_legend(100.0, 1000) <= 100.0 / 0.4 + 1e-9, "capped");
    }

    /// The numbers of a chart's axes as its SVG draws them.
    fn tick_texts(svg: &str) -> Vec<f64> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split('>').nth(1)?.split('<').next()?.trim().parse().ok())
            .collect()
    }

    #[test]
    fn utilization_axis_and_intervals_stop_at_1() {
        let heading = Heading {
            scenario: "s".into(),
            variant: None,
            detail: String::new(),
        };
        // Utilization cannot pass 1, and neither may its axis: a mean of 0.999 ± 0.007 drew
        // an axis to 1.002 and beyond, and the padding alone still took it past 1.
        let chart = TradeoffChart {
            heading: &heading,
            points: vec![VariantPoint {
                name: "a".into(),
                x: 0.999,
                // Cut to 1 by `compare::stats`; the axis's padding is this chart's.
                x_interval: Some((0.992, 1.0)),
                y: 0.01,
                y_interval: Some((0.008, 0.012)),
                seeds: vec![(0.998, 0.01), (1.0, 0.012)],
            }],
        };
        let svg = crate::report::canvas::render(&chart).unwrap().svg;
        let ticks = tick_texts(&svg);
        assert!(ticks.contains(&1.0), "{ticks:?}");
        assert!(
            !ticks.iter().any(|&t| t > 1.0 && t < 1.1),
            "utilization ticks past 1: {ticks:?}"
        );
    }

    /// A percent axis stopped short of 140 % when a line neared 100 % and the legend wanted
    /// room above it; the 429 chart drew neither the [expect] bound nor the mean, and named
    /// in its legend a line that had nothing to draw.
    #[test]
    fn the_429_chart_stops_at_100_percent_and_draws_its_threshold_and_mean() {
        let heading = Heading {
            scenario: "s".into(),
            variant: None,
            detail: String::new(),
        };
        let times: Vec<f64> = (0..60).map(f64::from).collect();
        let line = |label: &str, r: f64| RatioLine {
            label: label.into(),
            overall: false,
            times: times.clone(),
            ratio: vec![r; times.len()],
        };
        let chart = RatioChart {
            heading: &heading,
            lines: vec![
                line("fixed", 0.97),
                line("idle", f64::NAN),
                line("careful", 0.0),
            ],
            window: "1m".into(),
            axis: TimeAxis::for_duration(60.0),
            threshold: Some(0.005),
            mean: Some(0.4),
        };
        let svg = crate::report::canvas::render(&chart).unwrap().svg;
        let ticks = tick_texts(&svg);
        assert!(ticks.contains(&100.0), "{ticks:?}");
        assert!(!ticks.iter().any(|&t| t > 100.0), "{ticks:?}");
        // Each text element's text sits on a line of its own.
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for says in [
            "[expect] at most 0.5 %",
            "mean over the run 40 %",
            "fixed",
            "careful",
        ] {
            assert!(texts.contains(&says), "{says}");
        }
        assert!(
            !texts.contains(&"idle"),
            "a line with nothing to draw has no legend entry"
        );
        // The tradeoff chart's 429 axis stops at 100 % too.
        let chart = TradeoffChart {
            heading: &heading,
            points: vec![VariantPoint {
                name: "fixed".into(),
                x: 1.0,
                x_interval: None,
                y: 0.96,
                y_interval: Some((0.95, 0.97)),
                seeds: vec![(1.0, 0.95), (1.0, 0.97)],
            }],
        };
        let ticks = tick_texts(&crate::report::canvas::render(&chart).unwrap().svg);
        assert!(!ticks.iter().any(|&t| t > 100.0), "{ticks:?}");
    }

    /// `fixed` at 87 % 429s beside others under 5 % squashed them onto the axis; so did a
    /// utilization of 0.04 beside others above 0.95.
    #[test]
    fn a_point_far_past_the_others_goes_off_the_scale() {
        let off = |spans: &[f64]| outliers(spans, 0.01);
        assert_eq!(
            off(&[0.87, 0.04, 0.02, 0.0, 0.0008]),
            [true, false, false, false, false]
        );
        // Two far ones are both marked, as long as most points stay.
        assert_eq!(
            off(&[0.87, 0.02, 0.74, 0.0, 0.01]),
            [true, false, true, false, false]
        );
        // Most points far up is the scale, not outliers; nor is one of two.
        assert_eq!(off(&[0.87, 0.74, 0.0]), [false, false, false]);
        assert_eq!(off(&[0.9, 0.0]), [false, false]);
        // Close to one another under the floor: all on the scale.
        assert_eq!(off(&[0.008, 0.0, 0.001]), [false, false, false]);
        // Utilization: the shortfall from the best, 0.96 for a point at 0.04.
        assert_eq!(off(&[0.96, 0.01, 0.0, 0.02]), [true, false, false, false]);
    }

    /// Samples 10 s apart joined by straight lines drew sleep ramps the clients never had.
    #[test]
    fn sleeps_are_held_until_the_next_sample() {
        assert_eq!(
            steps(vec![
                vec![(0.0, 1.0), (10.0, 3.0), (20.0, 2.0)],
                vec![(40.0, 5.0)]
            ]),
            vec![
                vec![
                    (0.0, 1.0),
                    (10.0, 1.0),
                    (10.0, 3.0),
                    (20.0, 3.0),
                    (20.0, 2.0)
                ],
                vec![(40.0, 5.0)]
            ]
        );
    }

    #[test]
    fn ticks_half_a_thousandth_apart_read_apart() {
        let labels: Vec<String> = [0.995, 0.9955, 0.996, 0.9965, 2.5, 3500.0, 0.25]
            .iter()
            .map(tick)
            .collect();
        assert_eq!(
            labels,
            ["0.995", "0.9955", "0.996", "0.9965", "2.5", "3500", "0.25"]
        );
        // Float noise in a computed tick does not show.
        assert_eq!(tick(&(0.1 + 0.2)), "0.3");
    }

    #[test]
    fn time_axis_is_in_seconds_to_5_minutes_and_in_hours_past_two_hours() {
        assert_eq!(TimeAxis::for_duration(40.0).name, "s");
        assert_eq!(TimeAxis::for_duration(40.0).x(30.0), 30.0);
        assert_eq!(TimeAxis::for_duration(3600.0).name, "min");
        assert_eq!(TimeAxis::for_duration(5.0 * 3600.0).name, "h");
        assert_eq!(TimeAxis::for_duration(5.0 * 3600.0).x(5400.0), 1.5);
    }
}
