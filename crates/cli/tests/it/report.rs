//! `blkqos report` and `blkqos run --report`: the HTML report of a
//! simulated iocost run (lab/matrix/c01-weights-flat.toml) and io.max run
//! (lab/matrix/t06-two-groups.toml) has every chart with its data drawn,
//! totals that equal the time series' and fio's, the same bytes every run
//! and from memory as from the files; a sweep's report has the frontier
//! and the points; bad input exits 2 naming the file and line; and the
//! page renders in a real headless Chromium with every chart visibly drawn
//! (skipped when Chromium is missing, unless BLKQOS_REQUIRE_CHROMIUM=1).

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn lab(name: &str) -> String {
    format!("{}/../../lab/matrix/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A chart of the page: its id and its `<svg>` text.
struct Fig {
    id: String,
    svg: String,
}

fn figures(html: &str) -> Vec<Fig> {
    html.split("<figure class=\"chart\" id=\"")
        .skip(1)
        .map(|f| {
            let (id, rest) = f.split_once('"').unwrap();
            let body = rest.split("</figure>").next().unwrap();
            let svg = &body[body.find("<svg").expect("an svg in the figure")..];
            Fig {
                id: id.to_string(),
                svg: svg[..svg.find("</svg>").expect("svg closed") + 6].to_string(),
            }
        })
        .collect()
}

/// Points of the longest polyline (a data line; axes have 2 points).
fn longest_polyline(svg: &str) -> usize {
    svg.lines()
        .filter(|l| l.starts_with("<polyline"))
        .map(|l| {
            let pts = l.split("points=\"").nth(1).unwrap_or("");
            pts.split('"').next().unwrap().split_whitespace().count()
        })
        .max()
        .unwrap_or(0)
}

/// The numeric cells of the totals row of `cgroup`.
fn totals_row(html: &str, cgroup: &str) -> Vec<f64> {
    let start = html
        .find(&format!("<tr data-cgroup=\"{cgroup}\">"))
        .unwrap_or_else(|| panic!("no totals row for {cgroup}"));
    let row = &html[start..start + html[start..].find("</tr>").unwrap()];
    row.split("<td class=\"num\">")
        .skip(1)
        .map(|c| {
            let v = c.split('<').next().unwrap();
            if v == "-" {
                f64::NAN
            } else {
                v.parse().unwrap()
            }
        })
        .collect()
}

fn read_lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sum_ios(lines: &[Value], cgroup: &str, dir: usize) -> u64 {
    lines
        .iter()
        .flat_map(|b| b["cgroups"].as_array().unwrap().iter())
        .filter(|c| c["cgroup"] == cgroup)
        .map(|c| c["ios"][dir].as_u64().unwrap())
        .sum()
}

/// The fio report's read IOs of job `name`.
fn fio_read_ios(r: &Ran, name: &str) -> u64 {
    r.json_docs()
        .iter()
        .flat_map(|d| d["jobs"].as_array().unwrap().clone())
        .filter(|j| j["jobname"] == name)
        .map(|j| j["read"]["total_ios"].as_u64().unwrap())
        .sum()
}

/// `blkqos run SCENARIO --live-json --iocost-trace --report` in `dir`,
/// then `blkqos report` over the files: (run, report from memory, from files).
fn run_and_report(dir: &Path, scenario: &str) -> (Ran, String, String) {
    let r = blkqos(
        &[
            "run",
            scenario,
            "--live-json=live.jsonl",
            "--iocost-trace=trace.jsonl",
            "--report=run.html",
            "--output-format=json",
        ],
        Some(dir),
    );
    r.ok();
    blkqos(
        &[
            "report",
            "--timeseries=live.jsonl",
            "--iocost-trace=trace.jsonl",
            "-o",
            "files.html",
        ],
        Some(dir),
    )
    .ok();
    let mem = std::fs::read_to_string(dir.join("run.html")).unwrap();
    let files = std::fs::read_to_string(dir.join("files.html")).unwrap();
    (r, mem, files)
}

/// The page after its header (title and sources differ by design).
fn body(html: &str) -> &str {
    &html[html.find("</dl>").expect("header list")..]
}

/// Every chart the report has, with a drawn line of at least `min` points.
fn assert_charts(html: &str, want: &[(&str, usize)]) {
    let figs = figures(html);
    let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
    for (id, min) in want {
        let f = figs
            .iter()
            .find(|f| f.id == *id)
            .unwrap_or_else(|| panic!("no chart {id}; charts: {ids:?}"));
        let n = longest_polyline(&f.svg);
        assert!(
            n >= *min,
            "{id}: longest line has {n} points, want >= {min}"
        );
    }
    for f in &figs {
        assert!(
            longest_polyline(&f.svg) >= 3 || f.svg.matches("<circle").count() >= 3,
            "{}: nothing drawn",
            f.id
        );
        assert!(f.svg.contains("<text"), "{}: no labels", f.id);
    }
    assert!(!html.contains("<script"), "no JavaScript");
    for fetch in ["src=", "href=", "url(", "<link", "@import"] {
        assert!(!html.contains(fetch), "nothing fetched: {fetch}");
    }
}

#[test]
fn iocost_run_report_has_every_chart_and_the_run_totals() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mem, files) = run_and_report(dir.path(), &lab("c01-weights-flat.toml"));
    assert_charts(
        &mem,
        &[
            ("chart-iops", 5),
            ("chart-bandwidth", 5),
            ("chart-latency", 5),
            ("chart-device-latency", 5),
            // whole-run CDF: a point per non-empty histogram bucket
            ("chart-cdf", 50),
            ("chart-util", 5),
            ("chart-waits", 5),
            // per iocost period from the trace (500 ms periods, 5 s)
            ("chart-iocost-vrate", 9),
            ("chart-iocost-busy", 9),
            ("chart-iocost-hweight", 9),
        ],
    );
    assert!(
        !mem.contains("id=\"chart-held\""),
        "io.max held nothing here"
    );
    let lines = read_lines(&dir.path().join("live.jsonl"));
    for (g, job) in [("/a", "a"), ("/b", "b")] {
        let row = totals_row(&mem, g);
        let ios = sum_ios(&lines, g, 0);
        assert_eq!(row[0] as u64, ios, "{g} read IOs in the table");
        assert_eq!(ios, fio_read_ios(&r, job), "{g}: time series vs fio");
        // p99 (ms) is the run summary's
        let run = &lines.last().unwrap()["run"]["cgroups"];
        let p99 = run
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cgroup"] == g)
            .unwrap()["latency_ns_percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0].as_f64() == Some(99.0))
            .unwrap()[1]
            .as_f64()
            .unwrap();
        assert!(
            (row[7] - p99 / 1e6).abs() < 0.001,
            "{g} p99 {} vs {p99}",
            row[7]
        );
    }
    // 100:400 weights: the table's IOPS of /b about 4x /a's... of the device
    // total; the device row sums the cgroups
    let dev = totals_row(&mem, "nullb1 (device)");
    assert_eq!(
        dev[0],
        totals_row(&mem, "/a")[0] + totals_row(&mem, "/b")[0]
    );
    assert_eq!(body(&mem), body(&files), "from memory = from the files");
    // deterministic: the same bytes again
    let again = tempfile::tempdir().unwrap();
    let (_, mem2, _) = run_and_report(again.path(), &lab("c01-weights-flat.toml"));
    assert_eq!(
        mem, mem2,
        "a simulated run's report is the same bytes every time"
    );
}

#[test]
fn io_max_run_report_shows_held_ios_and_no_iocost() {
    let dir = tempfile::tempdir().unwrap();
    let r = blkqos(
        &[
            "run",
            &lab("t06-two-groups.toml"),
            "--report=run.html",
            "--output-format=json",
        ],
        Some(dir.path()),
    );
    r.ok();
    let html = std::fs::read_to_string(dir.path().join("run.html")).unwrap();
    assert_charts(
        &html,
        &[
            ("chart-iops", 5),
            ("chart-held", 5),
            ("chart-held-wait", 5),
            ("chart-waits", 5),
            ("chart-util", 5),
            // io.max's 100 ms slices: a few latency steps per cgroup
            ("chart-cdf", 6),
        ],
    );
    assert!(!html.contains("chart-iocost"), "iocost was off");
    for (g, job, iops) in [("/a", "a", 200.0), ("/b", "b", 50.0)] {
        let row = totals_row(&html, g);
        assert_eq!(row[0] as u64, fio_read_ios(&r, job), "{g}");
        assert_within(&format!("{g} IOPS in the table"), row[4], iops, 6.0);
    }
}

#[test]
fn sweep_report_has_the_frontier_and_the_chosen_point() {
    let dir = tempfile::tempdir().unwrap();
    let r = blkqos(
        &[
            "sweep",
            &example("sweep/iocost-two-groups.toml")
                .display()
                .to_string(),
            "--vary",
            "io.cost.qos:rlat=500,1000,2000,4000,8000,16000",
            "--objective",
            "max total_bw_mbps subject to /cgB.clat_p99_ms<=5",
            "--json",
            "--out=sweep.json",
        ],
        Some(dir.path()),
    );
    r.ok();
    blkqos(
        &["report", "--sweep=sweep.json", "-o", "s.html"],
        Some(dir.path()),
    )
    .ok();
    let html = std::fs::read_to_string(dir.path().join("s.html")).unwrap();
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap())
            .unwrap();
    let figs = figures(&html);
    let f = figs
        .iter()
        .find(|f| f.id == "chart-sweep-frontier")
        .expect("the frontier chart");
    // a marker per point (6), legend markers, and the chosen point's ring
    assert!(f.svg.matches("<circle").count() >= 6, "{}", f.svg.len());
    let frontier = j["frontier"].as_array().unwrap().len();
    assert!(longest_polyline(&f.svg) >= frontier.min(2));
    let chosen = j["solution"]["point"].as_u64().unwrap();
    assert!(f.svg.contains(&format!("chosen: point {chosen}")));
    // axis titles with their units, and the objective's limit drawn
    for text in [
        "\ntotal bandwidth (MB/s)\n",
        "/cgB completion latency p99 (ms)",
        "limit: /cgB.clat_p99_ms &lt;= 5",
    ] {
        assert!(f.svg.contains(text), "{text}");
    }
    assert!(
        !f.svg.contains("total_bw_mbps\n"),
        "raw key as an axis title"
    );
    assert!(html.contains(&format!(
        "<tr class=\"chosen\"><td class=\"num\">{chosen}</td>"
    )));
    let rows = html.split("id=\"sweep-points\"").nth(1).unwrap();
    let rows = rows
        .split("</table>")
        .next()
        .unwrap()
        .matches("<tr")
        .count();
    assert_eq!(
        rows,
        1 + j["points"].as_array().unwrap().len(),
        "header + a row per point"
    );
}

