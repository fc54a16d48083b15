use super::*;

/// Mean of `n` samples drawn from `cdf` with a fixed stream.
fn sampled_mean(cdf: &SizeCdf, n: u64) -> f64 {
    let mut rng = Rng::named(42, "cdf-test");
    (0..n).map(|_| cdf.sample(&mut rng) as f64).sum::<f64>() / n as f64
}

/// `(name, exact mean as sampled, max, samples for the check)`. The sample counts keep the standard error
/// of the sampled mean below about 0.8 % (Google RPC has a coefficient of variation of 22.6).
const EXPECTED: &[(&str, f64, u64, u64)] = &[
    // 1,711,250 B by the HPCC artifact's getAvg (interpolation); int() truncation takes off half a byte.
    ("websearch", 1_711_249.5, 30_000_000, 400_000),
    ("fb_hadoop", 120_420.25, 10_000_000, 1_000_000),
    ("alistorage", 40_869.30, 2_000_000, 1_000_000),
    ("google_rpc", 2_891.143, 15_158_197, 8_000_000),
    // 1744.70 packets stated; the points give 1744.704 packets x 1442 B.
    ("dctcp_homa", 2_515_863.255, 28_840_000, 400_000),
    ("hadoop_homa", 127_796.644, 10_000_000, 1_000_000),
    ("webserver", 62_874.268, 1_000_000, 400_000),
    ("cache_follower", 692_975.551, 3_837_698, 400_000),
    // 185.0 B stated; head 2.73 B + 0.53 x (15 + 329.07) B with HomaSimulation's rounding and 2^30 B cap.
    ("memcached", 185.088, 0x4000_0000, 1_000_000),
];

#[test]
fn builtin_means_match_the_published_figures_and_sampling() {
    assert_eq!(builtin_names().len(), EXPECTED.len());
    for &(name, mean, max, samples) in EXPECTED {
        let cdf = SizeCdf::builtin(name).unwrap();
        assert!((cdf.mean() - mean).abs() < 0.01, "{name}: mean {}", cdf.mean());
        assert_eq!(cdf.max(), max, "{name}");
        let sampled = sampled_mean(&cdf, samples);
        let error = (sampled - cdf.mean()).abs() / cdf.mean();
        assert!(error < 0.025, "{name}: sampled mean {sampled} vs {} ({:.2}%)", cdf.mean(), error * 100.0);
    }
}

#[test]
fn homa_means_agree_with_the_first_line() {
    for name in ["dctcp_homa", "hadoop_homa", "webserver", "cache_follower", "memcached"] {
        let cdf = SizeCdf::builtin(name).unwrap();
        let stated = cdf.stated_mean().unwrap();
        assert!((cdf.mean() - stated).abs() / stated < 1e-3, "{name}: {} vs stated {stated}", cdf.mean());
    }
    assert_eq!(SizeCdf::builtin("dctcp_homa").unwrap().stated_mean(), Some(1744.70 * 1442.0));
    assert_eq!(SizeCdf::builtin("websearch").unwrap().stated_mean(), None);
}

#[test]
fn every_listed_builtin_loads_and_every_description_is_one_line() {
    for (name, description) in builtin_names() {
        assert!(SizeCdf::builtin(name).is_ok(), "{name}");
        assert!(!description.is_empty() && !description.contains('\n'));
    }
    let err = SizeCdf::builtin("web_search").unwrap_err();
    assert!(err.message.contains("`web_search`"), "{err}");
    assert!(err.message.contains("websearch, fb_hadoop, alistorage, google_rpc"), "{err}");
}

