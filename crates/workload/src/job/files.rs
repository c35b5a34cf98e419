//! The files of one job clone (fio's `td->files`): where each lies on the
//! target, which file the next IO goes to (`file_service_type`, fio
//! `get_next_file`), and each file's own offset state (`last_pos`, random
//! map, distribution), as fio keeps per `struct fio_file`.

use super::dist::BlockDist;
use super::lfsr::Lfsr;
use super::map::BlockMap;
use super::strided::{Step, Strided};
use super::{div_by_unit, Ddir};
use crate::fio_rand::FioRand;
use crate::rng::Stream;
use crate::spec::{FileService, JobSpec, PerDir, RandomDist, RwSeq};
use crate::spec_submit::RandomGenerator;

/// Why [`Files::next_offset`] has no offset for an IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NoOffset {
    /// The job's IO is done (fio `fill_io_u` failed on its last file).
    JobDone,
    /// The file is done: fill the IO again, its direction first.
    Again,
}

/// One file: its extent on the target and its offset state.
#[derive(Debug)]
struct FileState {
    start: u64,
    len: u64,
    /// Random offsets fall in `[0, rand_span)` (of the zone's base with
    /// `zonemode=strided`: fio `last_block` caps it at `zonerange`).
    rand_span: u64,
    /// fio `last_pos - file_offset` per direction.
    seq_pos: PerDir<u64>,
    map: Option<BlockMap>,
    /// `random_generator=lfsr`: the file's register and the seed each
    /// pass restarts it from (no random map then, as in fio).
    lfsr: Option<(Lfsr, u64)>,
    /// The uniform draw the map's next IO starts from (drawn ahead, as a
    /// fraction of the direction's last block: `r / (rand_max + 1)`).
    next_want: Option<f64>,
    dist: Option<BlockDist>,
    /// Bytes issued to the file in this pass.
    issued: u64,
    /// The pass's IO on this file is done (fio `FIO_FILE_DONE`).
    done: bool,
}

/// A job clone's files and the choice between them.
#[derive(Debug)]
pub(super) struct Files {
    list: Vec<FileState>,
    cur: usize,
    /// IOs left on `cur` before switching (`file_service_type=X:N`).
    left_in_batch: u32,
    service: FileService,
    batch: u32,
    /// Blocks of the random map, a distribution and an LFSR are this long
    /// (fio `rw_min_bs`, or the smallest `ba`).
    unit: u64,
    /// Uniform random offsets of each direction are multiples of this
    /// (fio `ba[ddir]`, default `min_bs[ddir]`).
    dir_unit: PerDir<u64>,
    random: bool,
    rw_seq: RwSeq,
    /// IOs until the next random offset with `rw=randX:N` (fio
    /// `td->ddir_seq_nr`).
    seq_countdown: u32,
    /// Files never end their pass (time_based runs wrap).
    wrap: bool,
    /// `zonemode=strided` (one file).
    strided: Option<Strided>,
    /// Each direction's smallest IO length (fio `min_bs[ddir]`): a block
    /// leaves room for at least this much.
    min_len: PerDir<u64>,
    /// fio's `random_state`: the uniform random block of each IO (one
    /// generator for every file of the job, as fio has).
    block_rng: FioRand,
}

