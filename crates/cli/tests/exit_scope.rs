//! `exitall` acts within one fio process: in a scenario each `[[fio]]`
//! entry is a fio of its own, so a job ending with `exitall` in one does
//! not stop the jobs of another (fio's `exitall_on_terminate` is a global
//! of its process).

mod common;

use common::{blkqos, num, write_file};

#[test]
fn exitall_stops_only_its_own_fio() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |exitall_in_b: bool| {
        format!(
            "[device]\nmodel = \"null\"\nsize = \"64m\"\n\n\
             [[fio]]\njob = \"\"\"\n[a]\nfilename=/dev/nullb0\nrw=read\nbs=4k\nnumber_ios=10\nexitall\n\"\"\"\n\
             output = \"a.json\"\noutput_format = \"json\"\n\n\
             [[fio]]\njob = \"\"\"\n[b]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\ntime_based\nruntime=2\n\
             [b2]\nfilename=/dev/nullb0\nrw=read\nbs=4k\nnumber_ios=10\n{}\n\"\"\"\n\
             output = \"b.json\"\noutput_format = \"json\"\n",
            if exitall_in_b { "exitall" } else { "" }
        )
    };
    let runtime_of_b = |text: String| {
        let f = write_file(dir.path(), "s.toml", &text);
        blkqos(&["run", f.to_str().unwrap()], Some(dir.path())).ok();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("b.json")).unwrap())
                .unwrap();
        num(&doc["jobs"][0], "/job_runtime")
    };
    assert_eq!(
        runtime_of_b(scenario(false)),
        2000.0,
        "a's exitall stops nothing in the other fio"
    );
    assert!(
        runtime_of_b(scenario(true)) < 1000.0,
        "b2's exitall stops b, in its own fio"
    );
}
