//! A progress bar for long runs: shown on stderr only when stderr is a
//! terminal, the JSON does not go to stdout, and the run has taken over 2 s.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Runs shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub struct Progress {
    enabled: bool,
    started: Instant,
    label: String,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(label: String, json_to_stdout: bool) -> Self {
        Self { enabled: std::io::stderr().is_terminal() && !json_to_stdout, started: Instant::now(), label, bar: None }
    }

    pub fn update(&mut self, done: u32, total: u32) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() && self.started.elapsed() >= SHOW_AFTER && done < total {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} iterations, {elapsed} (eta {eta})")
                .map(|s| s.progress_chars("=> "));
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.set_message(self.label.clone());
            self.bar = Some(crate::cli::drawn(bar));
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            if done >= total {
                bar.finish_and_clear();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