#[test]
fn bad_input_exits_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = |args: &[&str], needles: &[&str]| {
        let r = blkqos(args, Some(d));
        assert_no_panic(&r);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        for n in needles {
            assert!(r.stderr.contains(n), "{args:?}: want {n:?} in {}", r.stderr);
        }
    };
    bad(
        &["report", "--timeseries=missing.jsonl", "-o", "x.html"],
        &["cannot read missing.jsonl"],
    );
    assert!(!d.join("x.html").exists(), "no report left behind");
    std::fs::write(
        d.join("bad.jsonl"),
        "{\"t_ns\":1,\"interval_ns\":1,\"iocost\":null,\"cgroups\":[]}\n{\"t_ns\": oops}\n",
    )
    .unwrap();
    bad(
        &["report", "--timeseries=bad.jsonl", "-o", "x.html"],
        &["bad.jsonl:2: not a blkqos time series line"],
    );
    std::fs::write(d.join("t.txt"), "nullb1 0.5 RUN\n").unwrap();
    bad(
        &["report", "--iocost-trace=t.txt", "-o", "x.html"],
        &["t.txt:1: not a JSON line"],
    );
    std::fs::write(d.join("s.json"), "{\"points\": []}").unwrap();
    bad(
        &["report", "--sweep=s.json", "-o", "x.html"],
        &["s.json:1: not a sweep report"],
    );
    bad(&["report", "-o", "x.html"], &["nothing to report"]);
    // an output that cannot be written: refused before any work
    bad(
        &[
            "report",
            "--timeseries=missing.jsonl",
            "-o",
            "no/such/dir/x.html",
        ],
        &["cannot write no/such/dir/x.html"],
    );
    let r = blkqos(
        &[
            "run",
            &lab("t06-two-groups.toml"),
            "--report=no/such/dir/r.html",
            "--live=1",
        ],
        Some(d),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot write no/such/dir/r.html"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("live t="), "refused before the run");
    bad(
        &["run", "--name=j", "--rw=read", "--size=1m", "--report="],
        &["--report", "expected a file name"],
    );
}

