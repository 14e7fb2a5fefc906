//! A process's resident memory, as the kernel reports it in `/proc/PID/status`.

/// Resident and peak-resident bytes (VmRSS, VmHWM) of process `pid`, or of this one; 0 if unreadable.
pub fn rss_of(pid: Option<u32>) -> (u64, u64) {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}
