//! fio's IO engines blkqos does not run, with what each is and what to use
//! instead: the refusal names the engine and the way forward.

/// What kind of engine `name` is, and what to run instead.
fn category(name: &str) -> (&'static str, &'static str) {
    const BLOCK: &str =
        "run the job on a file or block device with ioengine=libaio, io_uring, psync or sync";
    match name {
        "net" | "netsplice" | "rdma" | "nbd" | "http" | "rbd" | "rados" | "gfapi"
        | "gfapi_async" | "libhdfs" | "nfs" | "dfs" | "libiscsi" | "ime_psync" | "ime_psyncv"
        | "ime_aio" | "spdk" => ("network or distributed storage", BLOCK),
        "libcufile" | "libhipfile" | "cufile" => ("GPU memory transfers", BLOCK),
        "mmap" | "splice" => (
            "memory-mapped IO",
            "use ioengine=libpmem (a shared mapping of the file, real engine) or one of the \
             block engines: run the job on a file or block device with ioengine=libaio, \
             io_uring, psync or sync",
        ),
        "pmemblk" => (
            "persistent memory blocks by libpmemblk (a pool file), not implemented",
            "use ioengine=libpmem on a file (real engine), or psync or libaio on a block \
             device",
        ),
        "mtd" => (
            "MTD flash by libmtd (no block layer), not implemented",
            "use ioengine=psync or libaio on a block device",
        ),
        "xnvme" | "libblkio" | "binject" => (
            "a userspace or passthrough command interface",
            "use ioengine=io_uring_cmd (simulator) or io_uring or libaio on the block device",
        ),
        "windowsaio" | "solarisaio" | "vsync" | "guasi" => ("another platform's API", BLOCK),
        _ => ("not one blkqos implements", BLOCK),
    }
}

/// The refusal of `ioengine=name` (also `external:path` and `cpp_null`,
/// engines loaded from a shared object).
pub(crate) fn out_of_scope(name: &str) -> String {
    let base = name.split(':').next().unwrap_or(name);
    let (what, instead) = if base == "external" || base.ends_with("_null") || base == "null" {
        (
            "an engine loaded from a shared object",
            "use ioengine=null for no-IO runs, or libaio/io_uring/psync on a file or device",
        )
    } else {
        category(base)
    };
    format!(
        "unsupported ioengine `{name}` ({what}): blkqos runs null, sync, psync, pvsync, pvsync2, \
         posixaio, libaio and io_uring, on the simulator io_uring_cmd, sg and libzbc, on the \
         real engine filecreate, filestat, filedelete, dircreate, dirstat, dirdelete, falloc, \
         ftruncate, e4defrag, cpuio, exec, libpmem, dev-dax and page_fault; {instead}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_engine_and_the_way_forward() {
        let m = out_of_scope("rbd");
        assert!(
            m.contains("`rbd`") && m.contains("network") && m.contains("libaio"),
            "{m}"
        );
        let m = out_of_scope("cpp_null");
        assert!(m.contains("shared object"), "{m}");
        let m = out_of_scope("mtd");
        assert!(
            m.contains("MTD") && m.contains("io_uring_cmd, sg and libzbc"),
            "{m}"
        );
        let m = out_of_scope("pmemblk");
        assert!(
            m.contains("persistent memory") && m.contains("libpmem"),
            "{m}"
        );
        let m = out_of_scope("mmap");
        assert!(m.contains("memory-mapped") && m.contains("libpmem"), "{m}");
    }
}
