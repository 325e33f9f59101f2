//! What this machine can hold, as far as a run needs to know before it starts: the memory
//! free for it. Read from Linux's `/proc/meminfo`; elsewhere unknown, and nothing is refused
//! on a guess.

/// Bytes of memory available to a new run (`MemAvailable`: free memory and caches the kernel
/// can give back), or `None` where the system does not say.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available_in_bytes() {
        let text = "MemTotal:       24683784 kB\nMemFree:  100 kB\nMemAvailable:   23330912 kB\n";
        assert_eq!(mem_available(text), Some(23_330_912 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
    }
}
