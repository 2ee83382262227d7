//! A grouped bar chart written as SVG text (no plotting dependencies).

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

        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="25" text-anchor="middle" font-size="15">{}</text>"#,
            LEFT + plot_w / 2.0,
            escape(&self.title)
        );
        // Y grid and tick labels.
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
        // Axes and labels.
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
            escape(&self.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text x="20" y="{:.1}" text-anchor="middle" transform="rotate(-90 20 {:.1})">{}</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0,
            escape(&self.y_label)
        );
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
        s.push_str("</svg>\n");
        s
    }
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