impl Files {
    /// The files at `extents` (start, length) for `spec`, random offsets
    /// in units of `unit` bytes.
    pub(super) fn new(spec: &JobSpec, extents: &[(u64, u64)], unit: u64) -> Self {
        let random = spec.rw.is_random();
        let mut dir_unit = PerDir::all(1);
        let mut min_len = PerDir::all(1);
        for d in [Ddir::Read, Ddir::Write, Ddir::Trim] {
            min_len[d] = spec.min_bs(d).max(1);
            dir_unit[d] = spec.blockalign.get(d).unwrap_or(min_len[d]).max(1);
        }
        // fio `fixup_options`: a `ba` other than `min_bs` turns the
        // random map off ("Any use of blockalign= turns off randommap");
        // the map has a bit per `rw_min_bs` (the smallest of the three
        // directions' sizes, `init_random_map`), and each direction
        // indexes it in its own blocks
        let aligned_as_min = [Ddir::Read, Ddir::Write, Ddir::Trim]
            .into_iter()
            .all(|d| dir_unit[d] == min_len[d]);
        let rw_min_bs = [Ddir::Read, Ddir::Write, Ddir::Trim]
            .into_iter()
            .map(|d| min_len[d])
            .min()
            .unwrap_or(unit);
        let strided = match extents {
            [(_, len)] => Strided::new(&spec.zones, *len),
            _ => None,
        };
        let list = extents
            .iter()
            .map(|&(start, len)| {
                let rand_span = if strided.is_some() {
                    spec.zones.range().min(len)
                } else {
                    len
                };
                let nblocks = rand_span / unit;
                let uniform = matches!(spec.random_dist, RandomDist::Random);
                let lfsr = spec.submit.random_generator == RandomGenerator::Lfsr;
                let with_map = random && uniform && !lfsr && !spec.norandommap;
                let map = (with_map && aligned_as_min && rand_span >= rw_min_bs)
                    .then(|| BlockMap::new(rand_span / rw_min_bs));
                FileState {
                    start,
                    len,
                    rand_span,
                    seq_pos: PerDir::all(0),
                    map,
                    lfsr: None,
                    next_want: None,
                    dist: if random {
                        BlockDist::new(&spec.random_dist, nblocks, unit)
                    } else {
                        None
                    },
                    issued: 0,
                    done: false,
                }
            })
            .collect();
        let seq_countdown = match spec.rw_seq {
            RwSeq::Every(n) => n,
            _ => 0,
        };
        Files {
            min_len,
            dir_unit,
            // seeded for the job's thread number ([`Files::seed_blocks`])
            block_rng: FioRand::new(0, false),
            list,
            cur: 0,
            left_in_batch: spec.files.service_batch,
            service: spec.files.service,
            batch: spec.files.service_batch.max(1),
            unit,
            random,
            rw_seq: spec.rw_seq,
            seq_countdown,
            wrap: spec.time_based,
            strided,
        }
    }

    /// `random_generator=lfsr` (fio `init_random_map`): each file's
    /// register over its `len / min_bs` blocks, from `seed`. An error
    /// when fio fails it (the seed is the register's forbidden state).
    pub(super) fn seed_lfsr(&mut self, spec: &JobSpec, min_bs: u64, seed: u64) -> Result<(), ()> {
        let uniform = matches!(spec.random_dist, RandomDist::Random);
        if !self.random || !uniform || spec.submit.random_generator != RandomGenerator::Lfsr {
            return Ok(());
        }
        for f in &mut self.list {
            let blocks = f.len / min_bs.max(1);
            let l = Lfsr::new(blocks.max(1), seed).ok_or(())?;
            f.lfsr = Some((l, seed));
        }
        Ok(())
    }

    /// fio `td_fill_rand_seeds_internal`: `random_state` from the job's
    /// block-offset seed (the one an LFSR starts from), 64-bit with
    /// `random_generator=tausworthe64`.
    pub(super) fn seed_blocks(&mut self, spec: &JobSpec, seed: u64) {
        let use64 = spec.submit.random_generator == RandomGenerator::Tausworthe64;
        self.block_rng = FioRand::new(seed, use64);
        for f in &mut self.list {
            f.next_want = None;
        }
    }

    /// `zonemode=zbd`: the current file's sequential position in `ddir`
    /// follows an IO moved to `end` (absolute; fio `get_io_u` sets
    /// `last_pos` from the adjusted IO).
    pub(super) fn set_seq_pos(&mut self, ddir: Ddir, end: u64) {
        let f = &mut self.list[self.cur];
        if (f.start..=f.start + f.len).contains(&end) {
            f.seq_pos[ddir] = end - f.start;
        }
    }

