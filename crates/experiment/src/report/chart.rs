//! Charts as SVG strings, drawn with plotters' SVG backend (text as SVG
//! `<text>`: no font files, no JavaScript).

use anyhow::{anyhow, Result};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// Lines (or scatter markers), limit lines, marks and the legend on a
/// built chart. A line that lies on an earlier one is drawn dashed over
/// it and says so in the legend; every line has a marker shape of its own.
macro_rules! draw_body {
    ($self:ident, $c:ident, $y0:expr, $y1:expr) => {
        let looks = $self.looks();
        // lines with the most points first: a short line (one step of a
        // CDF) stays on top of a long one through the same place
        let mut order: Vec<usize> = (0..$self.lines.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse($self.lines[k].points.len()));
        for &k in &order {
            let l = &$self.lines[k];
            if l.scatter {
                continue;
            }
            let style = color(k).stroke_width(2);
            if looks[k].dashed {
                $c.draw_series(DashedLineSeries::new(l.points.iter().copied(), 9, 6, style))
                    .map_err(err)?;
            } else {
                $c.draw_series(LineSeries::new(l.points.iter().copied(), style))
                    .map_err(err)?;
            }
        }
        for (k, (l, look)) in $self.lines.iter().zip(&looks).enumerate() {
            let col = color(k);
            let every = marker_step(l.points.len(), l.scatter);
            let marks = l
                .points
                .iter()
                .enumerate()
                .filter(move |(i, _)| (i + k) % every == 0)
                .map(|(_, &p)| p);
            if l.scatter {
                $c.draw_series(marks.map(|p| EmptyElement::at(p) + shape(k, (0, 0), col, 4)))
                    .map_err(err)?
                    .label(look.label.as_str())
                    .legend(move |(x, y)| EmptyElement::at((x, y)) + shape(k, (10, 0), col, 4));
                continue;
            }
            let style = col.stroke_width(2);
            let dashed = look.dashed;
            $c.draw_series(marks.map(|p| EmptyElement::at(p) + shape(k, (0, 0), col, 3)))
                .map_err(err)?
                .label(look.label.as_str())
                .legend(move |(x, y)| {
                    let line = if dashed {
                        DashedPathElement::new(vec![(0, 0), (24, 0)], 6, 4, style).into_dyn()
                    } else {
                        PathElement::new(vec![(0, 0), (24, 0)], style).into_dyn()
                    };
                    EmptyElement::at((x, y)) + line + shape(k, (12, 0), col, 3)
                });
        }
        for (name, x) in &$self.vlines {
            let style = BLACK.mix(0.7).stroke_width(2);
            $c.draw_series(DashedLineSeries::new([(*x, $y0), (*x, $y1)], 7, 5, style))
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    DashedPathElement::new(vec![(x, y - 6), (x, y + 6)], 4, 3, style)
                });
        }
        // rings of their own colour and size: marks on one point stay
        // apart (the chosen point and a named solution, say)
        for (k, (name, x, y)) in $self.marks.iter().enumerate() {
            let col = MARK_COLORS[k % MARK_COLORS.len()];
            let r = 8 + 4 * (k as i32 % 4);
            $c.draw_series(std::iter::once(Circle::new(
                (*x, *y),
                r,
                col.stroke_width(3),
            )))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Circle::new((x + 10, y), 6, col.stroke_width(2)));
        }
        $c.configure_series_labels()
            .position(if $self.legend_low {
                SeriesLabelPosition::LowerRight
            } else {
                SeriesLabelPosition::UpperRight
            })
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    };
}

/// How one line is drawn: dashed when it lies on an earlier line, and its
/// legend label (naming that line when it lies on it everywhere).
#[derive(Clone, Debug, PartialEq)]
pub struct Look {
    pub dashed: bool,
    pub label: String,
}

/// Draw a marker at every `step`-th point: every point when there are
/// few, about 24 along a long line; every point of a scatter.
fn marker_step(points: usize, scatter: bool) -> usize {
    if scatter || points <= 40 {
        1
    } else {
        points.div_ceil(24)
    }
}

/// Line `k`'s marker, `at` px from its anchor: a circle, triangle,
/// square or cross (by `k`), `r` px from its middle to its edge.
fn shape<DB: DrawingBackend>(
    k: usize,
    at: (i32, i32),
    col: RGBAColor,
    r: i32,
) -> DynElement<'static, DB, (i32, i32)> {
    let (x, y) = at;
    match k % 4 {
        0 => Circle::new(at, r, col.filled()).into_dyn(),
        1 => TriangleMarker::new(at, r + 1, col.filled()).into_dyn(),
        2 => Rectangle::new([(x - r, y - r), (x + r, y + r)], col.filled()).into_dyn(),
        _ => Cross::new(at, r, col.stroke_width(2)).into_dyn(),
    }
}

