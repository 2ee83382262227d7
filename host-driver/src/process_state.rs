//! Whether another process (a simulator daemon) is running, stopped or
//! gone, from `/proc/PID/stat` (proc(5)): what a timeout on it says.

/// A process's scheduling state, as far as a waiter cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessState {
    /// Runnable or sleeping.
    Running,
    /// Stopped (SIGSTOP, job control) or traced (a debugger).
    Stopped,
    /// It has exited, and its parent has not reaped it yet (a zombie): dead,
    /// though its pid still answers `kill(pid, 0)` (helper-86's audit: a
    /// zombie daemon was reported running and alive).
    Exited,
    /// No such process.
    Gone,
}

/// The state of process `pid`.
pub fn of(pid: u32) -> ProcessState {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name's closing parenthesis.
    match stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()) {
        Some('T' | 't') => ProcessState::Stopped,
        Some('Z') => ProcessState::Exited,
        // Dead: being torn down.
        Some('X' | 'x') => ProcessState::Gone,
        Some(_) => ProcessState::Running,
        None => ProcessState::Gone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_a_stopped_child_is_stopped() {
        assert_eq!(of(std::process::id()), ProcessState::Running);
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        assert!(std::process::Command::new("kill").args(["-STOP", &pid.to_string()]).status().unwrap().success());
        // The stop is delivered asynchronously.
        let start = std::time::Instant::now();
        while of(pid) != ProcessState::Stopped && start.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(of(pid), ProcessState::Stopped);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(of(pid), ProcessState::Gone);
    }

    #[test]
    fn a_child_that_exited_unreaped_is_exited_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Its exit is asynchronous; unreaped, it stays a zombie.
        let start = std::time::Instant::now();
        while of(pid) == ProcessState::Running && start.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(of(pid), ProcessState::Exited);
        child.wait().unwrap();
        assert_eq!(of(pid), ProcessState::Gone);
    }
}
