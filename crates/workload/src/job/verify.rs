//! The log of written blocks a job reads back to verify (fio's
//! `io_hist_list` / `io_hist_tree` and `io_piece`, iolog.c `log_io_piece`,
//! verify.c `get_next_verify`).
//!
//! With a random map (a random job without `norandommap`) every block is
//! written once per pass, so the log is a list in issue order. Otherwise
//! blocks may be written again: the log is sorted by offset and a newer
//! write replaces every older piece it overlaps, so each block is read back
//! once, in offset order. A piece is read back only once its write has
//! completed.

use crate::ddir::{Ddir, PerDir};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    offset: u64,
    len: u64,
    /// The write is still in flight (fio `IP_F_IN_FLIGHT`).
    in_flight: bool,
}

/// Written blocks not verified yet.
#[derive(Debug)]
pub(super) struct VerifyLog {
    /// Issue order (random map) ...
    list: VecDeque<Piece>,
    /// ... or sorted by offset, overlaps replaced (keyed by offset).
    tree: BTreeMap<u64, Piece>,
    sorted: bool,
}

impl VerifyLog {
    /// `sorted`: the job has no random map (fio `file_randommap` false).
    pub(super) fn new(sorted: bool) -> Self {
        VerifyLog {
            list: VecDeque::new(),
            tree: BTreeMap::new(),
            sorted,
        }
    }

    /// Pieces logged and not yet read back (fio `io_hist_len`).
    pub(super) fn len(&self) -> usize {
        if self.sorted {
            self.tree.len()
        } else {
            self.list.len()
        }
    }

    /// A write is issued (fio `log_io_piece`, before the write is queued).
    pub(super) fn log_write(&mut self, offset: u64, len: u64) {
        let p = Piece {
            offset,
            len,
            in_flight: true,
        };
        if !self.sorted {
            self.list.push_back(p);
            return;
        }
        // every piece overlapping [offset, offset + len) goes: those
        // starting inside it, and at most one starting before it (the
        // pieces in the tree never overlap each other)
        let end = offset.saturating_add(len);
        let gone: Vec<u64> = self
            .tree
            .range(..end)
            .rev()
            .take_while(|(&o, q)| o >= offset || o + q.len > offset)
            .map(|(&o, _)| o)
            .collect();
        for o in gone {
            self.tree.remove(&o);
        }
        self.tree.insert(offset, p);
    }

    /// The write of `[offset, offset + len)` completed: its piece may be
    /// read back (fio clears `IP_F_IN_FLIGHT` in `io_completed`).
    pub(super) fn write_done(&mut self, offset: u64, len: u64) {
        let hit = |p: &&mut Piece| p.in_flight && p.offset == offset && p.len == len;
        let found = if self.sorted {
            self.tree.get_mut(&offset).filter(|p| hit(p))
        } else {
            // in-flight pieces are the newest: search from the back
            self.list.iter_mut().rev().find(|p| hit(p))
        };
        if let Some(p) = found {
            p.in_flight = false;
        }
    }

    /// The next piece to read back, `(offset, len)`: the first one, if
    /// its write has completed (fio `get_next_verify`).
    pub(super) fn next(&mut self) -> Option<(u64, u64)> {
        let p = if self.sorted {
            let (_, first) = self.tree.first_key_value()?;
            if first.in_flight {
                return None;
            }
            self.tree.pop_first()?.1
        } else {
            if self.list.front()?.in_flight {
                return None;
            }
            self.list.pop_front()?
        };
        Some((p.offset, p.len))
    }

    /// Forget every piece (fio `prune_io_piece_log`, at each loop).
    pub(super) fn clear(&mut self) {
        self.list.clear();
        self.tree.clear();
    }
}

