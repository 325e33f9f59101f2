//! What can stop an engine, each case with what failed and where, so `run` can name it and
//! choose the exit code. A run that starts and then loses a worker or its store does not fail
//! here: it ends with a partial summary that says so (`Summary::failure`, `dead_workers`).

use std::path::PathBuf;

use crate::exit;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Writing a result file (series.csv, requests.csv) failed; the caller knows which file.
    #[error("{0}")]
    Write(#[from] std::io::Error),
    /// Something the live run needs could not be set up (the async runtime, the server's
    /// socket).
    #[error("{what}: {source}")]
    Setup {
        what: &'static str,
        source: std::io::Error,
    },
    /// This program's own binary, which live runs start again as workers, cannot be found.
    #[error("cannot find this program's binary: {0}")]
    OwnBinary(std::io::Error),
    /// A worker process could not be started.
    #[error("starting worker {}: {source}", exe.display())]
    WorkerSpawn {
        exe: PathBuf,
        source: std::io::Error,
    },
    /// The workers did not all become ready (one exited, or they took too long).
    #[error("{0}")]
    WorkersNotReady(String),
    /// The scenario's store could not be reached before the run.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Ctrl-C before the run started: nothing was recorded.
    #[error("interrupted before the run started")]
    Interrupted,
}

impl EngineError {
    pub fn exit_code(&self) -> i32 {
        match self {
            EngineError::Interrupted => exit::INTERRUPTED,
            _ => exit::FAILED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_names_what_failed_and_gets_its_exit_code() {
        assert_eq!(EngineError::Interrupted.exit_code(), exit::INTERRUPTED);
        let spawn = EngineError::WorkerSpawn {
            exe: PathBuf::from("/no/such/throttle-sim"),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(
            spawn
                .to_string()
                .starts_with("starting worker /no/such/throttle-sim: ")
        );
        assert_eq!(spawn.exit_code(), exit::FAILED);
    }
}
