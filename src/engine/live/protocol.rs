//! What the parent and its worker processes say to each other: one JSON object per line, the
//! parent's commands on the worker's stdin and the worker's events on its stdout. Lines keep the
//! stream readable by a person (`throttle-sim worker` can be driven by hand) and a worker that
//! dies mid-line loses only that line.

use serde::{Deserialize, Serialize};

use crate::exchange::Response;
use crate::time::Nanos;

/// Everything a worker needs to run one client process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// The resolved scenario, as `scenario.toml` records it.
    pub scenario: String,
    /// The group's index in the scenario and the process's index within the group.
    pub group: usize,
    pub process: usize,
    /// Base URL requests go to, e.g. `http://127.0.0.1:41234/`.
    pub target: String,
    /// Extra request headers (`Authorization`, …) in order.
    pub headers: Vec<(String, String)>,
    /// Send the group's key as `Authorization` (the in-process server); external targets get
    /// only the headers given.
    pub send_key: bool,
    /// `x-client-id` is the global thread index (our own server), else `group/pP/tT`.
    pub send_client_id: bool,
    /// How long one request may take, real milliseconds, before it counts as an error.
    pub timeout_ms: u64,
    /// Whether the server's capacity is known (in-process server): the oracle may then see
    /// the population.
    pub rate_per_sec: f64,
    /// With the scenario's `[store] url`: the run's key prefix in Redis, the same for every
    /// worker of the run and no other run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_namespace: Option<String>,
    /// `client --ca-file`: trusted beside the usual roots for an `https://` target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<std::path::PathBuf>,
    /// `client --method` (GET without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// `client --body TEXT` or `--body-file FILE`: what each request carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<RequestBody>,
    /// `--log-requests`: report each answer's rate-limit fields as sent
    /// ([`crate::exchange::RAW_FIELDS`]), for requests.csv's raw columns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw_headers: bool,
}

/// What `client`'s requests carry: text given on the command line, or a file's bytes (read
/// by each worker: a file need not be text).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestBody {
    Text(String),
    File(std::path::PathBuf),
}

/// Parent → worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// The first line: what to run. The worker builds everything and answers `ready`.
    Start(Box<WorkerSpec>),
    /// Virtual time 0 is this wall-clock instant (nanoseconds since the Unix epoch).
    Go { origin_unix_nanos: u64 },
    /// End now (Ctrl-C): abandon waits and requests in flight, report `done`.
    Stop,
}

/// Worker → parent. Threads are the worker's local indices; times are virtual nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    /// Built and waiting for `go`, with the process's starting sleep value.
    Ready { sleep: f64, backoffs: u64 },
    /// A thread chose a wait longer than any it reported before (for `max_sleep`).
    Delay { th: u32, d: Nanos },
    /// A thread gave up a job without sending.
    GiveUp { th: u32 },
    /// One request and its answer.
    Request(RequestEvent),
    /// The process's sleep value and backoffs now (sent at every sampling tick).
    Sleep { value: f64, backoffs: u64 },
    /// Every thread has ended; nothing follows.
    Done { sleep: f64, backoffs: u64 },
    /// The shared store failed (Redis gone or too slow): the process stops; the run should.
    Failed { message: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestEvent {
    pub th: u32,
    /// When it was sent.
    pub t: Nanos,
    /// What came back.
    pub response: Response,
    /// The wait chosen before it.
    pub waited: Nanos,
    /// Which error it met, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<crate::record::Failure>,
    /// On a 2xx: how long since the thread first wanted to send this job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_wait: Option<Nanos>,
    /// This 2xx was the thread's last job.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
    /// The process's sleep value after the answer.
    pub sleep: f64,
    pub backoffs: u64,
    /// With [`WorkerSpec::raw_headers`]: the answer's rate-limit fields as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Box<crate::exchange::RawFields>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Status;

    #[test]
    fn lines_round_trip() {
        let e = Event::Request(RequestEvent {
            th: 2,
            t: 1_500,
            response: Response {
                retry_after: Some(800),
                latency: 20,
                ..Response::bare(Status::Limited).with_remaining(0)
            },
            waited: 100,
            failure: Some(crate::record::Failure::Http(502)),
            job_wait: None,
            finished: false,
            sleep: 1.6,
            backoffs: 1,
            raw: None,
        });
        let line = serde_json::to_string(&e).unwrap();
        assert!(!line.contains('\n'));
        assert!(line.starts_with(r#"{"ev":"request","th":2"#), "{line}");
        assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), e);
        let c = Command::Go {
            origin_unix_nanos: 7,
        };
        let line = serde_json::to_string(&c).unwrap();
        assert_eq!(line, r#"{"cmd":"go","origin_unix_nanos":7}"#);
        assert_eq!(serde_json::from_str::<Command>(&line).unwrap(), c);
    }
}