    /// Bytes in all the files.
    pub(super) fn total_len(&self) -> u64 {
        self.list.iter().map(|f| f.len).sum()
    }

    /// The absolute offset of the next IO of `*len` bytes in `ddir`. A
    /// uniform random IO may change `*len`: drawn again with `redraw`
    /// while it does not fit between its block and the file's end (fio
    /// `get_next_buflen`'s `io_u_fits` loop; `min_len` always fits), then
    /// cut to the run of free blocks the random map has there (fio
    /// `mark_random_map`). [`NoOffset`] when the file is done before the
    /// IO.
    #[inline]
    pub(super) fn next_offset(
        &mut self,
        ddir: Ddir,
        len: &mut u64,
        rng: &mut Stream,
        redraw: &mut impl FnMut(u64) -> u64,
    ) -> Result<u64, NoOffset> {
        match self.next_offset_in_file(ddir, len, rng, redraw) {
            Some(offset) => Ok(offset),
            // a strided zone at the end of the file: the job's IO is done
            None if self.strided.is_some() => Err(NoOffset::JobDone),
            // fio `set_io_u_file`: the file is done and the IO unit is
            // filled again (its direction too) in the next file; with none
            // left the pass ends, and a time-based job starts a new one
            None if self.wrap || self.list.iter().any(|f| !f.done) => Err(NoOffset::Again),
            None => Err(NoOffset::JobDone),
        }
    }

    /// [`Files::next_offset`] in the file [`Files::pick`] gives; `None`
    /// when that file is done before the IO (marked so): a strided zone
    /// at the end of the file, or a random map whose next free block lies
    /// past the direction's last one (fio `fill_io_u` fails).
    #[inline]
    fn next_offset_in_file(
        &mut self,
        ddir: Ddir,
        len: &mut u64,
        rng: &mut Stream,
        redraw: &mut impl FnMut(u64) -> u64,
    ) -> Option<u64> {
        let idx = self.pick(rng);
        let random = self.random && self.random_this_io();
        let units = (self.dir_unit[ddir], self.min_len[ddir], self.unit);
        let draw_ahead = self.list.len() == 1;
        let block_rng = &mut self.block_rng;
        let add = match self.rw_seq {
            RwSeq::Add(a) => a,
            _ => 0,
        };
        let f = &mut self.list[idx];
        let mut random_offset = |f: &mut FileState, len: &mut u64| {
            let draws = (&mut *rng, &mut *block_rng, draw_ahead);
            let got = f.random_offset(len, units, draws, redraw);
            f.done |= got.is_none();
            got
        };
        let rel = if let Some(z) = &mut self.strided {
            let mut pos = f.seq_pos[ddir];
            if z.before_io(&mut pos) == Step::Reset {
                f.reset(z.base);
            } else {
                f.seq_pos[ddir] = pos;
            }
            let rel = if random {
                z.base + random_offset(f, len)?
            } else {
                f.seq_pos[ddir]
            };
            if !z.after_offset(rel, *len) {
                f.done = true;
                return None;
            }
            rel
        } else if random {
            random_offset(f, len)?
        } else {
            f.seq_offset(ddir, len, (add, units.1), redraw)
        };
        f.seq_pos[ddir] = rel + *len;
        f.issued += *len;
        if !self.wrap && f.issued >= f.len {
            f.done = true;
        }
        Some(f.start + rel)
    }

    /// `rw=randX:N`: a new random offset every N-th IO, sequential ones
    /// in between (fio `__get_next_offset`'s `ddir_seq_nr` countdown).
    fn random_this_io(&mut self) -> bool {
        if self.seq_countdown == 0 {
            return true;
        }
        self.seq_countdown -= 1;
        if self.seq_countdown == 0 {
            if let RwSeq::Every(n) = self.rw_seq {
                self.seq_countdown = n;
            }
            return true;
        }
        false
    }

