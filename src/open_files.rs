//! How many files this process has open, against its limit
//! (`RLIMIT_NOFILE`, which start-up raises to the hard limit). A new
//! partition replica holds one open file (its active segment's log), so the
//! controller refuses a creation that would run the broker out of files
//! before creating anything, instead of failing half-way with
//! "Too many open files".
//!
//! Linux only (it counts `/proc/self/fd`); elsewhere nothing is known and
//! nothing is refused.

/// Files kept free for connections, checkpoints and the metadata store.
pub const HEADROOM: usize = 256;

/// (files open now, the soft limit), when both can be read.
pub fn open_files() -> Option<(usize, usize)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count();
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a plain syscall filling a struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    Some((open, usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)))
}

/// Why `replicas` more partition replicas here would not fit, if they
/// would not.
pub fn refuse_if_out_of_files(replicas: usize) -> Option<String> {
    let (open, limit) = open_files()?;
    (open.saturating_add(replicas).saturating_add(HEADROOM) > limit).then(|| {
        format!(
            "{replicas} new partition replica(s) here need as many open files; {open} of the \
             open-file limit {limit} are in use and {HEADROOM} are kept free (raise `ulimit -n`)"
        )
    })
}
