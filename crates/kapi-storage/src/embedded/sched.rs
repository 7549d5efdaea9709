//! The committer thread's scheduling policy.
//!
//! The committer runs as a batch thread (`SCHED_BATCH`): the same share of
//! the CPU and the same nice value as any other thread, but its wake-ups do
//! not preempt the thread that is running. Under load, a write handed to it
//! while a worker thread is mid-request waits for that request's slice to end
//! instead of taking the CPU at once, and more writes join the same batch
//! and its one `fdatasync`. On the project's 2-vCPU machines, three
//! alternating rounds of 20,000 creates at 16 connections: 231 / 209 / 214 µs
//! of CPU per create with the normal policy against 200 / 198 / 188 µs as a
//! batch thread (the committer's system time 22–23.5 → 14.5–21 µs per
//! create), 6,510–6,887 against 6,631–7,402 creates/s; p99 latency moved
//! both ways (5.1 / 6.3 / 6.4 against 7.7 / 7.1 / 5.5 ms). Making the request
//! workers batch threads too gained nothing. When a CPU is idle the committer
//! is woken on it at once, as before (docs/performance-log.md, session 21).
//!
//! The one module of this crate allowed `unsafe`: the system call has no safe
//! wrapper in the crates the workspace uses.

#![allow(unsafe_code)]

/// Make the calling thread a batch thread (`SCHED_BATCH`, nice unchanged);
/// whether the kernel accepted it (a sandbox may refuse the call, and the
/// thread then keeps its policy).
#[cfg(target_os = "linux")]
pub fn batch_current_thread() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid `sched_param` that outlives the call, and
    // pid 0 names the calling thread; the call reads nothing else.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) == 0 }
}

/// Other systems keep their default policy.
#[cfg(not(target_os = "linux"))]
pub fn batch_current_thread() -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    const SCHED_OTHER: u32 = 0;
    const SCHED_BATCH: u32 = 3;

    /// The scheduling policy of thread `tid` of this process as the kernel
    /// reports it (`/proc`, field 41 of `stat`: 0 normal, 3 batch).
    fn policy_of(tid: &str) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces.
        let after_name = &stat[stat.rfind(')')? + 2..];
        after_name.split(' ').nth(41 - 3)?.parse().ok()
    }

    fn own_tid() -> String {
        std::fs::read_link("/proc/thread-self")
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// Whether this environment lets a thread become a batch thread (a
    /// sandbox may refuse the call; the store then runs as before).
    fn allowed() -> bool {
        let allowed = std::thread::spawn(batch_current_thread).join().unwrap();
        if !allowed {
            eprintln!("sched_setscheduler is refused here: nothing to check");
        }
        allowed
    }

    #[test]
    fn a_thread_made_batch_reports_the_batch_policy_and_others_do_not_change() {
        if !allowed() {
            return;
        }
        let main = own_tid();
        let before = policy_of(&main);
        let made = std::thread::spawn(|| {
            let tid = own_tid();
            assert_eq!(policy_of(&tid), Some(SCHED_OTHER));
            let set = batch_current_thread();
            (set, policy_of(&tid))
        })
        .join()
        .unwrap();
        assert_eq!(made, (true, Some(SCHED_BATCH)));
        assert_eq!(policy_of(&main), before, "only the calling thread changes");
    }

    /// The policies of this process's committer threads.
    fn committers() -> Vec<Option<u32>> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| {
                let task = task.ok()?;
                let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
                let tid = task.file_name().into_string().ok()?;
                (comm.trim() == "kapi-committer").then(|| policy_of(&tid))
            })
            .collect()
    }

    #[test]
    fn an_opened_store_commits_on_a_batch_thread() {
        if !allowed() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let _store =
            super::super::EmbeddedBackend::open(super::super::EmbeddedConfig::new(dir.path()))
                .unwrap();
        // The thread sets its policy when it starts; give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let found = committers();
            if !found.is_empty() && found.iter().all(|p| *p == Some(SCHED_BATCH)) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "committer threads and their policies: {found:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
