//! A calibration's measurements as recorded: every round's points, the
//! target, how they were taken. `blkqos calibrate --output-format=json`
//! carries them under `measured`, and `--refit` reads them back, so a
//! device measured on one machine (or inside a test VM) is fitted and
//! checked anywhere.

use super::fit::Round;
use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What was measured.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TargetInfo {
    pub path: String,
    pub devid: String,
    pub name: String,
    pub size_bytes: u64,
    /// `queue/nr_requests` and `queue/max_sectors_kb` of the disk.
    pub nr_requests: Option<u64>,
    pub max_sectors_kb: Option<u64>,
}

/// Every round's measurements of a target.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    /// The blkqos version that measured.
    pub blkqos: String,
    pub target: TargetInfo,
    pub backend: String,
    pub secs_per_job: u32,
    pub writes: bool,
    pub interrupted: bool,
    pub rounds: Vec<Round>,
}

impl Measured {
    /// The largest request of the fitted devices: the target's
    /// `max_sectors_kb`, or the `ssd` model's 128 KiB when unknown.
    pub fn request_bytes(&self) -> u64 {
        self.target
            .max_sectors_kb
            .filter(|kb| (4..=1 << 20).contains(kb))
            .unwrap_or(128)
            << 10
    }

    /// Read `measured` from a calibration's JSON output (or a bare
    /// `Measured` object).
    pub fn load(path: &Path) -> Result<Measured> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow!("calibrate: --refit={}: {e}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{}:{}: not JSON: {e}", path.display(), e.line()))?;
        let inner = v.get("measured").cloned().unwrap_or(v);
        let m: Measured = serde_json::from_value(inner).map_err(|e| {
            anyhow!(
                "{}: not a calibration (the JSON of `blkqos calibrate --output-format=json`): {e}",
                path.display()
            )
        })?;
        if m.rounds.is_empty() {
            bail!("{}: `measured.rounds` is empty", path.display());
        }
        Ok(m)
    }
}
