//! Charts as SVG strings, drawn with plotters' SVG backend (text as SVG
//! `<text>`: no font files, no JavaScript).

use anyhow::{anyhow, Result};
use plotters::prelude::*;

/// Lines (or scatter markers), marks and the legend on a built chart.
macro_rules! draw_body {
    ($self:ident, $c:ident) => {
        for (k, l) in $self.lines.iter().enumerate() {
            let col = color(k);
            let few = l.points.len() <= 40;
            if l.scatter {
                $c.draw_series(l.points.iter().map(|&p| Circle::new(p, 4, col.filled())))
                    .map_err(err)?
                    .label(l.name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, col.filled()));
                continue;
            }
            $c.draw_series(LineSeries::new(
                l.points.iter().copied(),
                col.stroke_width(2),
            ))
            .map_err(err)?
            .label(l.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
            if few {
                $c.draw_series(l.points.iter().map(|&p| Circle::new(p, 2, col.filled())))
                    .map_err(err)?;
            }
        }
        for (name, x, y) in &$self.marks {
            $c.draw_series(std::iter::once(Circle::new(
                (*x, *y),
                8,
                RED.stroke_width(3),
            )))
            .map_err(err)?
            .label(name.as_str())
            .legend(|(x, y)| Circle::new((x + 10, y), 6, RED.stroke_width(2)));
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

    /// The x and y ranges of its points (padded when flat).
    pub fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let pts = || {
            self.lines
                .iter()
                .flat_map(|l| l.points.iter().copied())
                .chain(self.marks.iter().map(|m| (m.1, m.2)))
                .filter(|p| p.0.is_finite() && p.1.is_finite())
        };
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0f64, f64::MIN);
        for (x, y) in pts() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if let Some(m) = self.x_min {
            x0 = x0.min(m);
        }
        if y1 < y0 {
            y1 = y0;
        }
        if self.log_x {
            x0 = x0.max(1e-6);
            x1 = x1.max(x0 * 1.5);
            x0 /= 1.2;
            x1 *= 1.2;
        } else if x1 - x0 < 1e-9 {
            x0 -= 0.5;
            x1 += 0.5;
        }
        let span = (y1 - y0).max(if y1.abs() > 0.0 { y1.abs() * 0.1 } else { 1.0 });
        let y1 = y1 + span * if self.legend_low { 0.04 } else { 0.3 };
        let y0 = if y0 < 0.0 { y0 - span * 0.08 } else { y0 };
        ((x0, x1), (y0, y1))
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
                let mut c = b
                    .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                    .map_err(err)?;
                c.configure_mesh()
                    .max_light_lines(1)
                    .x_desc(&self.x_desc)
                    .y_desc(&self.y_desc)
                    .draw()
                    .map_err(err)?;
                draw_body!(self, c);
            } else {
                let mut c = b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?;
                c.configure_mesh()
                    .max_light_lines(1)
                    .x_desc(&self.x_desc)
                    .y_desc(&self.y_desc)
                    .draw()
                    .map_err(err)?;
                draw_body!(self, c);
            }
            root.present().map_err(err)?;
        }
        Ok(out)
    }
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

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
}