/// A verifying job's read-back state (fio `thread_data`: `io_hist_*`,
/// `verify_batch`, `last_ddir`, and the per-direction `elapsed_us` that
/// `update_runtime` keeps across the write and verify phases).
#[derive(Debug)]
pub(super) struct VerifyState {
    pub log: VerifyLog,
    /// `verify_backlog` blocks (0: read back only after the writes).
    pub backlog: u64,
    /// Blocks read back per backlog round (`verify_backlog_batch`, else
    /// `verify_backlog`).
    pub batch_size: u64,
    /// Blocks of the current backlog round still to read back.
    pub batch_left: u64,
    /// Direction of the last completed read or write (fio `last_ddir`,
    /// set in `io_completed`).
    pub last_done_ddir: Ddir,
    /// In the read-back phase after the writes (fio `do_verify`).
    pub verifying: bool,
    /// Passes (`loops`) finished: each is writes, then the read-back.
    pub passes_done: u64,
    /// Bytes one pass issues (`io_size`, else the files' bytes).
    pub pass_bytes: u64,
    /// Bytes of every IO issued in this pass's writes, read-backs included
    /// (fio `do_io`'s `bytes_issued`).
    pub pass_issued: u64,
    /// When the current phase started (fio `td->start`); None: the job's
    /// start.
    pub phase_start: Option<blkqos_core::Instant>,
    /// Microseconds each direction was active, phase by phase.
    pub elapsed_us: PerDir<u64>,
    /// The last phase is over and counted in `elapsed_us`.
    pub closed: bool,
    /// The sync before a read-back completed: the file's cached pages are
    /// to be dropped (fio `file_invalidate_cache`).
    pub drop_cache: bool,
}

impl VerifyState {
    pub(super) fn new(sorted: bool, backlog: u64, batch: u64, pass_bytes: u64) -> Self {
        VerifyState {
            log: VerifyLog::new(sorted),
            backlog,
            batch_size: if batch > 0 { batch } else { backlog },
            batch_left: 0,
            last_done_ddir: Ddir::Read,
            verifying: false,
            passes_done: 0,
            pass_bytes,
            pass_issued: 0,
            phase_start: None,
            elapsed_us: PerDir::all(0),
            closed: false,
            drop_cache: false,
        }
    }

    /// fio `check_get_verify`: during the writes, is a block read back
    /// now? Every `verify_backlog` logged blocks (after a completed write),
    /// a round of `batch_size` read-backs starts; a round goes on while
    /// blocks are ready.
    pub(super) fn backlog_next(&mut self) -> Option<(u64, u64)> {
        if self.backlog == 0 || self.log.len() == 0 {
            return None;
        }
        let due = self.batch_left > 0
            || (self.log.len() as u64).is_multiple_of(self.backlog)
                && self.last_done_ddir != Ddir::Read;
        if !due {
            return None;
        }
        if self.batch_left == 0 {
            self.batch_left = self.batch_size;
        }
        let next = self.log.next()?;
        self.batch_left -= 1;
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_keeps_issue_order_and_waits_for_the_write() {
        let mut l = VerifyLog::new(false);
        l.log_write(8192, 4096);
        l.log_write(0, 4096);
        assert_eq!(l.next(), None, "first write still in flight");
        l.write_done(0, 4096);
        assert_eq!(l.next(), None, "the first piece decides");
        l.write_done(8192, 4096);
        assert_eq!(l.next(), Some((8192, 4096)));
        assert_eq!(l.next(), Some((0, 4096)));
        assert_eq!(l.next(), None);
    }

    #[test]
    fn tree_sorts_and_replaces_overlaps() {
        let mut t = VerifyLog::new(true);
        t.log_write(8192, 4096);
        t.log_write(0, 4096);
        t.log_write(2048, 8192); // overlaps both: replaces them
        assert_eq!(t.len(), 1);
        t.log_write(16384, 4096);
        t.write_done(2048, 8192);
        t.write_done(16384, 4096);
        assert_eq!(t.next(), Some((2048, 8192)));
        assert_eq!(t.next(), Some((16384, 4096)));
        assert_eq!(t.len(), 0);
    }
}