    /// The file of the next IO (fio `get_next_file`): the current one until
    /// its batch is used (`file_service_type=X:N`), then by the service
    /// type; files whose pass is done are skipped, and when all are, a new
    /// pass starts (the job still has IO to do: `io_size`, `loops`).
    #[inline]
    fn pick(&mut self, rng: &mut Stream) -> usize {
        if let [only] = &mut self.list[..] {
            if only.done {
                // its pass is done: a new one starts
                self.renew_if_all_done();
            }
            return 0;
        }
        self.pick_of_several(rng)
    }

    /// [`Files::pick`] for a job of several files.
    #[inline(never)]
    fn pick_of_several(&mut self, rng: &mut Stream) -> usize {
        self.renew_if_all_done();
        let cur_ok = !self.list[self.cur].done;
        if cur_ok && (self.left_in_batch > 0 || self.service == FileService::Sequential) {
            self.left_in_batch = self.left_in_batch.saturating_sub(1);
            return self.cur;
        }
        let n = self.list.len();
        self.cur = match self.service {
            FileService::Random => {
                let open: Vec<usize> = (0..n).filter(|&i| !self.list[i].done).collect();
                open[rng.below(open.len() as u64) as usize]
            }
            FileService::RoundRobin | FileService::Sequential => (1..=n)
                .map(|k| (self.cur + k) % n)
                .find(|&i| !self.list[i].done)
                .unwrap_or(self.cur),
        };
        self.left_in_batch = self.batch - 1;
        self.cur
    }

    fn renew_if_all_done(&mut self) {
        if self.list.iter().all(|f| f.done) {
            for f in &mut self.list {
                f.done = false;
                f.issued = 0;
                // fio_file_reset: the map is cleared, the register
                // restarts from its seed
                f.clear_map();
                if let Some((l, seed)) = &mut f.lfsr {
                    l.reset(*seed);
                }
            }
        }
    }
}

impl FileState {
    /// fio `fio_file_reset`: every direction back to `base`, the random
    /// map cleared.
    fn reset(&mut self, base: u64) {
        self.seq_pos = PerDir::all(base);
        self.clear_map();
    }

    /// The random map with every block free again.
    fn clear_map(&mut self) {
        if let Some(map) = &mut self.map {
            *map = BlockMap::new(map.nblocks());
        }
    }