/// Chart size in px.
pub const WIDTH: u32 = 1100;
pub const HEIGHT: u32 = 340;

/// One line of a chart.
#[derive(Clone, Debug, Default)]
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Markers at the points, no line (scatter).
    pub scatter: bool,
}

impl Line {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Line {
            name: name.into(),
            points,
            scatter: false,
        }
    }
}

/// A chart of lines over a shared x axis.
#[derive(Clone, Debug, Default)]
pub struct LineChart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub lines: Vec<Line>,
    /// Logarithmic x axis (latency CDFs).
    pub log_x: bool,
    /// Points marked (the chosen sweep point): (name, x, y).
    pub marks: Vec<(String, f64, f64)>,
    /// The legend at the lower right (CDFs), else at the upper right
    /// above the data (the y axis leaves room for it).
    pub legend_low: bool,
    /// The x axis starts here at the latest (run time charts: 0).
    pub x_min: Option<f64>,
    /// The y axis fitted to the data (padded), else from 0 (or below).
    pub fit_y: bool,
    /// Vertical lines across the chart (a limit): (legend label, x).
    pub vlines: Vec<(String, f64)>,
}

impl LineChart {
    pub fn new(title: &str, x_desc: &str, y_desc: &str) -> Self {
        LineChart {
            title: title.into(),
            x_desc: x_desc.into(),
            y_desc: y_desc.into(),
            ..Default::default()
        }
    }

    /// A chart over run time (s): the x axis from 0.
    pub fn over_time(title: &str, y_desc: &str) -> Self {
        LineChart {
            x_min: Some(0.0),
            ..LineChart::new(title, "run time (s)", y_desc)
        }
    }

    /// Has it anything to draw?
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|l| !l.points.is_empty())
    }

    /// The x and y ranges of its points, limit lines and marks: padded
    /// when flat, around scatter points (none sits on an axis), and with
    /// room above for the legend.
    pub fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let pts = || {
            self.lines
                .iter()
                .flat_map(|l| l.points.iter().copied())
                .chain(self.marks.iter().map(|m| (m.1, m.2)))
                .filter(|p| p.0.is_finite() && p.1.is_finite())
        };
        let y_start = if self.fit_y { f64::MAX } else { 0.0 };
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, y_start, f64::MIN);
        for (x, y) in pts() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        for &(_, x) in &self.vlines {
            x0 = x0.min(x);
            x1 = x1.max(x);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if y0 > y1 {
            (y0, y1) = (0.0, 0.0);
        }
        if let Some(m) = self.x_min {
            x0 = x0.min(m);
        }
        let scatter = self.lines.iter().any(|l| l.scatter);
        if self.log_x {
            x0 = x0.max(1e-6);
            x1 = x1.max(x0 * 1.5);
            x0 /= 1.2;
            x1 *= 1.2;
        } else if x1 - x0 < 1e-9 {
            x0 -= 0.5;
            x1 += 0.5;
        } else if scatter {
            let pad = (x1 - x0) * 0.04;
            x0 -= pad;
            x1 += pad;
        }
        let span = (y1 - y0).max(if y1.abs() > 0.0 { y1.abs() * 0.1 } else { 1.0 });
        let y0 = if y0 < 0.0 || self.fit_y {
            y0 - span * 0.08
        } else {
            y0
        };
        let y1 = y1 + (y1 - y0).max(span) * self.headroom();
        ((x0, x1), (y0, y1))
    }

    /// Room above the data, as a share of the data's span: enough for
    /// the legend's rows at the upper right (≈ 18 px each in a plot area
    /// ≈ 240 px high), so no point lies under it; a little with the legend
    /// at the lower right.
    fn headroom(&self) -> f64 {
        if self.legend_low {
            return 0.04;
        }
        let rows = self.lines.len() + self.vlines.len() + self.marks.len();
        let share = ((18 * rows + 14) as f64 / 240.0).min(0.75);
        (share / (1.0 - share)).max(0.3)
    }

    /// How each line is drawn ([`Look`]): a line whose points lie on an
    /// earlier line's (the same x, y within 0.5% of the y axis) at most of
    /// its points is dashed; at all of them its label names that line.
    pub fn looks(&self) -> Vec<Look> {
        let (_, (y0, y1)) = self.ranges();
        let tol = (y1 - y0).abs() * 0.005;
        let on = |a: &Line, b: &Line| -> usize {
            a.points
                .iter()
                .filter(|p| {
                    b.points.iter().any(|q| {
                        (p.0 - q.0).abs() <= 1e-9 * p.0.abs().max(1.0) && (p.1 - q.1).abs() <= tol
                    })
                })
                .count()
        };
        self.lines
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let n = l.points.len();
                let under = self.lines[..k]
                    .iter()
                    .filter(|e| !e.scatter && !l.scatter && n > 0)
                    .map(|e| (e, on(l, e)))
                    .max_by_key(|&(_, c)| c);
                match under {
                    Some((e, c)) if c == n => Look {
                        dashed: true,
                        label: format!("{} (= {})", l.name, e.name),
                    },
                    Some((_, c)) if 2 * c > n => Look {
                        dashed: true,
                        label: l.name.clone(),
                    },
                    _ => Look {
                        dashed: false,
                        label: l.name.clone(),
                    },
                }
            })
            .collect()
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> Result<String> {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            let ((x0, x1), (y0, y1)) = self.ranges();
            let mut b = ChartBuilder::on(&root);
            b.caption(&self.title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(72);
            if self.log_x {
                let ticks = log_ticks(x0, x1);
                let mut c = b
                    .build_cartesian_2d((x0..x1).log_scale().with_key_points(ticks), y0..y1)
                    .map_err(err)?;
                c.configure_mesh()
                    .max_light_lines(1)
                    .x_label_formatter(&|v| tick_text(*v))
                    .x_desc(&self.x_desc)
                    .y_desc(&self.y_desc)
                    .draw()
                    .map_err(err)?;
                draw_body!(self, c, y0, y1);
            } else {
                let mut c = b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?;
                c.configure_mesh()
                    .max_light_lines(1)
                    .x_desc(&self.x_desc)
                    .y_desc(&self.y_desc)
                    .draw()
                    .map_err(err)?;
                draw_body!(self, c, y0, y1);
            }
            root.present().map_err(err)?;
        }
        Ok(out)
    }
}