// ---- headless Chromium ----

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Run Chromium headless on `url` with `args`: (stdout, stderr).
fn chromium_run(bin: &str, dir: &Path, args: &[String]) -> (String, String) {
    let mut cmd = std::process::Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", dir.join("profile").display()))
    .args(args)
    .env("HOME", dir)
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let r = run_bounded(cmd, std::time::Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "chromium failed: {}", r.stderr);
    (r.stdout_str(), r.stderr)
}

/// Console messages and page errors Chromium logged.
fn page_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Not allowed to load")
        })
        .collect()
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var("BLKQOS_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1") {
            panic!("BLKQOS_REQUIRE_CHROMIUM=1 but no chromium on PATH");
        }
        blkqos_testkit::skip(
            blkqos_testkit::Reason::Chromium,
            "no chromium on PATH (apt-get install chromium)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // one page with every kind of chart: a run with iocost, and a sweep
    blkqos(
        &[
            "run",
            &lab("c01-weights-flat.toml"),
            "--live-json=live.jsonl",
            "--iocost-trace=trace.jsonl",
            "--output-format=terse",
        ],
        Some(d),
    )
    .ok();
    blkqos(
        &[
            "sweep",
            &example("sweep/iocost-two-groups.toml")
                .display()
                .to_string(),
            "--vary",
            "io.cost.qos:rlat=500,2000,8000",
            "--objective",
            "max total_bw_mbps subject to /cgB.clat_p99_ms<=5",
            "--json",
            "--out=sweep.json",
        ],
        Some(d),
    )
    .ok();
    blkqos(
        &[
            "report",
            "--timeseries=live.jsonl",
            "--iocost-trace=trace.jsonl",
            "--sweep=sweep.json",
            "-o",
            "all.html",
        ],
        Some(d),
    )
    .ok();
    let page = d.join("all.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let n_figs = figures(&html).len();
    assert!(n_figs >= 11, "{n_figs} charts");
    assert!(html.contains("id=\"chart-sweep-frontier\""));
    let url = format!("file://{}", page.display());

    // the DOM Chromium built: every chart's svg, with its lines
    let (dom, err) = chromium_run(bin, d, &["--dump-dom".into(), url.clone()]);
    assert!(
        page_errors(&err).is_empty(),
        "page errors: {:?}",
        page_errors(&err)
    );
    let dom_figs = figures(&dom);
    assert_eq!(dom_figs.len(), n_figs, "every chart in the rendered DOM");
    for f in &dom_figs {
        assert!(
            f.svg.contains("<polyline") && f.svg.contains("<text"),
            "{}: no lines or labels in the DOM",
            f.id
        );
    }

    // the screenshot: the whole page, then every chart's box must hold
    // coloured (data) pixels
    let height = 900 + 420 * n_figs;
    let shot = d.join("shot.png");
    let (_, err) = chromium_run(
        bin,
        d,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size=1200,{height}"),
            url,
        ],
    );
    assert!(
        page_errors(&err).is_empty(),
        "page errors: {:?}",
        page_errors(&err)
    );
    let img = Png::read(&shot);
    assert_eq!(img.width, 1200);
    let boxes = img.figure_boxes();
    assert_eq!(
        boxes.len(),
        n_figs,
        "chart boxes found in the screenshot: {boxes:?}"
    );
    for (k, &(top, bottom)) in boxes.iter().enumerate() {
        assert!(bottom - top > 250, "chart {k} is {} px tall", bottom - top);
        let coloured = img.coloured_pixels(top, bottom);
        eprintln!(
            "chart {k} {} rows {top}..{bottom}: {coloured} coloured pixels",
            dom_figs[k].id
        );
        assert!(
            // a legend entry alone is ~40 coloured pixels; a drawn line
            // hundreds to thousands
            coloured > 400,
            "chart {k} ({}) at rows {top}..{bottom}: {coloured} coloured pixels: empty",
            dom_figs[k].id
        );
    }
    // and outside the charts the page is not blank either (title, table)
    assert!(
        img.dark_pixels(0, boxes[0].0) > 1000,
        "no text above the charts"
    );
}

