//! The one SVG writer: charts written as text (no plotting dependencies),
//! all on the same frame (title, axes with nice ticks, labels, legend).
//! [`BarChart`]: grouped bars (`cqlab schedule --svg`); [`PointChart`]: a
//! measured value against a knob, failing points marked (`cqlab sweep`).

use std::fmt::Write as _;

/// Bars grouped along x: one group per category (e.g. an L3 size), one bar per series
/// (e.g. a strategy) in each group.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label beside the y axis.
    pub y_label: String,
    /// Group names along x.
    pub groups: Vec<String>,
    /// Series names (legend).
    pub series: Vec<String>,
    /// `values[group][series]`, non-negative.
    pub values: Vec<Vec<f64>>,
}

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 500.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
const COLORS: [&str; 6] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"];

impl BarChart {
    /// Render to a standalone SVG document.
    pub fn render(&self) -> String {
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let max = self.values.iter().flatten().copied().filter(|v| v.is_finite()).fold(0.0, f64::max);
        let (step, top) = nice_axis(max);
        let y = |v: f64| TOP + plot_h - (v / top) * plot_h;

        let mut s = header(&self.title);
        y_grid(&mut s, step, top, &y);
        // Bars.
        let ngroups = self.groups.len().max(1) as f64;
        let group_w = plot_w / ngroups;
        let nseries = self.series.len().max(1) as f64;
        let bar_w = group_w * 0.8 / nseries;
        for (g, name) in self.groups.iter().enumerate() {
            let gx = LEFT + g as f64 * group_w;
            for (k, value) in self.values.get(g).into_iter().flatten().enumerate() {
                let value = if value.is_finite() { value.max(0.0) } else { 0.0 };
                let x = gx + group_w * 0.1 + k as f64 * bar_w;
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {}</title></rect>"#,
                    y(value),
                    bar_w * 0.95,
                    plot_h - (y(value) - TOP),
                    COLORS[k % COLORS.len()],
                    escape(name),
                    escape(self.series.get(k).map(String::as_str).unwrap_or("")),
                    tick_label(value, step / 100.0)
                );
            }
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                gx + group_w / 2.0,
                TOP + plot_h + 18.0,
                escape(name)
            );
        }
        // Legend.
        for (k, name) in self.series.iter().enumerate() {
            let ly = TOP + 10.0 + k as f64 * 20.0;
            let lx = LEFT + plot_w + 20.0;
            let _ = writeln!(
                s,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
                ly - 10.0,
                COLORS[k % COLORS.len()],
                lx + 18.0,
                escape(name)
            );
        }
        footer(&mut s, &self.x_label, &self.y_label);
        s
    }
}

/// One point of a [`PointChart`].
#[derive(Clone, Debug)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// A passing point joins the line; a failing one is marked in red.
    pub ok: bool,
    /// Shown when the pointer rests on it.
    pub label: String,
}

/// A value measured against a knob: passing points joined by a line,
/// failing ones in red.
#[derive(Clone, Debug)]
pub struct PointChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub points: Vec<Point>,
}

