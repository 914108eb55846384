//! Arbitrary edit sequences → incremental reparse (`Tree::edit` + `parse(text, Some(&old))`) must
//! give the same syntax tree (s-expression) as a full parse, and lowering with the incremental
//! tree must give the same IR (pretty-printed) as `lower_source`.
//! Input: `BASE \0 OPS`, OPS a sequence of edits (see `cudarace_syntax::fuzzing::decode_edits`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(msg) = cudarace_syntax::fuzzing::check_incremental(data) {
        panic!("{msg}");
    }
});