    /// fio `get_next_rand_block` within this file: the distribution's
    /// block, or the random map's next free block near a uniform draw;
    /// `None` when that block cannot hold the direction's smallest IO (fio
    /// `get_next_offset` fails an offset past `io_size`: the map is in
    /// `rw_min_bs` blocks and a direction of larger blocks indexes it in
    /// its own, so the next free bit may lie past its last block).
    #[inline(always)]
    fn random_offset(
        &mut self,
        len: &mut u64,
        (unit, min_len, shared_unit): (u64, u64, u64),
        (rng, block_rng, draw_ahead): (&mut Stream, &mut FioRand, bool),
        redraw: &mut impl FnMut(u64) -> u64,
    ) -> Option<u64> {
        let region = self.rand_span.max(*len);
        // fio `last_block`: the blocks (of `ba`) a `min_bs` IO may start
        // at; `__get_next_rand_offset`: `lastb * (r / (rand_max + 1.0))`
        let last_block = div_by_unit(region.max(min_len) - min_len.saturating_sub(unit), unit);
        let mut fraction = || block_rng.next_u64() as f64 / (block_rng.max() as f64 + 1.0);
        // inclusive block index
        let last_start = div_by_unit(region - *len, unit);
        // a distribution and an LFSR draw blocks of the job's smallest
        // size for every direction
        let shared_last_start = div_by_unit(region - *len, shared_unit);
        if let Some(d) = &self.dist {
            return Some(d.next(rng).min(shared_last_start) * shared_unit);
        }
        if let Some((lfsr, seed)) = &mut self.lfsr {
            // fio get_next_rand_block: a spent register starts its pass
            // again (fio_file_reset -> lfsr_reset with the same seed)
            let b = match lfsr.next() {
                Some(b) => b,
                None => {
                    lfsr.reset(*seed);
                    lfsr.next().unwrap_or(0)
                }
            };
            return Some(b.min(shared_last_start) * shared_unit);
        }
        let b = if let Some(map) = &mut self.map {
            // the offset stream is drawn one IO ahead (the same draws in
            // the same order) so that the next block's bitmap word can be
            // prefetched: otherwise every IO waits for a cache miss on a
            // bitmap of megabytes
            let last = map.nblocks() - 1;
            let want = match self.next_want.take() {
                Some(w) => w,
                None => fraction(),
            };
            let got = map.take_near(((last_block as f64 * want) as u64).min(last));
            if draw_ahead {
                // the next IO's direction is not known yet: this one's
                // block is the likely word (a hint only)
                let next = fraction();
                map.prefetch(((last_block as f64 * next) as u64).min(last));
                self.next_want = Some(next);
            }
            let room = region.saturating_sub(got * unit);
            if room < min_len {
                return None;
            }
            if !fit_len(len, room, min_len, redraw) {
                return Some(last_start.min(got) * unit);
            }
            let nr = div_by_unit(*len + unit - 1, unit);
            if nr > 1 {
                *len = (*len).min(map.take_run(got, nr) * unit);
            }
            got
        } else {
            // the block a `min_len` IO can start at, then the length that
            // fits there
            let b = (last_block as f64 * fraction()) as u64;
            if !fit_len(len, region - b * unit, min_len, redraw) {
                return Some(last_start.min(b) * unit);
            }
            b
        };
        Some(b * unit)
    }

    /// fio `get_next_seq_offset`: from the last position, plus the
    /// `rw=X:±N` step (past the end: forward steps wrap to the start,
    /// backward ones to the end); an IO that would cross the end wraps.
    fn seq_offset(
        &mut self,
        ddir: Ddir,
        len: &mut u64,
        (add, min_len): (i64, u64),
        redraw: &mut impl FnMut(u64) -> u64,
    ) -> u64 {
        let region = self.len.max(*len);
        let mut pos = self.seq_pos[ddir];
        if pos > 0 && add != 0 {
            let stepped = pos as i128 + i128::from(add);
            pos = if stepped >= 0 && (stepped as u128) < u128::from(region) {
                stepped as u64
            } else if add > 0 {
                0
            } else {
                (region as i128 + i128::from(add)).max(0) as u64
            };
        }
        // a length that does not fit before the end is drawn again (fio
        // `get_next_buflen`); where not even the smallest fits, the IO
        // starts over at the beginning
        if pos + *len > region && !fit_len(len, region.saturating_sub(pos), min_len, redraw) {
            pos = 0;
        }
        pos
    }
}

/// fio's `io_u_fits` loop: `*len` drawn again while it exceeds `room`
/// (`redraw(room)` first looks at the IO's own draw again: a `bssplit`
/// entry that does not fit gives way to the next one).
/// False, `*len` unchanged, when even `min_len` does not fit, or when
/// [`MAX_REDRAWS`] draws found nothing that fits (a `bssplit` whose small
/// sizes all have a 0% share: fio would spin there for ever).
#[inline]
fn fit_len(len: &mut u64, room: u64, min_len: u64, redraw: &mut impl FnMut(u64) -> u64) -> bool {
    if *len <= room {
        return true;
    }
    if room < min_len {
        return false;
    }
    for _ in 0..MAX_REDRAWS {
        let l = redraw(room);
        if l <= room {
            *len = l;
            return true;
        }
    }
    false
}

/// The most lengths [`fit_len`] draws for one IO.
const MAX_REDRAWS: u32 = 10_000;