/// Labelled ticks of a log axis over `[x0, x1]`: 1, 2 and 5 of each
/// decade, or every digit when the axis spans less than two decades.
pub fn log_ticks(x0: f64, x1: f64) -> Vec<f64> {
    let steps: &[f64] = if x1 / x0 < 100.0 {
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut out = Vec::new();
    let mut decade = 10f64.powi(x0.log10().floor() as i32);
    while decade <= x1 {
        for &m in steps {
            let v = m * decade;
            if v >= x0 && v <= x1 {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

/// A tick value as short text: `0.05`, `0.2`, `1`, `20`, `500`.
pub fn tick_text(v: f64) -> String {
    let t = format!("{:.6}", v);
    let t = t.trim_end_matches('0').trim_end_matches('.');
    t.to_string()
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

/// Mark ring colours: red first (the chosen point), then dark ones.
const MARK_COLORS: [RGBColor; 4] = [
    RGBColor(0xd0, 0x00, 0x00),
    RGBColor(0x20, 0x20, 0x20),
    RGBColor(0x80, 0x00, 0x80),
    RGBColor(0x00, 0x60, 0x60),
];

/// Line colours (matplotlib's "tab10").
const COLORS: [(u8, u8, u8); 10] = [
    (0x1f, 0x77, 0xb4),
    (0xd6, 0x27, 0x28),
    (0x2c, 0xa0, 0x2c),
    (0xff, 0x7f, 0x0e),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
    (0xe3, 0x77, 0xc2),
    (0x7f, 0x7f, 0x7f),
    (0xbc, 0xbd, 0x22),
    (0x17, 0xbe, 0xcf),
];

/// The colour of line `k`.
fn color(k: usize) -> RGBAColor {
    let (r, g, b) = COLORS[k % COLORS.len()];
    RGBColor(r, g, b).to_rgba()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_chart_has_its_points_and_labels() {
        let mut c = LineChart::new("IOPS", "time (s)", "IOPS");
        c.lines.push(Line::new(
            "/a read",
            (1..=50).map(|i| (f64::from(i), 100.0)).collect(),
        ));
        let svg = c.svg().unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains(">\nIOPS\n</text>") || svg.contains(">IOPS</text>"));
        assert!(svg.contains("/a read"));
        // the data line: a polyline with 50 points
        let most = svg
            .lines()
            .filter(|l| l.starts_with("<polyline"))
            .map(|l| l.matches(',').count())
            .max()
            .unwrap();
        assert_eq!(most, 50);
        assert_eq!(c.svg().unwrap(), svg, "deterministic");
        let mut log = c.clone();
        log.log_x = true;
        assert!(log.svg().unwrap().contains("/a read"));
    }

    fn line(name: &str, ys: &[f64]) -> Line {
        Line::new(
            name,
            ys.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect(),
        )
    }

    #[test]
    fn a_line_on_an_earlier_one_is_dashed_and_named_in_the_legend() {
        let mut c = LineChart::over_time("hweight", "%");
        c.lines.push(line("/a active", &[50.0, 50.0, 50.0, 50.0]));
        c.lines.push(line("/b active", &[50.0, 50.0, 50.0, 50.0]));
        c.lines.push(line("/a inuse", &[80.0, 99.0, 99.0, 80.0]));
        // on /a inuse at 3 of 4 points: dashed, not named
        c.lines.push(line("/b inuse", &[80.0, 99.0, 99.0, 20.0]));
        c.lines.push(line("/c", &[1.0, 2.0, 3.0, 4.0]));
        let looks = c.looks();
        let dashed: Vec<bool> = looks.iter().map(|l| l.dashed).collect();
        assert_eq!(dashed, [false, true, false, true, false]);
        assert_eq!(looks[1].label, "/b active (= /a active)");
        assert_eq!(looks[3].label, "/b inuse");
        let svg = c.svg().unwrap();
        assert!(svg.contains("/b active (= /a active)"));
        // every line has a marker shape of its own: circles, triangles
        // (polygons), squares (rects) and crosses
        assert!(svg.contains("<circle") && svg.contains("<polygon") && svg.contains("<rect"));
    }

    #[test]
    fn log_axis_ticks_are_labelled_within_and_across_decades() {
        let t = log_ticks(0.127, 4.9);
        let want = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(t.len(), want.len(), "{t:?}");
        for (a, b) in t.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{t:?}");
        }
        let t: Vec<String> = log_ticks(0.1, 150.0).into_iter().map(tick_text).collect();
        assert_eq!(
            t,
            ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100"]
        );
        assert_eq!(tick_text(0.05), "0.05");
        assert_eq!(tick_text(2500.0), "2500");
        let mut c = LineChart::new("CDF", "latency (ms, log scale)", "fraction");
        c.log_x = true;
        // y labels (0.0, 200.0, ...) cannot pass for the x ones
        c.lines.push(Line::new(
            "a",
            vec![(0.15, 0.0), (0.15, 500.0), (4.0, 1000.0)],
        ));
        let svg = c.svg().unwrap();
        for label in ["0.2", "0.5", "1", "2", "3"] {
            assert!(
                svg.contains(&format!(">{label}</text>"))
                    || svg.contains(&format!(">\n{label}\n</text>")),
                "{label}"
            );
        }
    }

    #[test]
    fn a_fitted_axis_holds_the_data_limit_and_legend_with_no_point_on_an_edge() {
        let mut c = LineChart::new("bw against p99", "p99 (ms)", "MB/s");
        c.fit_y = true;
        let mut pts = Line::new("points", vec![(0.15, 84.0), (0.15, 98.0), (20.0, 99.2)]);
        pts.scatter = true;
        c.lines.push(pts);
        c.lines
            .push(Line::new("frontier", vec![(0.15, 98.0), (14.4, 99.2)]));
        c.vlines.push(("limit: p99 <= 25".into(), 25.0));
        c.marks.push(("chosen".into(), 0.15, 98.0));
        let ((x0, x1), (y0, y1)) = c.ranges();
        assert!(y0 > 70.0 && y0 < 84.0, "fitted, not from 0: {y0}");
        assert!(
            x0 < 0.15 && x1 > 25.0,
            "the limit and the points inside: {x0}..{x1}"
        );
        // four legend rows at the upper right: the data stays below them
        let legend = (18.0 * 4.0 + 14.0) / 240.0;
        assert!((99.2 - y0) / (y1 - y0) <= 1.0 - legend + 1e-9, "{y0}..{y1}");
        let svg = c.svg().unwrap();
        assert!(svg.contains("limit: p99 &lt;= 25") || svg.contains("limit: p99 <= 25"));
        // not fitted: the axis starts at 0
        c.fit_y = false;
        assert_eq!(c.ranges().1 .0, 0.0);
    }
}
