//! What an IO is, as every layer of blkqos sees it.

use crate::cgroup::GroupId;
use crate::time::Instant;
use std::fmt;
use std::str::FromStr;

/// Data direction as the block layer indexes it (`bio_data_dir`): discards and
/// flushes are `Write`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// Reads (`READ`, index 0).
    Read = 0,
    /// Writes, discards and flushes (`WRITE`, index 1).
    Write = 1,
}

impl Dir {
    /// Both directions in index order, for per-direction loops.
    pub const BOTH: [Dir; 2] = [Dir::Read, Dir::Write];
    /// Index into per-direction arrays (`[T; 2]`): 0 for reads, 1 for writes,
    /// as the kernel's `rw` index.
    #[inline]
    pub const fn idx(self) -> usize {
        self as usize
    }
}

/// The operation, as the kernel's stat groups see it (`op_stat_group`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoOp {
    /// A read (`STAT_READ`).
    Read = 0,
    /// A write (`STAT_WRITE`).
    Write = 1,
    /// A discard (`STAT_DISCARD`); its direction is [`Dir::Write`].
    Discard = 2,
    /// A cache flush (`STAT_FLUSH`); its direction is [`Dir::Write`].
    Flush = 3,
}

impl IoOp {
    /// Every operation in stat-group order.
    pub const ALL: [IoOp; 4] = [IoOp::Read, IoOp::Write, IoOp::Discard, IoOp::Flush];
    /// The data direction the block layer gives this operation
    /// (`bio_data_dir`): only [`IoOp::Read`] is a read.
    #[inline]
    pub const fn dir(self) -> Dir {
        match self {
            IoOp::Read => Dir::Read,
            _ => Dir::Write,
        }
    }
    /// Index of the kernel stat group (READ, WRITE, DISCARD, FLUSH).
    #[inline]
    pub const fn stat_group(self) -> usize {
        self as usize
    }
}

/// Bit flags an IO carries (subset of the kernel's `REQ_*` flags that the
/// controllers look at).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IoFlags(pub u16);

impl IoFlags {
    /// REQ_SYNC: a synchronous write (O_DIRECT writes are sync).
    pub const SYNC: IoFlags = IoFlags(1);
    /// REQ_META: filesystem metadata; iocost charges it as debt instead of waiting.
    pub const META: IoFlags = IoFlags(2);
    /// Issued by writeback on behalf of the group that dirtied the pages.
    pub const WRITEBACK: IoFlags = IoFlags(4);
    /// Must not be throttled behind lower-priority IO (REQ_SWAP-like): charged as debt.
    pub const ISSUE_AS_ROOT: IoFlags = IoFlags(8);
    /// The rest of a bio that was split to the device's max IO size after
    /// it passed blk-throttle, resubmitted (`bio_submit_split` →
    /// `submit_bio_noacct`) with the kernel's `BIO_BPS_THROTTLED`: its
    /// bytes were charged with the whole bio, its IO count per the
    /// throttle variant ([`crate::throttle::variant::SplitCharge`]).
    pub const SPLIT_REST: IoFlags = IoFlags(16);
    /// A piece cut from the front of a split bio: one device request.
    pub const FRAGMENT: IoFlags = IoFlags(32);
    /// A passthrough request (`blk_rq_is_passthrough`: SCSI commands by
    /// `SG_IO`, NVMe commands by io_uring's `URING_CMD`): built as a
    /// request, with no bio, so blk-throttle and rq-qos never see it and
    /// the disk statistics do not count it (`blk_do_io_stat`).
    pub const PASSTHROUGH: IoFlags = IoFlags(64);
    /// A read-back of a block the job wrote, taken from its verify log
    /// (fio `IO_U_F_VER_LIST`): the real engine checks fio's verify
    /// header and checksum of every block it reads.
    pub const VERIFY_LIST: IoFlags = IoFlags(128);
    /// On a [`IoOp::Discard`]: a zone reset (`REQ_OP_ZONE_RESET`, by
    /// `BLKRESETZONE`) of the zones in `[offset, offset + len)`, or of the
    /// zone at `offset` when `len` is 0; no data moves.
    pub const ZONE_RESET: IoFlags = IoFlags(256);
    /// REQ_BACKGROUND: writeback for the background threshold or for
    /// expired inodes (`wbc->for_background`, `wbc->for_kupdate`), as
    /// opposed to a sync's (`WB_SYNC_ALL`, [`IoFlags::SYNC`]).
    pub const BACKGROUND: IoFlags = IoFlags(512);
    /// Submitted right after its task slept (fio's `thinktime`): a host
    /// that was idle meanwhile can be slower to complete it (the lab's
    /// emulated 6.1 guest: `h01` against `h02`).
    pub const AFTER_SLEEP: IoFlags = IoFlags(1024);

