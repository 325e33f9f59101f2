//! The worker processes of a live run, from start to exit: spawn one per client process and
//! hand it its spec, wait until every one is ready, tell them all to go (or stop), and at the
//! end let them exit (killing what does not), naming the ones that died. What their events
//! mean for the results is `live::run`'s business.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::runtime::Runtime;

use super::STOP_GRACE;
use super::protocol::{Command, Event, WorkerSpec};
use crate::engine::EngineError;
use crate::record::DeadWorker;
use crate::scenario::Layout;
use crate::time::Nanos;

/// What a reader task passes on from one worker's stdout.
pub(super) enum Msg {
    Event(Event),
    /// The stream ended (the worker exited or closed stdout).
    Closed,
    /// A line that is not an event (a worker bug); reported, not fatal.
    Garbled(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WorkerState {
    Starting,
    Running,
    Done,
    Dead,
}

pub(super) struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
    pub state: WorkerState,
    pub died_at: Nanos,
    /// Why the parent gave up on it while it still ran (it stopped answering), if it did:
    /// then the parent's own kill is not reported as if something else had killed it.
    pub overdue: Option<String>,
}

impl Worker {
    /// Whether it will send nothing more.
    pub fn ended(&self) -> bool {
        matches!(self.state, WorkerState::Done | WorkerState::Dead)
    }

    /// Give up on it at `at`: it is still running but stopped answering (`why`).
    pub fn give_up(&mut self, at: Nanos, why: &str) {
        if matches!(self.state, WorkerState::Running | WorkerState::Starting) {
            self.state = WorkerState::Dead;
            self.died_at = at;
            self.overdue = Some(why.to_string());
        }
    }

    /// The process is stopped (SIGSTOP, SIGTSTP, a debugger): it answers nothing until
    /// continued. Read from `/proc`; false where that cannot be read.
    pub fn is_stopped(&self) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return false;
        };
        // `pid (comm) S …`: the state follows the last `)`, comm may hold anything.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| matches!(state, 'T' | 't'))
    }

    /// Count it dead at `at` unless it said it was done.
    pub fn lost(&mut self, at: Nanos) {
        if self.state != WorkerState::Done {
            self.state = WorkerState::Dead;
            self.died_at = at;
        }
    }
}

/// Every worker of the run (indexed like `Layout::processes`) and the one channel their
/// events arrive on, tagged with the worker's index.
pub(super) struct Workers {
    pub list: Vec<Worker>,
    pub events: mpsc::Receiver<(usize, Msg)>,
}

impl Workers {
    /// Start one `throttle-sim worker` per spec and send it its spec.
    pub fn spawn(
        rt: &Runtime,
        exe: &Path,
        specs: impl Iterator<Item = WorkerSpec>,
    ) -> Result<Workers, EngineError> {
        let (tx, rx) = mpsc::channel::<(usize, Msg)>();
        let mut list = Vec::new();
        for (pi, spec) in specs.enumerate() {
            let mut child = tokio::process::Command::new(exe)
                .arg("worker")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .map_err(|source| EngineError::WorkerSpawn {
                    exe: exe.to_path_buf(),
                    source,
                })?;
            let pid = child.id().unwrap_or(0);
            let stdout = child.stdout.take().expect("stdout is piped");
            let mut stdin = child.stdin.take();
            rt.spawn(read_events(pi, stdout, tx.clone()));
            if let Some(s) = &mut stdin {
                let _ = rt.block_on(send(s, &Command::Start(Box::new(spec))));
            }
            list.push(Worker {
                child,
                stdin,
                pid,
                state: WorkerState::Starting,
                died_at: 0,
                overdue: None,
            });
        }
        Ok(Workers { list, events: rx })
    }

