//! placeholder

pub mod report;
pub use report::{write_json, write_normal, DiskUtil, ReportInput, ReportJob};

pub mod parse;
pub use parse::{
    parse_fio_args, parse_job_file, parse_job_files, showcmd, to_fio_args, CliParse, JobSet,
    OutputFormat, ParseError,
};