#[test]
fn memcached_draws_head_sizes_and_a_rounded_capped_tail() {
    let cdf = SizeCdf::builtin("memcached").unwrap();
    let Shape::ParetoTail { tail, .. } = &cdf.shape else { panic!("memcached has a tail") };
    assert_eq!(tail.sample(0.47 + 1e-12), 15);
    // u = 1 - 0.53 / 2 halves the tail survival: the median excess sigma (2^k - 1) / k = 168.15 B.
    assert_eq!(tail.sample(1.0 - 0.53 * 0.5), 15 + 168);
    let largest_draw = tail.sample(1.0 - f64::EPSILON / 2.0);
    assert!((100_000_000..0x4000_0000).contains(&largest_draw), "{largest_draw}");
    assert_eq!(tail.sample(1.0), 0x4000_0000, "the cap");
    let mut rng = Rng::named(1, "memcached");
    let sizes: Vec<u64> = (0..100_000).map(|_| cdf.sample(&mut rng)).collect();
    let head = sizes.iter().filter(|&&s| s <= 15).count() as f64 / sizes.len() as f64;
    assert!((head - 0.47).abs() < 0.01, "share of sizes up to 15 B: {head}");
    assert!(sizes.iter().all(|&s| s >= 1));
}

#[test]
fn linear_sampling_interpolates_and_truncates() {
    let cdf = SizeCdf::parse_hpcc("0 0\n1000 50\n1000 60\n3000 100\n").unwrap();
    assert_eq!(sample_linear(points(&cdf), 25.0), 500);
    assert_eq!(sample_linear(points(&cdf), 55.0), 1000, "a flat size step is a point mass");
    assert_eq!(sample_linear(points(&cdf), 80.0), 2000);
    assert_eq!(sample_linear(points(&cdf), 0.0), 1, "size 0 becomes 1 byte");
    assert_eq!(sample_linear(points(&cdf), 0.01), 1);
    // 0.5 x E[max(1, floor(U[0,1000]))] + 0.1 x 1000 + 0.4 x E[floor(U[1000,3000])]
    let expected = 0.5 * (499.5 + 1.0 / 1000.0) + 100.0 + 0.4 * 1999.5;
    assert!((cdf.mean() - expected).abs() < 1e-9, "{} vs {expected}", cdf.mean());
}

fn points(cdf: &SizeCdf) -> &[(f64, f64)] {
    match &cdf.shape {
        Shape::Linear(points) => points,
        _ => panic!("not an HPCC CDF"),
    }
}

#[test]
fn whole_byte_mean_matches_brute_force() {
    for (a, b) in [(0.0, 10.0), (0.3, 7.9), (2.5, 2.75), (10.0, 20.0)] {
        let n = 1_000_000;
        let brute: f64 =
            (0..n).map(|i| whole_bytes(a + (b - a) * (i as f64 + 0.5) / n as f64) as f64).sum::<f64>() / n as f64;
        assert!((uniform_whole_bytes_mean(a, b) - brute).abs() < 1e-4, "[{a}, {b}]");
    }
}

#[test]
fn step_sampling_picks_the_point_reaching_the_probability() {
    let cdf = SizeCdf::parse_homa("250\n100 0.5\n200 0.5\n400 1.0\n", 1).unwrap();
    assert_eq!(sample_step(step_points(&cdf), 0.0), 100);
    assert_eq!(sample_step(step_points(&cdf), 0.5), 100);
    assert_eq!(sample_step(step_points(&cdf), 0.51), 400, "a point with no probability is never drawn");
    assert_eq!(cdf.mean(), 250.0);
    let packets = SizeCdf::parse_homa("1.5\n1 0.5\n2 1\n", 1442).unwrap();
    assert_eq!(packets.max(), 2884);
    assert_eq!(packets.stated_mean(), Some(2163.0));
}

fn step_points(cdf: &SizeCdf) -> &[(u64, f64)] {
    match &cdf.shape {
        Shape::Step(points) => points,
        _ => panic!("not a HomaSimulation CDF"),
    }
}

/// Asserts that `result` failed at `line` with a message containing `needle`.
fn assert_error(result: Result<SizeCdf, WorkloadError>, line: Option<usize>, needle: &str) {
    let err = result.unwrap_err();
    assert_eq!(err.line, line, "{err}");
    assert!(err.message.contains(needle), "{err:?} should mention {needle:?}");
}

