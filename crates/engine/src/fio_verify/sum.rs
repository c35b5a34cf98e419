//! The checksum fields of fio's verify headers (fio 3.33 verify.c
//! `fill_*` / `verify_io_u_*`, verify.h `struct vhdr_*`), byte for byte as
//! fio lays them down on a little-endian host: each one from a maintained
//! crate, arranged as fio stores it.

use super::VerifyType;
use crc::{Algorithm, Crc, CRC_16_ARC, CRC_7_MMC};
use sha2::block_api::compress256;

/// fio crc/crc32.c `fio_crc32`: the POSIX `cksum` polynomial, MSB first,
/// starting from 0, without the length and without the final inversion.
const FIO_CRC32: Algorithm<u32> = Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89a1_897f,
    residue: 0,
};

/// fio crc/crc64.c `fio_crc64`: the Jones polynomial, reflected, from 0,
/// no final xor (CRC-64/REDIS).
const FIO_CRC64: Algorithm<u64> = crc::CRC_64_REDIS;

/// fio crc/crc32c.h `fio_crc32c`: CRC-32C from all ones, without the
/// final inversion (the standard CRC-32C, inverted).
pub fn fio_crc32c(data: &[u8]) -> u32 {
    !crc32c::crc32c(data)
}

/// Bytes of the checksum header after the 40-byte `struct verify_header`
/// (fio `__hdr_size` minus the common header).
pub fn field_len(t: VerifyType) -> usize {
    match t {
        VerifyType::Md5 => 16,
        VerifyType::Crc64 => 8,
        VerifyType::Crc32 | VerifyType::Crc32c | VerifyType::Crc32cIntel => 4,
        VerifyType::Crc16 => 2,
        VerifyType::Crc7 => 1,
        VerifyType::Sha256 => 64,
        VerifyType::Sha512 => 128,
        VerifyType::Sha3_224 => 28,
        VerifyType::Sha3_256 => 32,
        VerifyType::Sha3_384 => 48,
        VerifyType::Sha3_512 => 64,
        VerifyType::Xxhash => 4,
        VerifyType::Sha1 => 20,
        VerifyType::HdrOnly | VerifyType::Pattern | VerifyType::PatternNoHdr | VerifyType::Null => {
            0
        }
    }
}

/// fio's name of a checksum in its failure line (`vc->name`).
pub fn name(t: VerifyType) -> &'static str {
    match t {
        VerifyType::Md5 => "md5",
        VerifyType::Crc64 => "crc64",
        VerifyType::Crc32 => "crc32",
        VerifyType::Crc32c | VerifyType::Crc32cIntel => "crc32c",
        VerifyType::Crc16 => "crc16",
        VerifyType::Crc7 => "crc7",
        VerifyType::Sha256 => "sha256",
        VerifyType::Sha512 => "sha512",
        VerifyType::Sha3_224 => "sha3-224",
        VerifyType::Sha3_256 => "sha3-256",
        VerifyType::Sha3_384 => "sha3-384",
        VerifyType::Sha3_512 => "sha3-512",
        VerifyType::Xxhash => "xxhash",
        VerifyType::Sha1 => "sha1",
        _ => "pattern",
    }
}

