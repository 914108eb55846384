//! Mutation fuzzing of the front end (development aid): lowers mutants of the given files and
//! reports any internal error (a caught panic).
fn main() {
    let mut seed: u64 = 0x9E3779B97F4A7C15;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut bad = 0;
    let mut total = 0;
    for path in std::env::args().skip(1) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for _ in 0..300 {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..(1 + rnd() % 4) {
                if b.is_empty() {
                    break;
                }
                let i = (rnd() as usize) % b.len();
                match rnd() % 5 {
                    0 => {
                        let j = (i + (rnd() as usize) % 20).min(b.len());
                        b.drain(i..j);
                    }
                    1 => b.insert(i, b"{}()[];#<>*&\n"[(rnd() % 13) as usize]),
                    2 => {
                        let j = (i + (rnd() as usize) % 40).min(b.len());
                        let chunk: Vec<u8> = b[i..j].to_vec();
                        let k = (rnd() as usize) % b.len();
                        for (n, c) in chunk.into_iter().enumerate() {
                            b.insert(k + n, c);
                        }
                    }
                    3 => b[i] = b"abcxyz_0123 \t\n\"'\\/"[(rnd() % 18) as usize],
                    _ => b.truncate(i),
                }
            }
            let m = String::from_utf8_lossy(&b).to_string();
            total += 1;
            let f = cudarace_syntax::lower_source(
                Some(std::path::Path::new(&path)),
                &m,
                &Default::default(),
            );
            let internal = f
                .syntax_errors
                .iter()
                .any(|e| e.message.contains("internal error"))
                || f.kernels.iter().any(|k| {
                    k.unsupported
                        .as_deref()
                        .is_some_and(|r| r.contains("internal error"))
                });
            if internal {
                bad += 1;
                let out = format!("/tmp/fuzz_fail_{bad}.cu");
                let _ = std::fs::write(&out, &m);
                eprintln!("internal error on a mutant of {path}: saved {out}");
            }
        }
    }
    println!("{total} mutants, {bad} internal errors");
}