    /// Are all of `other`'s flags set?
    #[inline]
    pub const fn contains(self, other: IoFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Any of `other`'s flags set?
    #[inline]
    pub const fn intersects(self, other: IoFlags) -> bool {
        self.0 & other.0 != 0
    }
    /// These flags plus `other`'s.
    #[inline]
    pub const fn with(self, other: IoFlags) -> IoFlags {
        IoFlags(self.0 | other.0)
    }
    /// These flags minus `other`'s.
    #[inline]
    pub const fn without(self, other: IoFlags) -> IoFlags {
        IoFlags(self.0 & !other.0)
    }
}

/// A run-unique IO identifier (index into the driver's in-flight slab plus a
/// generation, opaque to controllers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct IoId(pub u64);

/// Who submitted an IO: an opaque tag for whoever drives the controllers
/// (the driver puts its job clone's index here). Controllers never read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Submitter(pub u32);

/// One IO as it travels through the controller stack to the device.
///
/// `Copy` and 64 bytes: controllers keep held IOs by value, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    /// Run-unique identifier, used to match completions to submissions.
    pub id: IoId,
    /// Who submitted it: an opaque tag the controllers carry and never
    /// read (the driver's job clone; an embedding application's worker).
    pub submitter: Submitter,
    /// The cgroup charged for this IO (for writeback: the owner of the pages).
    pub group: GroupId,
    /// What the IO does (read, write, discard, flush).
    pub op: IoOp,
    /// `REQ_*`-like flags the controllers look at.
    pub flags: IoFlags,
    /// Byte offset on the device / file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// When the IO entered the block layer (`submit_bio`).
    pub submitted_at: Instant,
    /// blk-iocost's charge for this IO in device vtime, as the kernel
    /// keeps it on the bio (`bio->bi_iocost_cost`): 0 when it is created,
    /// set by iocost when the IO passes it (and grown by the bios merged
    /// into it), read back at completion. Whoever carries the IO from
    /// submission to [`crate::Controller::on_complete`] keeps it as the
    /// stack left it: the stack's `submit` and `merge` write it, and a
    /// held IO comes back from the timer with it set.
    pub cost_vtime: u64,
    /// The IO priority (`bi_ioprio`: class << 13 | level; 0 = none, the
    /// submitter's own priority applies). The real engine puts it in the
    /// io_uring SQE; the simulated devices dispatch in arrival order and
    /// do not look at it.
    pub ioprio: u16,
}

impl Io {
    /// The data direction (`bio_data_dir`): see [`IoOp::dir`].
    #[inline]
    pub const fn dir(&self) -> Dir {
        self.op.dir()
    }
    /// Start sector (512-byte units), as `bi_sector`.
    #[inline]
    pub const fn sector(&self) -> u64 {
        self.offset >> 9
    }
    /// Length in 512-byte sectors.
    #[inline]
    pub const fn sectors(&self) -> u64 {
        self.len >> 9
    }
    /// Must this IO be cut to the device's max IO size (`max_io_bytes`)
    /// before it goes past blk-throttle (`bio_split_to_limits`)? Reads and
    /// writes longer than the limit are, and a split remainder always is
    /// (its next piece becomes a request of its own). Discards and flushes
    /// follow other limits and are never split here.
    #[inline]
    pub const fn needs_split(&self, max_io_bytes: u64) -> bool {
        (self.len > max_io_bytes && matches!(self.op, IoOp::Read | IoOp::Write))
            || self.flags.contains(IoFlags::SPLIT_REST)
    }
}

/// A device number `MAJ:MIN`, as knob lines and `/proc/diskstats` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevId {
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
}

impl DevId {
    /// The device `major:minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        DevId { major, minor }
    }
}

impl fmt::Display for DevId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// Why a `MAJ:MIN` string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a device number: expected MAJ:MIN with decimal numbers (e.g. 8:0)")]
pub struct BadDevId(pub String);

impl FromStr for DevId {
    type Err = BadDevId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadDevId(s.to_string());
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        if !digits(a) || !digits(b) {
            return Err(bad());
        }
        Ok(DevId {
            major: a.parse().map_err(|_| bad())?,
            minor: b.parse().map_err(|_| bad())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devid_parse() {
        assert_eq!("253:1".parse::<DevId>(), Ok(DevId::new(253, 1)));
        assert!("253".parse::<DevId>().is_err());
        assert!("a:1".parse::<DevId>().is_err());
        assert!("-1:1".parse::<DevId>().is_err());
        assert!("1:".parse::<DevId>().is_err());
        assert_eq!(DevId::new(8, 0).to_string(), "8:0");
    }

    #[test]
    fn split_predicate() {
        let mut io = Io {
            ioprio: 0,
            id: IoId(1),
            submitter: crate::Submitter(0),
            group: GroupId::ROOT,
            op: IoOp::Read,
            flags: IoFlags::default(),
            offset: 0,
            len: 1 << 20,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        };
        assert!(io.needs_split(128 << 10));
        assert!(!io.needs_split(1 << 20));
        io.op = IoOp::Discard;
        assert!(!io.needs_split(128 << 10));
        io.len = 4096;
        io.flags = IoFlags::SPLIT_REST;
        assert!(io.needs_split(u64::MAX));
        assert_eq!(
            io.flags
                .with(IoFlags::FRAGMENT)
                .without(IoFlags::SPLIT_REST),
            IoFlags::FRAGMENT
        );
    }

    #[test]
    fn io_is_small() {
        assert!(std::mem::size_of::<Io>() <= 64);
    }
}