/// The checksum field of `data` as fio stores it (`field_len(t)` bytes;
/// empty for the types without one).
pub fn compute(t: VerifyType, data: &[u8]) -> Vec<u8> {
    use sha3::Digest;
    match t {
        VerifyType::Md5 => md5::Md5::digest(data).to_vec(),
        VerifyType::Crc64 => Crc::<u64>::new(&FIO_CRC64)
            .checksum(data)
            .to_le_bytes()
            .to_vec(),
        VerifyType::Crc32 => Crc::<u32>::new(&FIO_CRC32)
            .checksum(data)
            .to_le_bytes()
            .to_vec(),
        VerifyType::Crc32c | VerifyType::Crc32cIntel => fio_crc32c(data).to_le_bytes().to_vec(),
        VerifyType::Crc16 => Crc::<u16>::new(&CRC_16_ARC)
            .checksum(data)
            .to_le_bytes()
            .to_vec(),
        VerifyType::Crc7 => vec![Crc::<u8>::new(&CRC_7_MMC).checksum(data)],
        VerifyType::Sha256 => fio_sha256(data).to_vec(),
        VerifyType::Sha512 => fio_sha512(data).to_vec(),
        VerifyType::Sha3_224 => sha3::Sha3_224::digest(data).to_vec(),
        VerifyType::Sha3_256 => sha3::Sha3_256::digest(data).to_vec(),
        VerifyType::Sha3_384 => sha3::Sha3_384::digest(data).to_vec(),
        VerifyType::Sha3_512 => sha3::Sha3_512::digest(data).to_vec(),
        VerifyType::Xxhash => xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes().to_vec(),
        VerifyType::Sha1 => {
            // fio keeps SHA-1's five state words in host order (`H[5]`)
            let d = sha1::Sha1::digest(data);
            d.chunks_exact(4)
                .flat_map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]).to_le_bytes())
                .collect()
        }
        _ => Vec::new(),
    }
}

/// fio 3.33's `sha256` field (crc/sha256.c `fio_sha256_update` and
/// `fio_sha256_final` into `vhdr_sha256`'s 64-byte buffer): SHA-256's
/// compression over the data, padded with 0x80 and zeros to 56 mod 64 and
/// the bit count appended little endian; the field is the last block
/// compressed, its first 8 bytes replaced by the low byte of each state
/// word (fio stores `buf[i] = state[i]`). Not a standard SHA-256: the
/// on-disk field fio writes and checks.
fn fio_sha256(data: &[u8]) -> [u8; 64] {
    let mut state: [u32; 8] = [
        0x6a09_e667,
        0xbb67_ae85,
        0x3c6e_f372,
        0xa54f_f53a,
        0x510e_527f,
        0x9b05_688c,
        0x1f83_d9ab,
        0x5be0_cd19,
    ];
    let full = data.len() / 64 * 64;
    let blocks: Vec<[u8; 64]> = data[..full]
        .chunks_exact(64)
        .map(|c| c.try_into().expect("64 bytes"))
        .collect();
    compress256(&mut state, &blocks);
    // the tail, padding and length, as fio_sha256_final feeds them
    let mut tail = data[full..].to_vec();
    let index = tail.len();
    let pad_len = if index < 56 {
        56 - index
    } else {
        64 + 56 - index
    };
    tail.push(0x80);
    tail.resize(index + pad_len, 0);
    tail.extend_from_slice(&((data.len() as u64) << 3).to_le_bytes());
    let last: Vec<[u8; 64]> = tail
        .chunks_exact(64)
        .map(|c| c.try_into().expect("64 bytes"))
        .collect();
    compress256(&mut state, &last);
    let mut buf = *last.last().expect("at least one block");
    for (b, s) in buf.iter_mut().zip(state) {
        *b = s as u8;
    }
    buf
}

/// fio 3.33's `sha512` field (verify.c `fill_sha512` and
/// `verify_io_u_sha512` call `fio_sha512_update` and never the final
/// step): the 128-byte block buffer the update leaves, which holds the
/// data's first block overwritten by its last `len % 128` bytes. fio
/// checks this buffer, not a digest; for data shorter than a block the
/// rest of the buffer is undefined in fio (zeros here).
fn fio_sha512(data: &[u8]) -> [u8; 128] {
    let mut buf = [0u8; 128];
    let first = data.len().min(128);
    buf[..first].copy_from_slice(&data[..first]);
    if data.len() >= 128 {
        let rem = (data.len() - 128) % 128;
        buf[..rem].copy_from_slice(&data[data.len() - rem..]);
    }
    buf
}