impl PointChart {
    /// Render to a standalone SVG document.
    pub fn render(&self) -> String {
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let ymax = self.points.iter().map(|p| p.y).filter(|v| v.is_finite()).fold(0.0, f64::max);
        let (step, top) = nice_axis(ymax);
        let xmin = self.points.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
        let xmax = self.points.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
        let (xmin, xspan) = if xmin.is_finite() { (xmin, (xmax - xmin).max(1.0)) } else { (0.0, 1.0) };
        let x = |v: f64| LEFT + (v - xmin) / xspan * plot_w;
        let y = |v: f64| TOP + plot_h - (v.max(0.0) / top) * plot_h;
        let mut s = header(&self.title);
        y_grid(&mut s, step, top, &y);
        let line: Vec<String> =
            self.points.iter().filter(|p| p.ok).map(|p| format!("{:.1},{:.1}", x(p.x), y(p.y))).collect();
        if line.len() > 1 {
            let _ = writeln!(s, r#"<polyline fill="none" stroke="{}" points="{}"/>"#, COLORS[0], line.join(" "));
        }
        for p in &self.points {
            let colour = if p.ok { COLORS[0] } else { FAIL };
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"><title>{}</title></circle>"#,
                x(p.x),
                y(p.y),
                escape(&p.label)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="{:.1}">{}</text><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            TOP + plot_h + 18.0,
            tick_label(xmin, 1.0),
            LEFT + plot_w,
            TOP + plot_h + 18.0,
            tick_label(xmin + xspan, 1.0)
        );
        footer(&mut s, &self.x_label, &self.y_label);
        s
    }
}

/// Colour of a failing point.
const FAIL: &str = "#d62728";

/// The document's start: its size, a white ground and the title.
fn header(title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="25" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        escape(title)
    );
    s
}

/// Horizontal grid lines with their values, every `step` up to `top`.
fn y_grid(s: &mut String, step: f64, top: f64, y: &impl Fn(f64) -> f64) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let mut v = 0.0;
    while v <= top + step * 1e-9 {
        let yy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            yy + 4.0,
            tick_label(v, step)
        );
        v += step;
    }
}

/// The axes, their labels, and the document's end.
fn footer(s: &mut String, x_label: &str, y_label: &str) {
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.1}" stroke="black"/><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="black"/>"#,
        TOP + plot_h,
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 20.0,
        escape(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="20" y="{:.1}" text-anchor="middle" transform="rotate(-90 20 {:.1})">{}</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    s.push_str("</svg>\n");
}

/// A tick step of 1, 2 or 5 times a power of ten giving about five ticks, and the axis top.
fn nice_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 {
        return (1.0, 1.0);
    }
    let raw = max / 5.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * pow).find(|&s| s >= raw).unwrap_or(10.0 * pow);
    (step, (max / step).ceil() * step)
}

fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    format!("{v:.decimals$}")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axis_covers_the_maximum() {
        for max in [0.3, 1.0, 7.0, 54.5, 157.0, 1234.0] {
            let (step, top) = nice_axis(max);
            assert!(top >= max && top < max + step + 1e-9, "{max}: step {step} top {top}");
            assert!((top / step).round() <= 10.0);
        }
        assert_eq!(nice_axis(0.0), (1.0, 1.0));
    }

    #[test]
    fn renders_points_passing_on_a_line_failing_in_red() {
        let point = |x: f64, y: f64, ok: bool| Point { x, y, ok, label: format!("depth={x}") };
        let chart = PointChart {
            title: "depth".into(),
            x_label: "depth".into(),
            y_label: "device cycles per read".into(),
            points: vec![point(1.0, 100.0, true), point(5.0, 120.0, true), point(9.0, 400.0, false)],
        };
        let svg = chart.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert_eq!(svg.matches(FAIL).count(), 1, "one failing point");
        assert_eq!(svg.matches("<polyline").count(), 1, "the passing points joined");
        assert!(svg.contains("device cycles per read"));
    }

    #[test]
    fn renders_bars_labels_and_escapes() {
        let chart = BarChart {
            title: "A & B".into(),
            x_label: "L3 size".into(),
            y_label: "DRAM traffic (GB)".into(),
            groups: vec!["1MiB".into(), "16MiB".into()],
            series: vec!["ws".into(), "os".into()],
            values: vec![vec![10.0, 20.0], vec![5.0, 0.0]],
        };
        let svg = chart.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<rect x=").count(), 4 + 2, "4 bars + 2 legend swatches");
        assert!(svg.contains("A &amp; B"));
        assert!(svg.contains("DRAM traffic (GB)") && svg.contains("L3 size"));
        // The tallest bar reaches the top of the axis (20 is a nice maximum).
        assert!(svg.contains(&format!(r#"y="{TOP:.1}""#)));
    }
}
