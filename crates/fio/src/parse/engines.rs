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
        "cpuio" | "exec" => (
            "CPU burner or external program, no block IO",
            "blkqos models block IO only; leave such jobs out",
        ),
        "filecreate" | "filestat" | "filedelete" | "dircreate" | "dirstat" | "dirdelete"
        | "ftruncate" | "falloc" | "e4defrag" => (
            "file system metadata operations",
            "blkqos models data IO; use rw= with ioengine=psync or libaio for IO on the files",
        ),
        "mmap" | "page_fault" | "dev-dax" | "libpmem" | "pmemblk" | "splice" => {
            ("memory-mapped or persistent-memory IO", BLOCK)
        }
        "sg" | "io_uring_cmd" | "libzbc" | "mtd" | "xnvme" | "libblkio" | "binject" => (
            "passthrough command interface",
            "use ioengine=io_uring or libaio on the block device",
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
         posixaio, libaio and io_uring; {instead}"
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
        let m = out_of_scope("cpuio");
        assert!(m.contains("no block IO"), "{m}");
        let m = out_of_scope("cpp_null");
        assert!(m.contains("shared object"), "{m}");
        let m = out_of_scope("filecreate");
        assert!(m.contains("metadata"), "{m}");
    }
}