/// An RGB(A) screenshot.
struct Png {
    width: usize,
    height: usize,
    /// RGB per pixel.
    rgb: Vec<[u8; 3]>,
}

impl Png {
    fn read(path: &Path) -> Png {
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = dec.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let ch = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            c => panic!("screenshot colour type {c:?}"),
        };
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        let rgb = buf[..info.buffer_size()]
            .chunks(ch)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Png {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        self.rgb[y * self.width + x]
    }

    /// The figures' boxes (1px #dddddd border, docs: report CSS): the
    /// column holding most border pixels is their left edge; its runs of
    /// border pixels are the boxes (top, bottom rows).
    fn figure_boxes(&self) -> Vec<(usize, usize)> {
        let border = [0xdd, 0xdd, 0xdd];
        let x = (0..self.width / 4)
            .max_by_key(|&x| {
                (0..self.height)
                    .filter(|&y| self.at(x, y) == border)
                    .count()
            })
            .unwrap();
        let mut boxes = Vec::new();
        let mut start = None;
        for y in 0..=self.height {
            let on = y < self.height && self.at(x, y) == border;
            match (on, start) {
                (true, None) => start = Some(y),
                (false, Some(s)) => {
                    if y - s > 50 {
                        boxes.push((s, y));
                    }
                    start = None;
                }
                _ => {}
            }
        }
        boxes
    }

