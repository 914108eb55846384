//! tree-sitter-cuda parsing.

/// Parses CUDA source. `old_tree` (already `.edit()`ed by the caller) enables incremental
/// reparsing.
pub fn parse(text: &str, old_tree: Option<&tree_sitter::Tree>) -> tree_sitter::Tree {
    let mut parser = tree_sitter::Parser::new();
    // Loading the grammar only fails on an ABI mismatch between tree-sitter and the grammar
    // crate, which the pinned versions rule out at build time (and the tests exercise).
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .expect("tree-sitter-cuda grammar matches the tree-sitter ABI");
    // `parse` returns None only when a timeout or cancellation flag is set; we set neither.
    parser
        .parse(text, old_tree)
        .or_else(|| parser.parse(text, None))
        .expect("tree-sitter parses without timeout")
}

/// Parses a snippet wrapped in a function body (used for macro bodies and `#if` conditions).
pub(crate) fn parse_snippet_body(body: &str) -> (String, tree_sitter::Tree) {
    let text = format!("void __cudarace_snippet() {{\n{body}\n;}}\n");
    let tree = parse(&text, None);
    (text, tree)
}