#[test]
fn hpcc_errors_name_the_line_and_the_problem() {
    assert_error(SizeCdf::parse_hpcc("0 0\n100 50\n200 40\n300 100\n"), Some(3), "the CDF decreases");
    assert_error(SizeCdf::parse_hpcc("0 0\n100 50\n50 60\n300 100\n"), Some(3), "sizes must not decrease");
    assert_error(SizeCdf::parse_hpcc("0 0\n100 50\n\n300 90\n"), Some(4), "ends at 90%");
    assert_error(SizeCdf::parse_hpcc("0 0\n100 0.5\n300 1\n"), Some(3), "cumulative percent, 0 to 100");
    assert_error(SizeCdf::parse_hpcc("0 0\n100 5O\n"), Some(2), "percent `5O` is not a number");
    assert_error(SizeCdf::parse_hpcc("0 0\n1e3 nan\n"), Some(2), "`nan` is not a number");
    assert_error(SizeCdf::parse_hpcc("0 0\n100 50 7\n"), Some(2), "found 3 values");
    assert_error(SizeCdf::parse_hpcc("0 0\n100 150\n"), Some(2), "outside 0 to 100");
    assert_error(SizeCdf::parse_hpcc("-5 0\n100 100\n"), Some(1), "negative");
    assert_error(SizeCdf::parse_hpcc("# only a comment\n\n"), None, "empty file");
    // Found by fuzzing: a 196-digit size was accepted and gave an infinite mean.
    let huge = format!("0 5\n{} 100\n", "8".repeat(196));
    assert_error(SizeCdf::parse_hpcc(&huge), Some(2), "larger than the 1125899906842624 B (2^50) a flow may have");
    assert!(SizeCdf::parse_hpcc("0 0\n1125899906842624 100\n").is_ok_and(|c| c.mean().is_finite()));
}

#[test]
fn homa_errors_name_the_line_and_the_problem() {
    assert_error(SizeCdf::parse_homa("10\n5 0.5\n20 0.4\n30 1\n", 1), Some(3), "the CDF decreases");
    assert_error(SizeCdf::parse_homa("10\n5 0.5\n20 0.9\n", 1), Some(3), "ends at 0.9, not at 1");
    assert_error(SizeCdf::parse_homa("10 0\n5 0.5\n", 1), Some(1), "mean size alone on the first line");
    assert_error(SizeCdf::parse_homa("10\n5.5 0.5\n", 1), Some(2), "size `5.5` is not a whole number");
    assert_error(SizeCdf::parse_homa("10\n5 x\n", 1), Some(2), "probability `x` is not a number");
    assert_error(SizeCdf::parse_homa("10\n", 1), Some(1), "no CDF points");
    assert_error(SizeCdf::parse_homa("", 1), None, "empty file");
    assert_error(SizeCdf::parse_homa("10\n1125899906842625 1\n", 1), Some(2), "larger than the");
    let memcached_file = include_str!("../../data/FacebookKeyValueMsgSizeDist.txt");
    assert_error(SizeCdf::parse_homa(memcached_file, 1), Some(16), "ends at 0.47");
}

/// A file under the system temporary folder, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("sluice-workload-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn files_are_recognised_by_their_first_line_and_errors_name_them() {
    let hpcc = TempFile::new("hpcc.txt", "0 0\n1000 100\n");
    assert_eq!(SizeCdf::from_file(&hpcc.0).unwrap().max(), 1000);
    let homa = TempFile::new("homa.txt", "# sizes in bytes\n150\n100 0.5\n200 1\n");
    let cdf = SizeCdf::from_file(&homa.0).unwrap();
    assert_eq!((cdf.mean(), cdf.stated_mean()), (150.0, Some(150.0)));
    let bad = TempFile::new("bad.txt", "0 0\n1000 50\n500 100\n");
    let err = SizeCdf::from_file(&bad.0).unwrap_err();
    assert_eq!(err.file.as_deref(), Some(bad.0.display().to_string().as_str()));
    assert!(err.to_string().contains("bad.txt line 3: size 500 is below"), "{err}");
    let missing = std::env::temp_dir().join("sluice-workload-no-such-file.txt");
    let err = SizeCdf::from_file(&missing).unwrap_err();
    assert!(err.to_string().contains("sluice-workload-no-such-file.txt"), "{err}");
}
