//! fio's data directions (`enum fio_ddir` in fio's `io_ddir.h`: `DDIR_READ`,
//! `DDIR_WRITE`, `DDIR_TRIM`) as a type, and [`PerDir`], a value per
//! direction indexed by it.
//!
//! fio's own numbers for the directions (0 read, 1 write, 2 trim) appear
//! only at the edges that print them, through [`Ddir::fio_index`]: the
//! direction column of the sample logs and the order of the JSON and terse
//! sections.

use blkqos_core::IoOp;
use std::ops::{Index, IndexMut};

/// A data direction of a job's IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ddir {
    /// `DDIR_READ`.
    Read,
    /// `DDIR_WRITE`.
    Write,
    /// `DDIR_TRIM`: a discard.
    Trim,
}

impl Ddir {
    /// Every direction in fio's order (read, write, trim): the order of its
    /// reports and of its per-direction loops (`for (ddir = 0; ddir <
    /// DDIR_RWDIR_CNT; ddir++)`).
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];

    /// fio's number for the direction (`DDIR_READ` 0, `DDIR_WRITE` 1,
    /// `DDIR_TRIM` 2), for the outputs that print it: the `ddir` column of
    /// the bw/iops/lat and histogram logs (fio `flush_samples`,
    /// `__add_stat_to_log`).
    #[inline]
    pub const fn fio_index(self) -> usize {
        match self {
            Ddir::Read => 0,
            Ddir::Write => 1,
            Ddir::Trim => 2,
        }
    }

    /// The direction fio numbers `index` ([`Ddir::fio_index`]); `None`
    /// past trim.
    pub const fn from_fio_index(index: usize) -> Option<Ddir> {
        match index {
            0 => Some(Ddir::Read),
            1 => Some(Ddir::Write),
            2 => Some(Ddir::Trim),
            _ => None,
        }
    }

    /// fio's name of the direction (`io_ddir_name`).
    pub const fn name(self) -> &'static str {
        match self {
            Ddir::Read => "read",
            Ddir::Write => "write",
            Ddir::Trim => "trim",
        }
    }

    /// The operation the block layer sees for an IO of this direction: a
    /// trim is a discard.
    #[inline]
    pub const fn op(self) -> IoOp {
        match self {
            Ddir::Read => IoOp::Read,
            Ddir::Write => IoOp::Write,
            Ddir::Trim => IoOp::Discard,
        }
    }

    /// The other direction of a read/write mix (fio `rate_ddir`'s
    /// `odir = ddir ^ 1`); a trim has none.
    #[inline]
    pub const fn mix_other(self) -> Option<Ddir> {
        match self {
            Ddir::Read => Some(Ddir::Write),
            Ddir::Write => Some(Ddir::Read),
            Ddir::Trim => None,
        }
    }
}

impl From<Ddir> for IoOp {
    #[inline]
    fn from(d: Ddir) -> IoOp {
        d.op()
    }
}

/// A flush has no data direction.
impl TryFrom<IoOp> for Ddir {
    type Error = IoOp;
    fn try_from(op: IoOp) -> Result<Ddir, IoOp> {
        match op {
            IoOp::Read => Ok(Ddir::Read),
            IoOp::Write => Ok(Ddir::Write),
            IoOp::Discard => Ok(Ddir::Trim),
            IoOp::Flush => Err(op),
        }
    }
}

/// A value per direction: fio's `R[,W[,T]]` option lists, and every
/// per-direction counter (fio's `[DDIR_RWDIR_CNT]` arrays), indexed by
/// [`Ddir`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct PerDir<T> {
    pub read: T,
    pub write: T,
    pub trim: T,
}

impl<T: Copy> PerDir<T> {
    /// The same value in every direction.
    pub const fn all(v: T) -> Self {
        PerDir {
            read: v,
            write: v,
            trim: v,
        }
    }
    /// The value of `ddir`.
    #[inline]
    pub fn get(&self, ddir: Ddir) -> T {
        self[ddir]
    }
}

