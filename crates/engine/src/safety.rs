//! Never destroy data by accident.
//!
//! Before blkqos writes to a block device it checks, in this order, that the
//! device is not mounted (`/proc/self/mountinfo` by `MAJ:MIN`, and the
//! sources of `/proc/self/mounts` and `/proc/mounts` by `st_rdev`), not an
//! active swap area (`/proc/swaps`), not claimed by another device
//! (`/sys/dev/block/MAJ:MIN/holders/` non-empty: LVM, dm-crypt, md...), has
//! no partitions, and carries no partition table or filesystem/volume
//! signature in its first [`PROBE_BYTES`] ([`detect_signature`]). Any hit is
//! a [`Refusal`] naming exactly what was found; `allow_destructive` skips
//! these checks. Independently, a block device opened for writing is opened
//! with `O_EXCL`, so the kernel itself refuses one that it has claimed
//! (mounted, swap, held): that one cannot be overridden.
//!
//! Regular files: an existing non-empty file that blkqos did not create or
//! lay out (no `user.blkqos.layout` xattr) is never written, nor extended,
//! without the `overwrite` consent.

use blkqos_core::DevId;
use std::fmt;
use std::path::Path;

/// How much of the device head the signature probe reads: up to btrfs'
/// superblock at 64 KiB + 64 and a 64 KiB-page swap header.
pub const PROBE_BYTES: usize = 68 * 1024;

/// A partition table, filesystem or volume signature found on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    /// What it is, as `blkid` would name it (`ext4` reads "ext2/3/4").
    pub name: &'static str,
    /// Byte offset of the magic on the device.
    pub offset: u64,
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} signature at byte {}", self.name, self.offset)
    }
}

/// (name, offset, magic), checked in order: the more specific first (a GPT
/// disk also has a protective MBR; a FAT/NTFS boot sector also ends in 0x55AA).
const MAGICS: &[(&str, usize, &[u8])] = &[
    ("GPT partition table (\"EFI PART\")", 512, b"EFI PART"),
    (
        "GPT partition table (\"EFI PART\", 4K sectors)",
        4096,
        b"EFI PART",
    ),
    ("LVM2 physical volume (\"LABELONE\")", 0, b"LABELONE"),
    ("LVM2 physical volume (\"LABELONE\")", 512, b"LABELONE"),
    ("LVM2 physical volume (\"LABELONE\")", 1024, b"LABELONE"),
    ("LVM2 physical volume (\"LABELONE\")", 1536, b"LABELONE"),
    ("LUKS encrypted volume", 0, b"LUKS\xba\xbe"),
    (
        "LUKS2 encrypted volume (secondary header)",
        16384,
        b"SKUL\xba\xbe",
    ),
    ("XFS filesystem (\"XFSB\")", 0, b"XFSB"),
    ("btrfs filesystem (\"_BHRfS_M\")", 65600, b"_BHRfS_M"),
    ("swap area (\"SWAPSPACE2\")", 4086, b"SWAPSPACE2"),
    ("swap area (\"SWAPSPACE2\")", 8182, b"SWAPSPACE2"),
    ("swap area (\"SWAPSPACE2\")", 16374, b"SWAPSPACE2"),
    ("swap area (\"SWAPSPACE2\")", 65526, b"SWAPSPACE2"),
    ("swap area (\"SWAP-SPACE\")", 4086, b"SWAP-SPACE"),
    (
        "Linux md RAID (v1.1 superblock)",
        0,
        &[0xfc, 0x4e, 0x2b, 0xa9],
    ),
    (
        "Linux md RAID (v1.2 superblock)",
        4096,
        &[0xfc, 0x4e, 0x2b, 0xa9],
    ),
    (
        "bcache",
        4120,
        &[0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca],
    ),
    ("F2FS filesystem", 1024, &[0x10, 0x20, 0xf5, 0xf2]),
    ("EROFS filesystem", 1024, &[0xe2, 0xe1, 0xf5, 0xe0]),
    ("squashfs filesystem (\"hsqs\")", 0, b"hsqs"),
    ("NTFS filesystem", 3, b"NTFS    "),
    ("exFAT filesystem", 3, b"EXFAT   "),
    ("FAT32 filesystem", 82, b"FAT32   "),
    ("FAT12/16 filesystem", 54, b"FAT1"),
    ("ISO 9660 filesystem (\"CD001\")", 32769, b"CD001"),
    ("JFS filesystem (\"JFS1\")", 32768, b"JFS1"),
    ("ReiserFS filesystem", 65588, b"ReIsEr"),
    ("ext2/3/4 filesystem (magic 0xEF53)", 1080, &[0x53, 0xef]),
    (
        "DOS/MBR partition table or boot sector (0x55AA)",
        510,
        &[0x55, 0xaa],
    ),
];