    /// Wait until every worker has built its throttle and said ready, noting each one's
    /// starting sleep value and backoffs; an error (every worker stopped) if one exits first,
    /// they take longer than `timeout`, or `interrupt` turns true.
    pub fn wait_ready(
        &mut self,
        rt: &Runtime,
        layout: &Layout,
        timeout: Duration,
        interrupt: &AtomicBool,
        sleeps: &mut [f64],
        backoffs: &mut [u64],
    ) -> Result<(), EngineError> {
        let ready_by = Instant::now() + timeout;
        while self.list.iter().any(|w| w.state == WorkerState::Starting) {
            let left = ready_by.saturating_duration_since(Instant::now());
            let failure = match self
                .events
                .recv_timeout(left.min(Duration::from_millis(50)))
            {
                Ok((w, Msg::Event(Event::Ready { sleep, backoffs: b }))) => {
                    self.list[w].state = WorkerState::Running;
                    sleeps[w] = sleep;
                    backoffs[w] = b;
                    None
                }
                Ok((w, Msg::Closed)) => Some(format!(
                    "worker {} exited before it started",
                    worker_name(layout, w)
                )),
                Ok(_) => None,
                Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                    Some("workers did not start in time".to_string())
                }
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    Some("every worker exited".to_string())
                }
            };
            if interrupt.load(Ordering::Relaxed) && failure.is_none() {
                self.kill_all(rt);
                return Err(EngineError::Interrupted);
            }
            if let Some(f) = failure {
                self.kill_all(rt);
                return Err(EngineError::WorkersNotReady(f));
            }
        }
        Ok(())
    }

    /// Tell every worker still listening `cmd` (`go`, `stop`).
    pub fn send_all(&mut self, rt: &Runtime, cmd: &Command) {
        for w in &mut self.list {
            if let Some(s) = &mut w.stdin {
                let _ = rt.block_on(send(s, cmd));
            }
        }
    }

    /// Every worker has ended.
    pub fn all_ended(&self) -> bool {
        self.list.iter().all(Worker::ended)
    }

    /// Let every worker go: close its stdin, give it a moment, then kill what is left. The
    /// ones that died during the run, with how they ended.
    pub fn release(&mut self, rt: &Runtime, layout: &Layout) -> Vec<DeadWorker> {
        let mut dead = Vec::new();
        for (pi, w) in self.list.iter_mut().enumerate() {
            w.stdin = None;
            // One the parent gave up on will not end by itself: no grace.
            let grace = if w.overdue.is_some() {
                Duration::ZERO
            } else {
                STOP_GRACE
            };
            let status = rt.block_on(async {
                match tokio::time::timeout(grace, w.child.wait()).await {
                    Ok(s) => s.ok(),
                    Err(_) => {
                        let _ = w.child.start_kill();
                        w.child.wait().await.ok()
                    }
                }
            });
            if w.state == WorkerState::Dead {
                let p = &layout.processes[pi];
                dead.push(DeadWorker {
                    group: layout.groups[p.group].name.clone(),
                    process: p.index,
                    pid: w.pid,
                    at_s: crate::time::secs(w.died_at),
                    reason: match &w.overdue {
                        Some(why) => format!("{why}, and was killed"),
                        None => describe_exit(status),
                    },
                });
            }
        }
        dead
    }

    fn kill_all(&mut self, rt: &Runtime) {
        for w in &mut self.list {
            w.stdin = None;
            let _ = w.child.start_kill();
            let _ = rt.block_on(async { tokio::time::timeout(STOP_GRACE, w.child.wait()).await });
        }
    }
}

fn worker_name(layout: &Layout, process: usize) -> String {
    let p = &layout.processes[process];
    format!("{}/{}", layout.groups[p.group].name, p.index)
}

fn describe_exit(status: Option<std::process::ExitStatus>) -> String {
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    match status {
        None => "no exit status".to_string(),
        #[cfg(unix)]
        Some(s) if s.signal().is_some() => {
            format!("killed by signal {}", s.signal().unwrap_or_default())
        }
        Some(s) => match s.code() {
            Some(0) => "ended without reporting done".to_string(),
            Some(c) => format!("exited with code {c}"),
            None => "ended".to_string(),
        },
    }
}

async fn send(stdin: &mut ChildStdin, cmd: &Command) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(cmd).expect("commands serialize");
    line.push(b'\n');
    stdin.write_all(&line).await?;
    stdin.flush().await
}

async fn read_events(
    worker: usize,
    stdout: tokio::process::ChildStdout,
    tx: mpsc::Sender<(usize, Msg)>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let msg = match serde_json::from_str::<Event>(&line) {
            Ok(ev) => Msg::Event(ev),
            Err(_) => Msg::Garbled(line),
        };
        if tx.send((worker, msg)).is_err() {
            return;
        }
    }
    let _ = tx.send((worker, Msg::Closed));
}
