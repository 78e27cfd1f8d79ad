//! The scheduler's error type; the bindings map each variant to one Python exception.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedError {
    /// Bad argument: size, share, policy, duplicate id (`ValueError`).
    Invalid(String),
    /// Admission refused the task (`AdmissionError`).
    Rejected(String),
    /// No task or partition with that id (`KeyError`).
    NotFound(String),
    /// The scheduler no longer accepts work (`RuntimeError`).
    ShutDown,
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedError::Invalid(m) | SchedError::Rejected(m) | SchedError::NotFound(m) => {
                f.write_str(m)
            }
            SchedError::ShutDown => f.write_str("the scheduler has been shut down"),
        }
    }
}

impl std::error::Error for SchedError {}
