//! QoS classes and the resource spec of a task (memory request/limit, bandwidth, priority).

use super::error::SchedError;

/// Shares are kept in parts per million so that sums are exact.
pub const PPM: u32 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QosClass {
    /// request == limit, reserved exclusively.
    Guaranteed,
    /// request reserved, may grow to limit while memory is free.
    Burstable,
    /// nothing reserved, runs on leftovers, first refused.
    BestEffort,
}

impl QosClass {
    pub fn parse(text: &str) -> Result<Self, SchedError> {
        match text.trim().to_ascii_lowercase().replace(['-', ' '], "_").as_str() {
            "guaranteed" => Ok(QosClass::Guaranteed),
            "burstable" => Ok(QosClass::Burstable),
            "best_effort" | "besteffort" => Ok(QosClass::BestEffort),
            _ => Err(SchedError::Invalid(format!(
                "unknown QoS policy {text:?}: expected 'guaranteed', 'burstable' or 'best_effort'"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "guaranteed",
            QosClass::Burstable => "burstable",
            QosClass::BestEffort => "best_effort",
        }
    }
}

/// Convert a share in (0, 1] to parts per million; `what` names it in the error.
pub fn share_to_ppm(share: f64, what: &str) -> Result<u32, SchedError> {
    if !share.is_finite() || share <= 0.0 || share > 1.0 {
        return Err(SchedError::Invalid(format!("{what} must be in (0, 1], got {share}")));
    }
    let ppm = (share * PPM as f64).round() as u32;
    if ppm == 0 {
        return Err(SchedError::Invalid(format!("{what} {share} is below the 1e-6 resolution")));
    }
    Ok(ppm)
}

/// What a task asks of the device.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub class: QosClass,
    /// Bytes reserved at admission (0 for best effort).
    pub memory_request: u64,
    /// Bytes the task may hold at most (`u64::MAX` = only bounded by free memory).
    pub memory_limit: u64,
    /// Bandwidth share in ppm: reserved for guaranteed/burstable, weight only for best effort.
    pub bandwidth_ppm: u32,
    /// Higher runs first among queued tasks.
    pub priority: i32,
    /// Absolute deadline on `clock::now_ns()`; earlier goes first among equal priorities.
    pub deadline_ns: Option<u64>,
}

impl TaskSpec {
    pub fn guaranteed(memory: u64, bandwidth: f64) -> Result<Self, SchedError> {
        Self::new(QosClass::Guaranteed, memory, memory, bandwidth)
    }

    pub fn burstable(request: u64, limit: u64, bandwidth: f64) -> Result<Self, SchedError> {
        Self::new(QosClass::Burstable, request, limit, bandwidth)
    }

    pub fn best_effort(limit: Option<u64>, bandwidth: f64) -> Result<Self, SchedError> {
        Self::new(QosClass::BestEffort, 0, limit.unwrap_or(u64::MAX), bandwidth)
    }

    /// Build and validate a spec of any class.
    pub fn new(class: QosClass, request: u64, limit: u64, bandwidth: f64) -> Result<Self, SchedError> {
        let spec = TaskSpec {
            class,
            memory_request: request,
            memory_limit: limit,
            bandwidth_ppm: share_to_ppm(bandwidth, "bandwidth share")?,
            priority: 0,
            deadline_ns: None,
        };
        spec.validate()?;
        Ok(spec)
    }

    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    pub fn with_deadline_ns(mut self, deadline_ns: Option<u64>) -> Self {
        self.deadline_ns = deadline_ns;
        self
    }

    pub fn validate(&self) -> Result<(), SchedError> {
        if self.bandwidth_ppm == 0 || self.bandwidth_ppm > PPM {
            return Err(SchedError::Invalid("bandwidth share must be in (0, 1]".into()));
        }
        match self.class {
            QosClass::Guaranteed if self.memory_request != self.memory_limit => {
                Err(SchedError::Invalid(format!(
                    "guaranteed tasks need memory request == limit (got {} and {} bytes)",
                    self.memory_request, self.memory_limit
                )))
            }
            QosClass::BestEffort if self.memory_request != 0 => Err(SchedError::Invalid(
                "best-effort tasks reserve nothing: memory request must be 0".into(),
            )),
            _ if self.memory_limit < self.memory_request => Err(SchedError::Invalid(format!(
                "memory limit ({} bytes) is below the request ({} bytes)",
                self.memory_limit, self.memory_request
            ))),
            _ => Ok(()),
        }
    }

    /// Bandwidth the task reserves at admission (best effort reserves none).
    pub fn reserved_bandwidth_ppm(&self) -> u32 {
        match self.class {
            QosClass::BestEffort => 0,
            _ => self.bandwidth_ppm,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_specs() {
        assert!(TaskSpec::guaranteed(1 << 20, 0.5).is_ok());
        assert!(TaskSpec::burstable(10, 5, 0.5).is_err());
        assert!(TaskSpec::guaranteed(10, 0.0).is_err());
        assert!(TaskSpec::guaranteed(10, 1.5).is_err());
        assert!(TaskSpec::guaranteed(10, f64::NAN).is_err());
        assert!(TaskSpec::new(QosClass::Guaranteed, 1, 2, 0.1).is_err());
        assert!(TaskSpec::new(QosClass::BestEffort, 1, 2, 0.1).is_err());
        assert_eq!(TaskSpec::best_effort(None, 0.1).map(|s| s.reserved_bandwidth_ppm()), Ok(0));
        assert_eq!(QosClass::parse("Best-Effort"), Ok(QosClass::BestEffort));
        assert!(QosClass::parse("gold").is_err());
    }
}
