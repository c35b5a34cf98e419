//! The page cache's per-second writeback series, kept sparse and capped.
//!
//! A report shows one [`SecondSample`] for every second of the run, but
//! only seconds in which a write completed carry anything new: a second
//! without writes shows no bytes and the page counts of the seconds around
//! it. So only seconds with writes (and the run's last second) are stored,
//! and a second between two stored ones is rebuilt from them: memory grows
//! with the seconds that had writes, not with the length of the run (a run
//! stretched to 48 simulated days by `io.max rbps=1` stores one entry, not
//! 4 million).
//!
//! At most [`MAX_SERIES_ENTRIES`] seconds are stored; a run that has
//! writes in more seconds keeps the first ones and says from which second
//! on nothing was recorded ([`Series::truncated_at`]).

use super::SecondSample;

/// At most this many seconds with writes are stored (about 100 bytes each
/// with one writeback owner: ~10 MB; 27.7 hours of seconds that all have
/// writes).
pub const MAX_SERIES_ENTRIES: usize = 100_000;

/// The series: a [`SecondSample`] per second of the run, seconds without
/// writes left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Series {
    /// Stored seconds in order: (second since the start, its sample). The
    /// page counts of an entry are those when the next stored second began
    /// (the last entry's: at the end of the run).
    entries: Vec<(u64, SecondSample)>,
    /// Page counts (dirty, writeback) of the seconds before the first entry.
    lead_pages: (u64, u64),
    /// The first second not recorded because the cap was reached.
    truncated_at: Option<u64>,
}

impl Series {
    /// The sample of second `sec` for an event happening now (time only
    /// moves forward: `sec` is never before the last stored second);
    /// `pages` are the current (dirty, writeback) page counts, with which
    /// the seconds before `sec` end. None once the series is truncated.
    pub(super) fn at(&mut self, sec: u64, pages: (u64, u64)) -> Option<&mut SecondSample> {
        if self.truncated_at.is_some() {
            return None;
        }
        let last_sec = self.entries.last().map(|e| e.0);
        if last_sec.is_some_and(|l| l >= sec) {
            return self.entries.last_mut().map(|e| &mut e.1);
        }
        if self.entries.len() >= MAX_SERIES_ENTRIES {
            self.truncated_at = Some(sec);
            self.end_last(pages);
            return None;
        }
        match self.entries.last_mut() {
            Some(_) => self.end_last(pages),
            None => self.lead_pages = pages,
        }
        self.entries.push((sec, SecondSample::default()));
        self.entries.last_mut().map(|e| &mut e.1)
    }

    /// The last stored second ends with `pages`.
    fn end_last(&mut self, (dirty, writeback): (u64, u64)) {
        if let Some((_, last)) = self.entries.last_mut() {
            last.dirty_pages = dirty;
            last.writeback_pages = writeback;
        }
    }

    /// The run ends in second `sec` with `pages`.
    pub(super) fn finish(&mut self, sec: u64, pages: (u64, u64)) {
        self.at(sec, pages);
        if self.truncated_at.is_none() {
            self.end_last(pages);
        }
    }

    /// Seconds in the series (stored or rebuilt).
    pub fn len(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.0 + 1)
    }

    /// Is the series empty (no second stored)?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first second left out because [`MAX_SERIES_ENTRIES`] seconds
    /// with writes were stored (the series ends before it).
    pub fn truncated_at(&self) -> Option<u64> {
        self.truncated_at
    }

    /// The last second's sample.
    pub fn last(&self) -> Option<&SecondSample> {
        self.entries.last().map(|e| &e.1)
    }

    /// Every second from the start, in order (seconds without writes
    /// rebuilt: no bytes, the page counts of the stored second before them).
    pub fn iter(&self) -> impl Iterator<Item = SecondSample> + '_ {
        let mut next = 0;
        let mut pages = self.lead_pages;
        self.entries.iter().flat_map(move |(sec, sample)| {
            let gap = (next..*sec).map(move |_| SecondSample {
                dirty_pages: pages.0,
                writeback_pages: pages.1,
                ..SecondSample::default()
            });
            next = sec + 1;
            pages = (sample.dirty_pages, sample.writeback_pages);
            gap.chain(std::iter::once(sample.clone()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense series the report had before it was sparse: every second
    /// pushed, the pages of a finished second set when a later one begins.
    #[derive(Default)]
    struct Dense(Vec<SecondSample>);

    impl Dense {
        fn at(&mut self, sec: u64, pages: (u64, u64)) -> &mut SecondSample {
            while self.0.len() as u64 <= sec {
                if let Some(last) = self.0.last_mut() {
                    (last.dirty_pages, last.writeback_pages) = pages;
                }
                self.0.push(SecondSample::default());
            }
            &mut self.0[sec as usize]
        }
        fn finish(&mut self, sec: u64, pages: (u64, u64)) {
            self.at(sec, pages);
            if let Some(last) = self.0.last_mut() {
                (last.dirty_pages, last.writeback_pages) = pages;
            }
        }
    }

    #[test]
    fn sparse_series_rebuilds_the_dense_one() {
        // (second, bytes written, pages at the event)
        let events = [
            (3, 10, (5, 1)),
            (3, 20, (6, 2)),
            (4, 5, (7, 0)),
            (9, 1, (2, 2)),
        ];
        let (mut sparse, mut dense) = (Series::default(), Dense::default());
        for (sec, bytes, pages) in events {
            sparse.at(sec, pages).expect("recorded").device_write_bytes += bytes;
            dense.at(sec, pages).device_write_bytes += bytes;
        }
        sparse.finish(12, (1, 0));
        dense.finish(12, (1, 0));
        assert_eq!(sparse.iter().collect::<Vec<_>>(), dense.0);
        assert_eq!(sparse.len(), 13);
        assert_eq!(sparse.entries.len(), 4, "3, 4, 9 and the end");
    }

    #[test]
    fn a_long_quiet_run_stores_one_second() {
        let mut s = Series::default();
        s.finish(4_194_304, (0, 0));
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.len(), 4_194_305);
        assert_eq!(s.iter().count(), 4_194_305);
    }

    #[test]
    fn the_cap_truncates_and_says_where() {
        let mut s = Series::default();
        for sec in 0..MAX_SERIES_ENTRIES as u64 + 5 {
            if let Some(x) = s.at(sec, (sec, 0)) {
                x.device_write_bytes += 1;
            }
        }
        s.finish(MAX_SERIES_ENTRIES as u64 + 10, (0, 0));
        assert_eq!(s.truncated_at(), Some(MAX_SERIES_ENTRIES as u64));
        assert_eq!(s.len(), MAX_SERIES_ENTRIES as u64);
        let last = s.last().expect("entries");
        assert_eq!(last.device_write_bytes, 1);
        assert_eq!(
            last.dirty_pages, MAX_SERIES_ENTRIES as u64,
            "ends when the cap hit"
        );
    }
}
