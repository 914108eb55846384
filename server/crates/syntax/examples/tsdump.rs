//! Prints the tree-sitter-cuda syntax tree of a file (development aid for the grammar notes).
fn main() {
    let path = std::env::args().nth(1).expect("usage: tsdump FILE");
    let text = std::fs::read_to_string(path).expect("read");
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_cuda::LANGUAGE.into())
        .expect("lang");
    let t = p.parse(&text, None).expect("parse");
    let mut c = t.walk();
    print(&mut c, 0, &text);
}
fn print(c: &mut tree_sitter::TreeCursor, d: usize, text: &str) {
    let n = c.node();
    if n.is_named() || n.is_error() || n.is_missing() {
        let f = c.field_name().map(|f| format!("{f}: ")).unwrap_or_default();
        let leaf = if n.child_count() == 0 {
            format!(" {:?}", &text[n.byte_range()])
        } else {
            String::new()
        };
        println!(
            "{}{}{}{}{}",
            "  ".repeat(d),
            f,
            n.kind(),
            if n.is_missing() { " MISSING" } else { "" },
            leaf
        );
    } else if n.kind().len() > 1 {
        println!("{}'{}'", "  ".repeat(d), n.kind());
    }
    if c.goto_first_child() {
        loop {
            print(c, d + 1, text);
            if !c.goto_next_sibling() {
                break;
            }
        }
        c.goto_parent();
    }
}
