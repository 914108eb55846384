//! A reproducible random sample of definite findings, for triage by hand.

use super::*;

/// SplitMix64: a small deterministic generator (the same sample for the same seed everywhere).
pub(super) struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `n` definite findings picked at random with `seed` (records in file order, findings in
/// report order, then a partial Fisher–Yates shuffle). With `by_kernel`, kernels (checked file
/// and name) are picked instead and one of each picked kernel's definite findings, so that a
/// kernel with hundreds of findings does not fill the sample.
pub fn sample_definite(
    records: &[FileRecord],
    n: usize,
    seed: u64,
    by_kernel: bool,
) -> Vec<&Value> {
    let mut groups: Vec<Vec<&Value>> = Vec::new();
    for r in records {
        let mut of_file: BTreeMap<&str, usize> = BTreeMap::new();
        for f in r.findings.iter().filter(|f| confidence(f) == "definite") {
            if !by_kernel {
                groups.push(vec![f]);
                continue;
            }
            let at = *of_file.entry(text(f, "kernel")).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[at].push(f);
        }
    }
    let mut rng = SplitMix64(seed);
    let take = n.min(groups.len());
    for i in 0..take {
        let j = i + rng.below(groups.len() - i);
        groups.swap(i, j);
    }
    groups
        .iter()
        .take(take)
        .map(|g| g[if g.len() > 1 { rng.below(g.len()) } else { 0 }])
        .collect()
}