/// Look for a partition table or filesystem signature in the first bytes of
/// a device (`head` may be shorter than [`PROBE_BYTES`]: a short device).
pub fn detect_signature(head: &[u8]) -> Option<Signature> {
    MAGICS.iter().find_map(|&(name, off, magic)| {
        (head.get(off..off + magic.len()) == Some(magic)).then_some(Signature {
            name,
            offset: off as u64,
        })
    })
}

/// Why blkqos refuses to write to a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The device is mounted.
    Mounted {
        /// The device (`MAJ:MIN`).
        dev: DevId,
        /// Where it is mounted, from the mount tables.
        mountpoints: Vec<String>,
    },
    /// The device is an active swap area.
    Swap {
        /// The device (`MAJ:MIN`).
        dev: DevId,
    },
    /// Another device is built on this one (dm, md, LVM, bcache...).
    Held {
        /// The device (`MAJ:MIN`).
        dev: DevId,
        /// Names of the devices built on it (`holders/` in sysfs), sorted.
        holders: Vec<String>,
    },
    /// The device has partitions.
    Partitioned {
        /// The device (`MAJ:MIN`).
        dev: DevId,
        /// Names of its partitions (sysfs), sorted.
        partitions: Vec<String>,
    },
    /// A partition table or filesystem signature is on the device.
    Signature(Signature),
    /// `open(O_EXCL)` failed with EBUSY: the kernel has claimed the device.
    Busy {
        /// The device (`MAJ:MIN`).
        dev: DevId,
    },
    /// An existing regular file blkqos did not create or lay out.
    ExistingFile {
        /// The file's size in bytes.
        size: u64,
    },
    /// An existing file blkqos did not lay out is smaller than the job needs:
    /// laying it out would write to it.
    WouldExtend {
        /// The file's size in bytes.
        size: u64,
        /// Bytes the jobs address ([`crate::EngineOptions::size_needed`]).
        needed: u64,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DESTRUCTIVE: &str = "pass --allow-destructive to write anyway";
        match self {
            Refusal::Mounted { dev, mountpoints } => write!(
                f,
                "block device {dev} is mounted on `{}` (unmount it first)",
                mountpoints.join("`, `")
            ),
            Refusal::Swap { dev } => write!(
                f,
                "block device {dev} is an active swap area (/proc/swaps; swapoff it first)"
            ),
            Refusal::Held { dev, holders } => write!(
                f,
                "block device {dev} is used by {} (/sys/dev/block/{dev}/holders); remove those first",
                holders.join(", ")
            ),
            Refusal::Partitioned { dev, partitions } => write!(
                f,
                "block device {dev} has partitions ({}); {DESTRUCTIVE}",
                partitions.join(", ")
            ),
            Refusal::Signature(s) => write!(f, "the device carries a {s}; {DESTRUCTIVE}"),
            Refusal::Busy { dev } => write!(
                f,
                "the kernel reports block device {dev} busy (open O_EXCL: EBUSY): it is mounted, \
                 an active swap area or claimed by another driver"
            ),
            Refusal::ExistingFile { size } => write!(
                f,
                "it is an existing file ({size} bytes) that blkqos did not create or lay out \
                 (no `user.blkqos.layout` xattr); pass --overwrite to write to it"
            ),
            Refusal::WouldExtend { size, needed } => write!(
                f,
                "it is an existing file ({size} bytes) that blkqos did not lay out, smaller than \
                 the {needed} bytes the job needs: laying it out would write to it; pass \
                 --overwrite, or make the job fit"
            ),
        }
    }
}

/// Unescape the octal escapes (`\040` = space) of /proc mount tables.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn rdev_of(path: &str) -> Option<DevId> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    if !m.file_type().is_block_device() {
        return None;
    }
    let (major, minor) = crate::sys::split_dev(m.rdev());
    Some(DevId { major, minor })
}

/// Where `dev` is mounted (empty if nowhere): by `MAJ:MIN` in
/// `/proc/self/mountinfo`, and by the `st_rdev` of the block-device sources
/// listed in `/proc/self/mounts` and `/proc/mounts` (which also catches
/// filesystems such as btrfs that report an anonymous device number in
/// mountinfo). In table order, without duplicates.
pub fn mountpoints_of(dev: DevId) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |m: String| {
        if !out.contains(&m) {
            out.push(m);
        }
    };
    let want = format!("{}:{}", dev.major, dev.minor);
    if let Ok(s) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in s.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 4 && f[2] == want {
                add(unescape(f[4]));
            }
        }
    }
    for table in ["/proc/self/mounts", "/proc/mounts"] {
        let Ok(s) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in s.lines() {
            let mut f = line.split_whitespace();
            let (Some(src), Some(mnt)) = (f.next(), f.next()) else {
                continue;
            };
            if src.starts_with('/') && rdev_of(&unescape(src)) == Some(dev) {
                add(unescape(mnt));
            }
        }
    }
    out
}

