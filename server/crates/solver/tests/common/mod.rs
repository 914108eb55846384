//! Query builders shared by the tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use cudarace_solver::{Query, Sort, Term};

pub fn v(name: &str) -> Term {
    Term::var(name)
}

pub fn int(i: i64) -> Term {
    Term::Int(i)
}

pub fn add(ts: Vec<Term>) -> Term {
    Term::Add(ts.into())
}

pub fn mul(ts: Vec<Term>) -> Term {
    Term::Mul(ts.into())
}

pub fn ge(a: Term, b: Term) -> Term {
    Term::le(b, a)
}

pub fn query(ints: &[&str], assertions: Vec<Term>, report: &[&str]) -> Query {
    let vars = ints
        .iter()
        .map(|n| (n.to_string(), Sort::Int))
        .collect::<BTreeMap<_, _>>();
    Query {
        report: report.iter().map(|s| s.to_string()).collect(),
        ..Query::new(vars, assertions)
    }
}

/// `lo <= x < hi`
pub fn range(x: Term, lo: i64, hi: i64) -> Vec<Term> {
    vec![Term::le(int(lo), x.clone()), Term::lt(x, int(hi))]
}

/// Launch and thread constraints shared by both grid-stride encodings: two distinct threads
/// (b1,t1), (b2,t2) of a 1-D launch with symbolic blockDim B and gridDim G.
fn grid_threads() -> Vec<Term> {
    let mut a = vec![];
    a.extend(range(v("B"), 1, 1025));
    a.extend(range(v("G"), 1, 1 << 31));
    for (b, t) in [("b1", "t1"), ("b2", "t2")] {
        a.push(ge(v(b), int(0)));
        a.push(Term::lt(v(b), v("G")));
        a.push(ge(v(t), int(0)));
        a.push(Term::lt(v(t), v("B")));
    }
    a.push(Term::or(vec![
        Term::ne(v("b1"), v("b2")),
        Term::ne(v("t1"), v("t2")),
    ]));
    a
}

/// NOTES.md: grid-stride loop `i = blockIdx.x*blockDim.x + threadIdx.x; i < n; i += B*G`, two
/// distinct threads meeting on the same `i`, encoded with a free iteration count per thread.
/// Unsatisfiable, but hard for Z3 4.8.12 (nonlinear).
pub fn grid_stride_naive() -> Query {
    let mut a = grid_threads();
    for (b, t, k, i) in [("b1", "t1", "k1", "i1"), ("b2", "t2", "k2", "i2")] {
        a.push(ge(v(k), int(0)));
        let g = add(vec![mul(vec![v(b), v("B")]), v(t)]);
        a.push(Term::eq(
            v(i),
            add(vec![g, mul(vec![v(k), v("B"), v("G")])]),
        ));
        a.push(Term::lt(v(i), v("n")));
    }
    a.push(Term::eq(v("i1"), v("i2")));
    query(
        &[
            "B", "G", "n", "b1", "t1", "b2", "t2", "k1", "k2", "i1", "i2",
        ],
        a,
        &["t1", "t2"],
    )
}

/// The same question encoded by residue: `T = B*G`, `i mod T = g`, `i >= g`.
pub fn grid_stride_residue() -> Query {
    let mut a = grid_threads();
    a.push(Term::eq(v("T"), mul(vec![v("B"), v("G")])));
    for (b, t, g, i) in [("b1", "t1", "g1", "i1"), ("b2", "t2", "g2", "i2")] {
        a.push(Term::eq(v(g), add(vec![mul(vec![v(b), v("B")]), v(t)])));
        a.push(ge(v(i), v(g)));
        a.push(Term::eq(
            Term::Mod(std::sync::Arc::new(v(i)), std::sync::Arc::new(v("T"))),
            v(g),
        ));
        a.push(Term::lt(v(i), v("n")));
    }
    a.push(Term::eq(v("i1"), v("i2")));
    query(
        &[
            "B", "G", "T", "n", "b1", "t1", "b2", "t2", "g1", "g2", "i1", "i2",
        ],
        a,
        &["t1", "t2"],
    )
}

/// The residue encoding for a launch of 8 blocks of 512 threads, as the checker builds it when
/// the launch is bound: `(i - (512*b + t)) mod 4096 == 0`, a remainder by a constant.
pub fn grid_stride_residue_of_a_constant_launch() -> Query {
    let mut a = vec![];
    for (b, t) in [("b1", "t1"), ("b2", "t2")] {
        a.extend(range(v(b), 0, 8));
        a.extend(range(v(t), 0, 512));
    }
    a.push(Term::or(vec![
        Term::ne(v("b1"), v("b2")),
        Term::ne(v("t1"), v("t2")),
    ]));
    for (b, t, i) in [("b1", "t1", "i"), ("b2", "t2", "i")] {
        let g = add(vec![v(t), mul(vec![int(512), v(b)])]);
        a.push(ge(v(i), g.clone()));
        a.push(Term::eq(
            Term::Mod(
                std::sync::Arc::new(Term::Sub(std::sync::Arc::new(v(i)), std::sync::Arc::new(g))),
                std::sync::Arc::new(int(4096)),
            ),
            int(0),
        ));
        a.push(Term::lt(v(i), v("n")));
    }
    query(&["n", "b1", "t1", "b2", "t2", "i"], a, &["t1", "t2"])
}
