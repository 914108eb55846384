//! Arbitrary bytes → preprocess + parse + lower (`cudarace_syntax::lower_source`) and, for every
//! kernel, `cudarace_check::plan_kernel` (protocol extraction and query building, no solving).
//! A panic anywhere (including one the front end catches and reports as an internal error: the
//! libFuzzer panic hook aborts first) is a crash.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let opts = cudarace_syntax::FrontendOptions::default();
    let file = cudarace_syntax::lower_source(None, &text, &opts);
    for e in &file.syntax_errors {
        assert!(!e.message.contains("internal error"), "{}", e.message);
    }
    let check = cudarace_check::CheckOptions::default();
    for k in &file.kernels {
        if let Some(r) = &k.unsupported {
            assert!(!r.contains("internal error"), "{r}");
        }
        let plan = cudarace_check::plan_kernel(&file, k, &check);
        std::hint::black_box(plan.queries.len());
    }
});