impl<T> PerDir<T> {
    /// Each direction's value from `f`, called in [`Ddir::ALL`] order.
    pub fn from_fn(mut f: impl FnMut(Ddir) -> T) -> Self {
        let read = f(Ddir::Read);
        let write = f(Ddir::Write);
        let trim = f(Ddir::Trim);
        PerDir { read, write, trim }
    }
    /// The directions and their values, in [`Ddir::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Ddir, &T)> {
        [
            (Ddir::Read, &self.read),
            (Ddir::Write, &self.write),
            (Ddir::Trim, &self.trim),
        ]
        .into_iter()
    }
    /// The directions and their values, mutable, in [`Ddir::ALL`] order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Ddir, &mut T)> {
        [
            (Ddir::Read, &mut self.read),
            (Ddir::Write, &mut self.write),
            (Ddir::Trim, &mut self.trim),
        ]
        .into_iter()
    }
    /// The values, in [`Ddir::ALL`] order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        [&self.read, &self.write, &self.trim].into_iter()
    }
    /// The values, mutable, in [`Ddir::ALL`] order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        [&mut self.read, &mut self.write, &mut self.trim].into_iter()
    }
    /// Each value through `f`.
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> PerDir<U> {
        PerDir {
            read: f(self.read),
            write: f(self.write),
            trim: f(self.trim),
        }
    }
    /// The values in fio's order (read, write, trim; [`Ddir::fio_index`]).
    pub fn into_fio_array(self) -> [T; 3] {
        [self.read, self.write, self.trim]
    }
}

impl<T> Index<Ddir> for PerDir<T> {
    type Output = T;
    #[inline]
    fn index(&self, ddir: Ddir) -> &T {
        match ddir {
            Ddir::Read => &self.read,
            Ddir::Write => &self.write,
            Ddir::Trim => &self.trim,
        }
    }
}

impl<T> IndexMut<Ddir> for PerDir<T> {
    #[inline]
    fn index_mut(&mut self, ddir: Ddir) -> &mut T {
        match ddir {
            Ddir::Read => &mut self.read,
            Ddir::Write => &mut self.write,
            Ddir::Trim => &mut self.trim,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_numbers_round_trip_in_order() {
        for (i, d) in Ddir::ALL.into_iter().enumerate() {
            assert_eq!(d.fio_index(), i);
            assert_eq!(Ddir::from_fio_index(i), Some(d));
        }
        assert_eq!(Ddir::from_fio_index(3), None);
        let names: Vec<_> = Ddir::ALL.iter().map(|d| d.name()).collect();
        assert_eq!(names, ["read", "write", "trim"]);
    }

    #[test]
    fn ops_round_trip_and_flush_has_no_direction() {
        for d in Ddir::ALL {
            assert_eq!(Ddir::try_from(IoOp::from(d)), Ok(d));
        }
        assert_eq!(IoOp::from(Ddir::Trim), IoOp::Discard);
        assert_eq!(Ddir::try_from(IoOp::Flush), Err(IoOp::Flush));
    }

    #[test]
    fn mix_other_pairs_read_and_write_only() {
        assert_eq!(Ddir::Read.mix_other(), Some(Ddir::Write));
        assert_eq!(Ddir::Write.mix_other(), Some(Ddir::Read));
        assert_eq!(Ddir::Trim.mix_other(), None);
    }

    #[test]
    fn per_dir_indexes_its_fields() {
        let mut p = PerDir::from_fn(|d| d.fio_index() * 10);
        assert_eq!((p.read, p.write, p.trim), (0, 10, 20));
        p[Ddir::Trim] += 1;
        assert_eq!(p[Ddir::Trim], 21);
        assert_eq!(p.get(Ddir::Write), 10);
        for (d, v) in p.iter_mut() {
            *v += d.fio_index();
        }
        let pairs: Vec<_> = p.iter().map(|(d, v)| (d, *v)).collect();
        assert_eq!(
            pairs,
            [(Ddir::Read, 0), (Ddir::Write, 11), (Ddir::Trim, 23)]
        );
        assert_eq!(p.values().sum::<usize>(), 34);
        assert_eq!(p.map(|v| v * 2).into_fio_array(), [0, 22, 46]);
    }
}