    /// Saturated pixels (the data lines' colours; text and grid are grey).
    fn coloured_pixels(&self, top: usize, bottom: usize) -> usize {
        (top..bottom)
            .flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let [r, g, b] = self.at(x, y);
                let max = r.max(g).max(b);
                let min = r.min(g).min(b);
                max - min > 80
            })
            .count()
    }

    fn dark_pixels(&self, top: usize, bottom: usize) -> usize {
        (top..bottom)
            .flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .filter(|&(x, y)| self.at(x, y).iter().all(|&c| c < 100))
            .count()
    }
}

/// A vrate sweep's report shows iocost-tune's named solutions: a table of
/// them, and on the chart one ring per point naming each solution there.
#[test]
fn a_vrate_sweeps_report_shows_the_named_solutions() {
    let dir = tempfile::tempdir().unwrap();
    blkqos(
        &[
            "sweep",
            &example("calibrate/two-groups.toml").display().to_string(),
            "--vary",
            "io.cost.qos:vrate=50..125:step:25",
            "--objective",
            "max total_bw_mbps subject to /cgB.clat_p99_ms<=5",
            "--json",
            "--out=tune.json",
        ],
        Some(dir.path()),
    )
    .ok();
    blkqos(
        &["report", "--sweep=tune.json", "-o", "t.html"],
        Some(dir.path()),
    )
    .ok();
    let html = std::fs::read_to_string(dir.path().join("t.html")).unwrap();
    let table = html
        .split("id=\"sweep-named\"")
        .nth(1)
        .expect("the named table");
    let table = table.split("</table>").next().unwrap();
    for name in ["isolation", "isolated-bandwidth", "bandwidth", "naive"] {
        assert!(
            table.contains(&format!("<td>{name}</td>")),
            "{name}: {table}"
        );
    }
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("tune.json")).unwrap())
            .unwrap();
    let naive = j["named_solutions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "naive")
        .unwrap()["point"]
        .as_u64()
        .unwrap();
    let figs = figures(&html);
    let f = figs
        .iter()
        .find(|f| f.id == "chart-sweep-frontier")
        .unwrap();
    assert!(
        f.svg.contains(&format!("naive: point {naive}")),
        "naive's ring"
    );
}