/// Is `dev` an active swap area (`/proc/swaps`)?
pub fn is_swap(dev: DevId) -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/swaps") else {
        return false;
    };
    s.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .any(|p| rdev_of(&unescape(p)) == Some(dev))
}

fn sysfs_dir(dev: DevId) -> std::path::PathBuf {
    Path::new("/sys/dev/block").join(format!("{}:{}", dev.major, dev.minor))
}

/// Devices built on `dev` (`/sys/dev/block/MAJ:MIN/holders/`).
pub fn holders_of(dev: DevId) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sysfs_dir(dev).join("holders"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Partitions of `dev` (sysfs subdirectories that have a `partition` file).
pub fn partitions_of(dev: DevId) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sysfs_dir(dev))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().join("partition").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every check of a block device before writing, except the signature
/// probe (which needs the device's first bytes: [`detect_signature`]).
pub fn check_block_device_use(dev: DevId) -> Result<(), Refusal> {
    let mountpoints = mountpoints_of(dev);
    if !mountpoints.is_empty() {
        return Err(Refusal::Mounted { dev, mountpoints });
    }
    if is_swap(dev) {
        return Err(Refusal::Swap { dev });
    }
    let holders = holders_of(dev);
    if !holders.is_empty() {
        return Err(Refusal::Held { dev, holders });
    }
    let partitions = partitions_of(dev);
    if !partitions.is_empty() {
        return Err(Refusal::Partitioned { dev, partitions });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(off: usize, magic: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; PROBE_BYTES];
        b[off..off + magic.len()].copy_from_slice(magic);
        b
    }

    #[test]
    fn detects_each_signature_on_crafted_buffers() {
        let cases: &[(usize, &[u8], &str)] = &[
            (510, &[0x55, 0xaa], "DOS/MBR"),
            (512, b"EFI PART", "GPT"),
            (4096, b"EFI PART", "GPT"),
            (1080, &[0x53, 0xef], "ext2/3/4"),
            (0, b"XFSB", "XFS"),
            (65600, b"_BHRfS_M", "btrfs"),
            (512, b"LABELONE", "LVM2"),
            (4086, b"SWAPSPACE2", "swap"),
            (65526, b"SWAPSPACE2", "swap"),
            (0, b"LUKS\xba\xbe", "LUKS"),
            (4096, &[0xfc, 0x4e, 0x2b, 0xa9], "md RAID"),
            (3, b"NTFS    ", "NTFS"),
            (32769, b"CD001", "ISO 9660"),
        ];
        for &(off, magic, name) in cases {
            let s = detect_signature(&with(off, magic)).expect(name);
            assert!(s.name.contains(name), "{name}: got {s}");
            assert_eq!(s.offset, off as u64, "{name}");
        }
    }

    #[test]
    fn gpt_wins_over_its_protective_mbr() {
        let mut b = with(510, &[0x55, 0xaa]);
        b[512..520].copy_from_slice(b"EFI PART");
        assert!(detect_signature(&b).unwrap().name.starts_with("GPT"));
    }

    #[test]
    fn clean_and_short_heads_have_no_signature() {
        assert_eq!(detect_signature(&vec![0u8; PROBE_BYTES]), None);
        assert_eq!(detect_signature(&[]), None);
        // a short device: magic beyond its end cannot match
        assert_eq!(detect_signature(&[0u8; 600]), None);
        assert!(detect_signature(&with(510, &[0x55, 0xaa])[..512]).is_some());
        // a near miss
        assert_eq!(detect_signature(&with(1080, &[0x53, 0xee])), None);
        assert_eq!(detect_signature(&with(65600, b"_BHRfS_X")), None);
    }

    #[test]
    fn blkqos_own_pattern_has_no_signature() {
        // a device blkqos wrote its pattern to must stay writable
        let mut b = vec![0u8; PROBE_BYTES];
        crate::pattern::fill(&mut b, 0);
        assert_eq!(detect_signature(&b), None);
    }

    #[test]
    fn unescapes_mount_paths() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/x\\"), "/x\\");
    }

    #[test]
    fn root_filesystem_device_is_mounted() {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata("/").unwrap();
        let (major, minor) = crate::sys::split_dev(m.dev());
        let dev = DevId { major, minor };
        let mps = mountpoints_of(dev);
        assert!(
            mps.iter().any(|m| m == "/"),
            "device {dev} of / must be reported mounted on /: {mps:?}"
        );
        let r = check_block_device_use(dev).unwrap_err();
        assert!(matches!(r, Refusal::Mounted { .. }), "{r}");
        assert!(r.to_string().contains("is mounted on `"), "{r}");
    }

    #[test]
    fn unused_device_number_passes_use_checks() {
        // major 0 minor 0xfffff: never a real device
        let dev = DevId {
            major: 0,
            minor: 0xfffff,
        };
        assert!(mountpoints_of(dev).is_empty());
        assert!(check_block_device_use(dev).is_ok());
    }
}
