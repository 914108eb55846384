//! End-to-end tests of the checker on hand-built IR, solved with Z3 (`cudarace_solver::solve`).
//! Spans encode "lines": a statement built with line `n` has `span.start == n * 10`.

use super::*;
use cudarace_ir::*;
use cudarace_solver::{solve, Answer, Limits};

pub(crate) mod ir {
    use cudarace_ir::*;

    pub fn sp(line: u32) -> Span {
        Span {
            file: FileId(0),
            start: line * 10,
            end: line * 10 + 5,
        }
    }

    pub fn line_of(s: Span) -> u32 {
        s.start / 10
    }

    pub struct KB {
        pub k: Kernel,
        next_access: u32,
    }

    impl KB {
        pub fn new(name: &str) -> KB {
            KB {
                k: Kernel {
                    name: name.into(),
                    span: sp(0),
                    name_span: sp(0),
                    params: vec![],
                    arrays: vec![],
                    locals: vec![],
                    unknowns: vec![],
                    body: vec![],
                    launch_bounds: None,
                    launch_bounds_param: None,
                    annotated_launch: LaunchConfig::default(),
                    unsupported: None,
                    volatile_arrays: vec![],
                    library_notes: vec![],
                },
                next_access: 0,
            }
        }

        pub fn shared(&mut self, name: &str, dims: &[i64]) -> ArrayId {
            self.k.arrays.push(Array {
                name: name.into(),
                space: MemSpace::Shared,
                origin: ArrayOrigin::SharedDecl,
                elem: ScalarType::INT,
                dims: dims.iter().map(|d| Some(Expr::Int(*d))).collect(),
                span: sp(0),
            });
            ArrayId(self.k.arrays.len() as u32 - 1)
        }

        pub fn global(&mut self, name: &str) -> ArrayId {
            let idx = self.k.params.len() as u32;
            self.k.params.push(Param {
                name: name.into(),
                ty: ScalarType::Pointer,
                span: sp(0),
                is_template: false,
                template_index: None,
                member: false,
                value: None,
            });
            self.k.arrays.push(Array {
                name: name.into(),
                space: MemSpace::Global,
                origin: ArrayOrigin::Param(idx),
                elem: ScalarType::INT,
                dims: vec![None],
                span: sp(0),
            });
            ArrayId(self.k.arrays.len() as u32 - 1)
        }

        pub fn param(&mut self, name: &str) -> Expr {
            self.k.params.push(Param {
                name: name.into(),
                ty: ScalarType::INT,
                span: sp(0),
                is_template: false,
                template_index: None,
                member: false,
                value: None,
            });
            Expr::Param(ParamId(self.k.params.len() as u32 - 1))
        }

        pub fn local(&mut self, name: &str) -> LocalId {
            self.k.locals.push(Local {
                name: name.into(),
                ty: ScalarType::INT,
                span: sp(0),
            });
            LocalId(self.k.locals.len() as u32 - 1)
        }

        pub fn unknown(&mut self, uniform: bool) -> Expr {
            self.k.unknowns.push(UnknownValue {
                reason: "the result of `f()`".into(),
                span: sp(0),
                uniform,
                grid: false,
                distinct: None,
            });
            Expr::Unknown(UnknownId(self.k.unknowns.len() as u32 - 1))
        }

        fn access(
            &mut self,
            array: ArrayId,
            mode: AccessMode,
            index: Vec<Expr>,
            value: Option<Expr>,
            line: u32,
        ) -> (Stmt, Expr) {
            let id = AccessId(self.next_access);
            self.next_access += 1;
            let s = Stmt::Access(Access {
                id,
                array,
                mode,
                index,
                flat: false,
                value,
                span: sp(line),
            });
            (s, Expr::Load(id))
        }

        /// A read; returns the statement and the loaded value.
        pub fn rd(&mut self, a: ArrayId, idx: Vec<Expr>, line: u32) -> (Stmt, Expr) {
            self.access(a, AccessMode::Read, idx, None, line)
        }

        pub fn wr(&mut self, a: ArrayId, idx: Vec<Expr>, line: u32) -> Stmt {
            self.access(a, AccessMode::Write, idx, None, line).0
        }

        pub fn wr_val(&mut self, a: ArrayId, idx: Vec<Expr>, v: Expr, line: u32) -> Stmt {
            self.access(a, AccessMode::Write, idx, Some(v), line).0
        }

        pub fn atomic(&mut self, a: ArrayId, idx: Vec<Expr>, line: u32) -> Stmt {
            self.access(a, AccessMode::Atomic, idx, None, line).0
        }

        pub fn body(mut self, b: Vec<Stmt>) -> Kernel {
            self.k.body = b;
            self.k
        }
    }

    pub fn n(v: i64) -> Expr {
        Expr::Int(v)
    }
    pub fn tid() -> Expr {
        Expr::Builtin(Builtin::ThreadIdx(Dim::X))
    }
    pub fn tidy() -> Expr {
        Expr::Builtin(Builtin::ThreadIdx(Dim::Y))
    }
    pub fn bid() -> Expr {
        Expr::Builtin(Builtin::BlockIdx(Dim::X))
    }
    pub fn bdim() -> Expr {
        Expr::Builtin(Builtin::BlockDim(Dim::X))
    }
    pub fn gdim() -> Expr {
        Expr::Builtin(Builtin::GridDim(Dim::X))
    }
    pub fn l(x: LocalId) -> Expr {
        Expr::Local(x)
    }
    pub fn b(op: BinOp, a: Expr, c: Expr) -> Expr {
        Expr::bin(op, a, c)
    }
    pub fn plus(a: Expr, c: Expr) -> Expr {
        b(BinOp::Add, a, c)
    }
    pub fn minus(a: Expr, c: Expr) -> Expr {
        b(BinOp::Sub, a, c)
    }
    pub fn times(a: Expr, c: Expr) -> Expr {
        b(BinOp::Mul, a, c)
    }
    pub fn lt(a: Expr, c: Expr) -> Expr {
        b(BinOp::Lt, a, c)
    }
    pub fn set(x: LocalId, v: Expr) -> Stmt {
        Stmt::Assign {
            local: x,
            value: v,
            span: sp(0),
        }
    }
    pub fn sync(line: u32) -> Stmt {
        Stmt::Barrier(Barrier {
            kind: BarrierKind::Block,
            span: sp(line),
        })
    }
    pub fn syncwarp(line: u32) -> Stmt {
        Stmt::Barrier(Barrier {
            kind: BarrierKind::Warp { mask: None },
            span: sp(line),
        })
    }
    pub fn if_(c: Expr, t: Vec<Stmt>, e: Vec<Stmt>, line: u32) -> Stmt {
        Stmt::If {
            cond: c,
            then_branch: t,
            else_branch: e,
            span: sp(line),
        }
    }
    /// `for (x = init; cond; x = step) body`
    pub fn for_(
        x: LocalId,
        init: Expr,
        cond: Expr,
        step: Expr,
        body: Vec<Stmt>,
        line: u32,
    ) -> Stmt {
        Stmt::Loop(Loop {
            kind: LoopKind::For,
            init: vec![set(x, init)],
            cond: Some(cond),
            cond_effects: vec![],
            step: vec![set(x, step)],
            body,
            span: sp(line),
        })
    }
}

use ir::*;

fn file() -> FileIr {
    FileIr::default()
}

fn run(k: &Kernel) -> KernelReport {
    run_with(k, &CheckOptions::default())
}

fn run_with(k: &Kernel, opts: &CheckOptions) -> KernelReport {
    let limits = Limits {
        timeout_ms: 10_000,
        rlimit: 50_000_000,
    };
    check_kernel(&file(), k, opts, &mut |q| solve(q, &limits))
}

fn race_lines(r: &KernelReport) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = r
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::DataRace)
        .map(|f| {
            let a = line_of(f.span);
            let b = f.related.first().map(|x| line_of(x.span)).unwrap_or(a);
            (a.min(b), a.max(b))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn assert_verdict(r: &KernelReport, v: Verdict) {
    assert_eq!(r.verdict, v, "{:#?}", r);
}

// ---------------------------------------------------------------- races within one interval

/// `s[tid] = ..; .. = s[tid + 1];` with or without a barrier in between.
fn neighbour(with_barrier: bool) -> Kernel {
    let mut kb = KB::new("neighbour");
    let s = kb.shared("s", &[257]);
    let w = kb.wr(s, vec![tid()], 1);
    let (r, _) = kb.rd(s, vec![plus(tid(), n(1))], 3);
    let mut body = vec![w];
    if with_barrier {
        body.push(sync(2));
    }
    body.push(r);
    kb.body(body)
}

#[test]
fn race_within_an_interval_names_both_accesses() {
    let r = run(&neighbour(false));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(1, 3)]);
    let f = &r.findings[0];
    assert_eq!(f.confidence, Confidence::Definite);
    assert_eq!(f.array.as_deref(), Some("s"));
    // The witness is a real race: the writer's tid equals the reader's tid + 1 (or vice versa).
    let (ta, tb) = (
        f.witness.thread_a.thread_idx[0],
        f.witness.thread_b.thread_idx[0],
    );
    assert_ne!(ta, tb);
    assert_eq!(f.witness.cell.len(), 1);
    let c = f.witness.cell[0];
    assert!(
        (c == ta && c == tb + 1) || (c == tb && c == ta + 1),
        "{:?}",
        f.witness
    );
    assert!(f.message.contains("data race on `s`"), "{}", f.message);
    assert!(f.message.contains("same barrier interval"), "{}", f.message);
}

#[test]
fn barrier_splits_intervals() {
    let r = run(&neighbour(true));
    assert_verdict(&r, Verdict::RaceFree);
    assert!(r.findings.is_empty());
    // Left in one interval are only `s[tid]` against itself, which two distinct threads of a
    // block cannot share (decided without a query); the write/read pair is split apart.
    assert_eq!(r.queries, 0);
    assert_verdict(&run(&neighbour(false)), Verdict::Racy);
}

#[test]
fn same_thread_cells_need_no_query_but_strided_ones_do() {
    // `s[tid + 2*T]` against `s[tid + 3*T]` and `s[tid]` against `s[tid]`: disjoint by shape.
    let mut kb = KB::new("shapes");
    let s = kb.shared("s", &[4096]);
    let w1 = kb.wr(s, vec![plus(tid(), times(n(2), bdim()))], 1);
    let w2 = kb.wr(s, vec![plus(tid(), times(n(3), bdim()))], 2);
    let w3 = kb.wr(s, vec![tid()], 3);
    let r = run(&kb.body(vec![w1, w2, w3]));
    assert_verdict(&r, Verdict::RaceFree);
    assert_eq!(r.queries, 0);
    // In a 2-D block, threads of one column share `s[threadIdx.x]`: not pruned.
    let mut kb = KB::new("columns");
    let s = kb.shared("s", &[4096]);
    let t = kb.shared("t", &[64]);
    let w = kb.wr(s, vec![tid()], 1);
    let (rd, _) = kb.rd(t, vec![tidy()], 2);
    let r = run(&kb.body(vec![w, rd]));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(1, 1)]);
    // `s[tid + 1]` against `s[tid]` is a race the shapes must not hide.
    let mut kb = KB::new("neighbours");
    let s = kb.shared("s", &[4096]);
    let w1 = kb.wr(s, vec![plus(tid(), n(1))], 1);
    let w2 = kb.wr(s, vec![tid()], 2);
    let r = run(&kb.body(vec![w1, w2]));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(1, 2)]);
}

#[test]
fn own_cell_is_not_a_race_and_reads_do_not_race() {
    let mut kb = KB::new("own");
    let s = kb.shared("s", &[256]);
    let (r1, _) = kb.rd(s, vec![n(0)], 1);
    let (r2, _) = kb.rd(s, vec![n(0)], 2);
    let w = kb.wr(s, vec![tid()], 3);
    let (r3, _) = kb.rd(s, vec![tid()], 4);
    let r = run(&kb.body(vec![r1, r2, w, r3]));
    // s[0] is read by all while thread 0 writes s[0]: racy between lines 1/2 and 3 only.
    assert_eq!(race_lines(&r), vec![(1, 3), (2, 3)]);
}

#[test]
fn same_constant_writes_are_reported_as_such() {
    let mut kb = KB::new("flag");
    let s = kb.shared("flag", &[]);
    let w = kb.wr_val(s, vec![], n(1), 1);
    let r = run(&kb.body(vec![w]));
    assert_verdict(&r, Verdict::Racy);
    assert!(r.findings[0].same_value_write);
    assert!(
        r.findings[0].message.contains("same value 1"),
        "{}",
        r.findings[0].message
    );
}

#[test]
fn atomics_do_not_race_with_atomics_but_with_plain_reads() {
    let mut kb = KB::new("atomics");
    let g = kb.global("count");
    let a1 = kb.atomic(g, vec![n(0)], 1);
    let a2 = kb.atomic(g, vec![n(0)], 2);
    let r = run(&kb.body(vec![a1, a2]));
    assert_verdict(&r, Verdict::RaceFree);

    let mut kb = KB::new("atomic_vs_read");
    let g = kb.global("count");
    let a1 = kb.atomic(g, vec![n(0)], 1);
    let (rd, _) = kb.rd(g, vec![n(0)], 2);
    let r = run(&kb.body(vec![a1, rd]));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(1, 2)]);
}

// ---------------------------------------------------------------- splitting (structure)

/// Lines of the accesses of every interval (sorted), for `counts` = block barriers.
fn interval_lines(k: &Kernel) -> Vec<Vec<u32>> {
    let p = protocol::build(k);
    let counts = |kind: SyncKind| kind == SyncKind::Block;
    let mut out: Vec<Vec<u32>> = split::intervals(&p, &counts, &|| false)
        .into_iter()
        .map(|seg| {
            let mut v: Vec<u32> = seg
                .insts
                .iter()
                .map(|i| line_of(p.accs[i.acc].span))
                .collect();
            v.sort();
            v.dedup();
            v
        })
        .filter(|v| !v.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn splitting_cuts_at_every_barrier() {
    assert_eq!(interval_lines(&neighbour(false)), vec![vec![1, 3]]);
    assert_eq!(interval_lines(&neighbour(true)), vec![vec![1], vec![3]]);
}

#[test]
fn aligning_adds_the_wrap_around_interval() {
    // for { w(2); sync; r(4) }: intervals {w} (first iteration), {r, w} (iteration k's end
    // with k+1's start), {r} (last iteration).
    let iv = interval_lines(&cross_iteration(false));
    assert!(iv.contains(&vec![2, 4]), "{iv:?}");
    // With a barrier at the end of the body, no interval holds both.
    let iv = interval_lines(&cross_iteration(true));
    assert!(!iv.contains(&vec![2, 4]), "{iv:?}");
    assert!(iv.contains(&vec![2]) && iv.contains(&vec![4]), "{iv:?}");
}

#[test]
fn uniformity_of_loop_carried_values() {
    // cur = 1 - cur is block-uniform: one shared unknown; acc += s[tid] is per thread.
    let k = double_buffer(true);
    let p = protocol::build(&k);
    let idx = &p
        .accs
        .iter()
        .find(|a| a.mode == AccessMode::Write)
        .expect("write")
        .index[0];
    assert_eq!(
        uniformity::variance(idx),
        uniformity::Variance::Block,
        "{}",
        terms::show(idx)
    );
    let tid_idx = &p
        .accs
        .iter()
        .find(|a| a.mode == AccessMode::Write)
        .expect("write")
        .index[1];
    assert_eq!(uniformity::variance(tid_idx), uniformity::Variance::Thread);
}

// ---------------------------------------------------------------- aligning

/// `for (i = 0; i < n; i++) { s[tid] = ..; sync; .. = s[tid+1]; [sync] }`
fn cross_iteration(barrier_at_end: bool) -> Kernel {
    let mut kb = KB::new("cross_iteration");
    let s = kb.shared("s", &[257]);
    let np = kb.param("n");
    let i = kb.local("i");
    let w = kb.wr(s, vec![tid()], 2);
    let (r, _) = kb.rd(s, vec![plus(tid(), n(1))], 4);
    let mut body = vec![w, sync(3), r];
    if barrier_at_end {
        body.push(sync(5));
    }
    let lp = for_(i, n(0), lt(l(i), np), plus(l(i), n(1)), body, 1);
    kb.body(vec![lp])
}

#[test]
fn aligning_finds_the_race_between_iterations() {
    let r = run(&cross_iteration(false));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(2, 4)]);
}

/// The wrap-around race meets iteration `i`'s read with iteration `i + 1`'s write: the witness
/// shows each thread's own iteration, not the shared counter's value for both.
#[test]
fn a_race_between_iterations_shows_each_threads_iteration() {
    let r = run(&cross_iteration(false));
    let f = &r.findings[0];
    let (a, b) = (&f.witness.thread_a.loop_vars, &f.witness.thread_b.loop_vars);
    let b_line = f.related.first().map(|x| line_of(x.span));
    assert_eq!((line_of(f.span), b_line), (2, Some(4)), "{f:?}");
    assert_eq!(
        a.get("i").copied(),
        b.get("i").map(|i| i + 1),
        "the writer runs the next iteration: {:?}",
        f.witness
    );
}

#[test]
fn aligning_barrier_at_loop_end_fixes_it() {
    let r = run(&cross_iteration(true));
    assert_verdict(&r, Verdict::RaceFree);
}

#[test]
fn code_before_a_loop_meets_its_first_iteration() {
    // .. = s[tid+1]; for (..) { s[tid] = ..; sync; }
    let mut kb = KB::new("before");
    let s = kb.shared("s", &[257]);
    let i = kb.local("i");
    let (r0, _) = kb.rd(s, vec![plus(tid(), n(1))], 1);
    let w = kb.wr(s, vec![tid()], 3);
    let lp = for_(
        i,
        n(0),
        lt(l(i), n(4)),
        plus(l(i), n(1)),
        vec![w, sync(4)],
        2,
    );
    let r = run(&kb.body(vec![r0, lp]));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(1, 3)]);
}

#[test]
fn last_iteration_meets_the_code_after_the_loop() {
    // for (..) { sync; s[tid] = ..; }  .. = s[tid+1];
    let mut kb = KB::new("after");
    let s = kb.shared("s", &[257]);
    let i = kb.local("i");
    let w = kb.wr(s, vec![tid()], 3);
    let lp = for_(
        i,
        n(0),
        lt(l(i), n(4)),
        plus(l(i), n(1)),
        vec![sync(2), w],
        1,
    );
    let (r1, _) = kb.rd(s, vec![plus(tid(), n(1))], 5);
    let r = run(&kb.body(vec![lp, r1]));
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(race_lines(&r), vec![(3, 5)]);
}

#[test]
fn unsynchronized_loop_iterations_are_per_thread() {
    // for (i = 0; i < 4; i++) s[i] = ..;   every thread writes s[0..4]
    let mut kb = KB::new("unsync");
    let s = kb.shared("s", &[4]);
    let i = kb.local("i");
    let w = kb.wr(s, vec![l(i)], 2);
    let lp = for_(i, n(0), lt(l(i), n(4)), plus(l(i), n(1)), vec![w], 1);
    let r = run(&kb.body(vec![lp]));
    assert_verdict(&r, Verdict::Racy);
    let f = &r.findings[0];
    assert!(
        f.witness.thread_a.loop_vars.contains_key("i"),
        "{:?}",
        f.witness
    );
}

// ---------------------------------------------------------------- classic kernels

/// for (s = blockDim.x/2; s > 0; s >>= 1) { if (tid < s) sdata[tid] += sdata[tid+s]; sync }
fn reduction(with_barrier: bool) -> Kernel {
    let mut kb = KB::new("reduce");
    let sd = kb.shared("sdata", &[1024]);
    let st = kb.local("s");
    let (r1, v1) = kb.rd(sd, vec![tid()], 3);
    let (r2, v2) = kb.rd(sd, vec![plus(tid(), l(st))], 3);
    let w = kb.wr_val(sd, vec![tid()], plus(v1, v2), 3);
    let mut body = vec![if_(lt(tid(), l(st)), vec![r1, r2, w], vec![], 2)];
    if with_barrier {
        body.push(sync(4));
    }
    let lp = for_(
        st,
        b(BinOp::Div, bdim(), n(2)),
        b(BinOp::Gt, l(st), n(0)),
        b(BinOp::Shr, l(st), n(1)),
        body,
        1,
    );
    kb.body(vec![lp])
}

#[test]
fn tree_reduction_with_barrier_is_race_free() {
    assert_verdict(&run(&reduction(true)), Verdict::RaceFree);
}

#[test]
fn tree_reduction_without_barrier_is_racy() {
    let r = run(&reduction(false));
    assert_verdict(&r, Verdict::Racy);
    let f = &r.findings[0];
    assert!(
        f.witness.thread_a.loop_vars.contains_key("s"),
        "{:?}",
        f.witness
    );
}

/// Grid-stride loop on global memory: `a[i] = a[i] + 1` (race-free) or `a[i] = a[i+1]` (racy).
fn grid_stride(racy: bool) -> Kernel {
    let mut kb = KB::new("grid_stride");
    let a = kb.global("a");
    let np = kb.param("n");
    let i = kb.local("i");
    let (r, v) = kb.rd(a, vec![if racy { plus(l(i), n(1)) } else { l(i) }], 2);
    let w = kb.wr_val(a, vec![l(i)], plus(v, n(1)), 2);
    let lp = for_(
        i,
        plus(times(bid(), bdim()), tid()),
        lt(l(i), np),
        plus(l(i), times(bdim(), gdim())),
        vec![r, w],
        1,
    );
    kb.body(vec![lp])
}

#[test]
fn grid_stride_loop_is_race_free() {
    assert_verdict(&run(&grid_stride(false)), Verdict::RaceFree);
}

#[test]
fn grid_stride_loop_with_neighbour_read_is_racy() {
    let r = run(&grid_stride(true));
    assert_verdict(&r, Verdict::Racy);
}

#[test]
fn block_stride_shared_loop_is_race_free() {
    // for (i = tid; i < 1024; i += blockDim.x) s[i] = 0;
    let mut kb = KB::new("block_stride");
    let s = kb.shared("s", &[1024]);
    let i = kb.local("i");
    let w = kb.wr_val(s, vec![l(i)], n(0), 2);
    let lp = for_(i, tid(), lt(l(i), n(1024)), plus(l(i), bdim()), vec![w], 1);
    assert_verdict(&run(&kb.body(vec![lp])), Verdict::RaceFree);
}

/// Bitonic sort inner step: for (j = k/2; j > 0; j >>= 1) { ixj = tid ^ j; if (ixj > tid) swap(s[tid], s[ixj]); sync }
fn bitonic(with_barrier: bool) -> Kernel {
    let mut kb = KB::new("bitonic");
    let s = kb.shared("s", &[1024]);
    let kp = kb.param("k");
    let j = kb.local("j");
    let ixj = kb.local("ixj");
    let (r1, v1) = kb.rd(s, vec![tid()], 4);
    let (r2, v2) = kb.rd(s, vec![l(ixj)], 4);
    let w1 = kb.wr_val(s, vec![tid()], v2, 5);
    let w2 = kb.wr_val(s, vec![l(ixj)], v1, 5);
    let mut body = vec![
        set(ixj, b(BinOp::BitXor, tid(), l(j))),
        if_(b(BinOp::Gt, l(ixj), tid()), vec![r1, r2, w1, w2], vec![], 3),
    ];
    if with_barrier {
        body.push(sync(6));
    }
    let lp = for_(
        j,
        b(BinOp::Div, kp, n(2)),
        b(BinOp::Gt, l(j), n(0)),
        b(BinOp::Shr, l(j), n(1)),
        body,
        2,
    );
    kb.body(vec![lp])
}

#[test]
fn bitonic_xor_partner_with_barrier_is_race_free() {
    assert_verdict(&run(&bitonic(true)), Verdict::RaceFree);
}

#[test]
fn bitonic_without_barrier_is_racy() {
    assert_verdict(&run(&bitonic(false)), Verdict::Racy);
}

/// Blelloch up-sweep: offset = 1; for (d = n>>1; d > 0; d >>= 1) { sync; if (tid < d) {
/// ai = offset*(2*tid+1)-1; bi = offset*(2*tid+2)-1; s[bi] += s[ai]; } offset *= 2; }
fn blelloch(with_barrier: bool) -> Kernel {
    let mut kb = KB::new("scan");
    let s = kb.shared("s", &[2048]);
    let np = kb.param("n");
    let d = kb.local("d");
    let off = kb.local("offset");
    let ai = kb.local("ai");
    let bi = kb.local("bi");
    let (r1, v1) = kb.rd(s, vec![l(bi)], 5);
    let (r2, v2) = kb.rd(s, vec![l(ai)], 5);
    let w = kb.wr_val(s, vec![l(bi)], plus(v1, v2), 5);
    let mut body = vec![];
    if with_barrier {
        body.push(sync(3));
    }
    body.push(if_(
        lt(tid(), l(d)),
        vec![
            set(
                ai,
                minus(times(l(off), plus(times(n(2), tid()), n(1))), n(1)),
            ),
            set(
                bi,
                minus(times(l(off), plus(times(n(2), tid()), n(2))), n(1)),
            ),
            r1,
            r2,
            w,
        ],
        vec![],
        4,
    ));
    body.push(set(off, times(l(off), n(2))));
    let lp = for_(
        d,
        b(BinOp::Shr, np, n(1)),
        b(BinOp::Gt, l(d), n(0)),
        b(BinOp::Shr, l(d), n(1)),
        body,
        2,
    );
    kb.body(vec![set(off, n(1)), lp])
}

#[test]
fn blelloch_scan_with_barrier_is_race_free() {
    assert_verdict(&run(&blelloch(true)), Verdict::RaceFree);
}

#[test]
fn blelloch_scan_without_barrier_is_racy() {
    assert_verdict(&run(&blelloch(false)), Verdict::Racy);
}

/// Double buffering: cur = 0; for (i..) { buf[1-cur][tid] = buf[cur][tid+1]; sync; cur = 1 - cur; }
fn double_buffer(with_barrier: bool) -> Kernel {
    let mut kb = KB::new("double_buffer");
    let buf = kb.shared("buf", &[2, 257]);
    let np = kb.param("n");
    let i = kb.local("i");
    let cur = kb.local("cur");
    let (r, v) = kb.rd(buf, vec![l(cur), plus(tid(), n(1))], 3);
    let w = kb.wr_val(buf, vec![minus(n(1), l(cur)), tid()], v, 3);
    let mut body = vec![r, w];
    if with_barrier {
        body.push(sync(4));
    }
    body.push(set(cur, minus(n(1), l(cur))));
    let lp = for_(i, n(0), lt(l(i), np), plus(l(i), n(1)), body, 2);
    kb.body(vec![set(cur, n(0)), lp])
}

#[test]
fn double_buffering_with_barrier_is_race_free() {
    assert_verdict(&run(&double_buffer(true)), Verdict::RaceFree);
}

#[test]
fn double_buffering_without_barrier_is_racy() {
    assert_verdict(&run(&double_buffer(false)), Verdict::Racy);
}

/// Tiled matmul: for (t..) { As[ty][tx] = ..; Bs[ty][tx] = ..; sync1; for (k<16) sum += As[ty][k]*Bs[k][tx]; sync2; }
fn matmul(first: bool, second: bool) -> Kernel {
    let mut kb = KB::new("matmul");
    let a_s = kb.shared("As", &[16, 16]);
    let b_s = kb.shared("Bs", &[16, 16]);
    let np = kb.param("tiles");
    let t = kb.local("t");
    let k = kb.local("k");
    let tx = tid();
    let ty = tidy();
    let w1 = kb.wr(a_s, vec![ty.clone(), tx.clone()], 3);
    let w2 = kb.wr(b_s, vec![ty.clone(), tx.clone()], 4);
    let (r1, _) = kb.rd(a_s, vec![ty.clone(), l(k)], 7);
    let (r2, _) = kb.rd(b_s, vec![l(k), tx.clone()], 7);
    let inner = for_(k, n(0), lt(l(k), n(16)), plus(l(k), n(1)), vec![r1, r2], 6);
    let mut body = vec![w1, w2];
    if first {
        body.push(sync(5));
    }
    body.push(inner);
    if second {
        body.push(sync(8));
    }
    let lp = for_(t, n(0), lt(l(t), np), plus(l(t), n(1)), body, 2);
    let mut kern = kb.body(vec![lp]);
    kern.annotated_launch.block_dim = [Some(16), Some(16), Some(1)];
    kern
}

#[test]
fn tiled_matmul_with_two_barriers_is_race_free() {
    assert_verdict(&run(&matmul(true, true)), Verdict::RaceFree);
}

#[test]
fn tiled_matmul_without_either_barrier_is_racy() {
    let r = run(&matmul(true, false));
    assert_verdict(&r, Verdict::Racy);
    assert!(race_lines(&r).contains(&(3, 7)), "{:?}", race_lines(&r));
    let r = run(&matmul(false, true));
    assert_verdict(&r, Verdict::Racy);
}

// ---------------------------------------------------------------- global memory, blocks, warps

#[test]
fn different_blocks_race_on_global_memory_despite_barriers() {
    // if (tid == 0) a[0] = blockIdx.x;  sync;  (same block: one writer; different blocks: race)
    let mut kb = KB::new("cross_block");
    let a = kb.global("a");
    let w = kb.wr_val(a, vec![n(0)], bid(), 2);
    let body = vec![if_(b(BinOp::Eq, tid(), n(0)), vec![w], vec![], 1), sync(3)];
    let k = kb.body(body);
    let r = run(&k);
    assert_verdict(&r, Verdict::Racy);
    let f = &r.findings[0];
    assert_ne!(f.witness.thread_a.block_idx, f.witness.thread_b.block_idx);
    assert!(f.message.contains("different blocks"), "{}", f.message);

    let opts = CheckOptions {
        grid_checks: false,
        ..CheckOptions::default()
    };
    assert_verdict(&run_with(&k, &opts), Verdict::RaceFree);
}

#[test]
fn one_cell_per_block_is_race_free() {
    // if (tid == 0) a[blockIdx.x] = 1;
    let mut kb = KB::new("per_block");
    let a = kb.global("a");
    let w = kb.wr_val(a, vec![bid()], n(1), 2);
    let k = kb.body(vec![if_(b(BinOp::Eq, tid(), n(0)), vec![w], vec![], 1)]);
    assert_verdict(&run(&k), Verdict::RaceFree);
}

fn warp_exchange(partner: Expr) -> Kernel {
    // s[tid] = ..; __syncwarp(); .. = s[partner];
    let mut kb = KB::new("warp");
    let s = kb.shared("s", &[1024]);
    let w = kb.wr(s, vec![tid()], 1);
    let (r, _) = kb.rd(s, vec![partner], 3);
    kb.body(vec![w, syncwarp(2), r])
}

#[test]
fn syncwarp_orders_threads_of_one_warp_only() {
    // Partner in the same warp (tid ^ 1): ordered by __syncwarp.
    let same = warp_exchange(b(BinOp::BitXor, tid(), n(1)));
    assert_verdict(&run(&same), Verdict::RaceFree);
    // Partner 32 threads away: another warp, not ordered.
    let other = warp_exchange(b(BinOp::Rem, plus(tid(), n(32)), bdim()));
    assert_verdict(&run(&other), Verdict::Racy);
}

// ---------------------------------------------------------------- divergence

#[test]
fn barrier_under_thread_dependent_if_is_divergent() {
    let mut kb = KB::new("div_if");
    let k = kb_body(
        &mut kb,
        vec![if_(lt(tid(), n(16)), vec![sync(2)], vec![], 1)],
    );
    let r = run(&k);
    assert_verdict(&r, Verdict::Divergent);
    let f = &r.findings[0];
    assert_eq!(f.kind, FindingKind::BarrierDivergence);
    assert_eq!(line_of(f.span), 2);
    assert_eq!(
        line_of(f.related[0].span),
        1,
        "the related span is the condition"
    );
    let (a, b) = (
        f.witness.thread_a.thread_idx[0],
        f.witness.thread_b.thread_idx[0],
    );
    assert!(a < 16 && b >= 16, "A reaches, B does not: {:?}", f.witness);
}

fn kb_body(kb: &mut KB, body: Vec<Stmt>) -> Kernel {
    let mut k = std::mem::replace(kb, KB::new("x")).body(body);
    k.name = "k".into();
    k
}

#[test]
fn barrier_under_uniform_if_is_not_divergent() {
    let mut kb = KB::new("uniform_if");
    let np = kb.param("n");
    let k = kb_body(
        &mut kb,
        vec![
            if_(b(BinOp::Eq, bid(), n(0)), vec![sync(2)], vec![], 1),
            if_(lt(n(3), np), vec![sync(4)], vec![], 3),
        ],
    );
    let r = run(&k);
    assert_verdict(&r, Verdict::RaceFree);
    assert_eq!(r.queries, 0, "uniform guards need no question");
}

#[test]
fn barriers_in_both_branches_of_a_thread_dependent_if_are_divergent() {
    let mut kb = KB::new("both");
    let k = kb_body(
        &mut kb,
        vec![if_(lt(tid(), n(16)), vec![sync(2)], vec![sync(3)], 1)],
    );
    let r = run(&k);
    assert_verdict(&r, Verdict::Divergent);
    let mut lines: Vec<u32> = r.findings.iter().map(|f| line_of(f.span)).collect();
    lines.sort();
    assert_eq!(lines, vec![2, 3]);
}

#[test]
fn early_return_on_thread_id_makes_later_barrier_divergent() {
    let mut kb = KB::new("ret");
    let np = kb.param("n");
    let k = kb_body(
        &mut kb,
        vec![
            if_(
                b(BinOp::Ge, tid(), np),
                vec![Stmt::Return { span: sp(2) }],
                vec![],
                1,
            ),
            sync(3),
        ],
    );
    let r = run(&k);
    assert_verdict(&r, Verdict::Divergent);
    assert_eq!(line_of(r.findings[0].span), 3);
    assert_eq!(line_of(r.findings[0].related[0].span), 2);
}

#[test]
fn thread_dependent_trip_count_around_barrier_is_divergent() {
    // for (i = 0; i < tid; i++) sync;
    let mut kb = KB::new("trip");
    let i = kb.local("i");
    let lp = for_(i, n(0), lt(l(i), tid()), plus(l(i), n(1)), vec![sync(2)], 1);
    let k = kb_body(&mut kb, vec![lp]);
    assert_verdict(&run(&k), Verdict::Divergent);
}

#[test]
fn uniform_trip_count_around_barrier_is_fine() {
    let mut kb = KB::new("trip_ok");
    let i = kb.local("i");
    let np = kb.param("n");
    let lp = for_(i, n(0), lt(l(i), np), plus(l(i), n(1)), vec![sync(2)], 1);
    let k = kb_body(&mut kb, vec![lp]);
    assert_verdict(&run(&k), Verdict::RaceFree);
}

// ---------------------------------------------------------------- unknowns and verdicts

#[test]
fn solver_unknown_is_never_race_free() {
    // Race-free, but only the solver can tell (`s[2*tid]` against `s[2*tid + 1]`).
    let mut kb = KB::new("halves");
    let s = kb.shared("s", &[512]);
    let w = kb.wr(s, vec![times(n(2), tid())], 1);
    let (rd, _) = kb.rd(s, vec![plus(times(n(2), tid()), n(1))], 2);
    let k = kb.body(vec![w, rd]);
    assert_verdict(&run(&k), Verdict::RaceFree);
    let r = check_kernel(&file(), &k, &CheckOptions::default(), &mut |_| {
        Answer::Unknown("timeout".into())
    });
    assert_verdict(&r, Verdict::Unknown);
    assert!(
        r.reason.as_deref().unwrap_or("").contains("timeout"),
        "{:?}",
        r.reason
    );
}

#[test]
fn undecided_pairs_of_one_array_are_counted_once_in_the_reason() {
    // Four accesses to `s`, three to `t`: several pairs each, all left undecided.
    let mut kb = KB::new("many");
    let s = kb.shared("s", &[512]);
    let t = kb.shared("t", &[512]);
    let mut body = Vec::new();
    for k in 0..4 {
        body.push(kb.wr(s, vec![plus(times(n(4), tid()), n(k))], 1 + k as u32));
    }
    for k in 0..3 {
        body.push(kb.wr(t, vec![plus(times(n(3), tid()), n(k))], 10 + k as u32));
    }
    let k = kb.body(body);
    let plan = plan_kernel(&file(), &k, &CheckOptions::default());
    let queries = plan.queries.len();
    assert!(queries >= 4, "{queries}");
    let mut answers: Vec<Answer> = (0..queries)
        .map(|_| Answer::Unknown("timeout".into()))
        .collect();
    answers.pop();
    let r = finish_kernel(&plan, answers, 0.0);
    assert_verdict(&r, Verdict::Unknown);
    let why = r.reason.unwrap_or_default();
    // One note per array and reason, with the number of pairs; the last pair got no answer.
    assert_eq!(why.matches("could not decide").count(), 2, "{why}");
    assert!(why.contains("pairs of accesses to `s` (timeout)"), "{why}");
    assert!(why.contains("pairs of accesses to `t` (timeout)"), "{why}");
    assert!(
        why.contains("no answer for a pair of accesses to `t`"),
        "{why}"
    );
}

#[test]
fn missing_answers_are_unknown_too() {
    let plan = plan_kernel(&file(), &neighbour(false), &CheckOptions::default());
    assert!(!plan.queries.is_empty());
    let r = finish_kernel(&plan, vec![], 1.0);
    assert_verdict(&r, Verdict::Unknown);
}

#[test]
fn index_from_loaded_data_gives_a_possible_finding() {
    // s[perm[tid]] = 0;
    let mut kb = KB::new("perm");
    let perm = kb.global("perm");
    let s = kb.shared("s", &[256]);
    let (r, v) = kb.rd(perm, vec![tid()], 1);
    let w = kb.wr_val(s, vec![v], n(0), 2);
    let rep = run(&kb.body(vec![r, w]));
    assert_verdict(&rep, Verdict::Racy);
    let f = &rep.findings[0];
    assert_eq!(f.confidence, Confidence::Possible);
    assert!(
        f.confidence_reason.contains("perm"),
        "{}",
        f.confidence_reason
    );
}

#[test]
fn opaque_effect_on_an_array_makes_the_verdict_unknown() {
    let mut kb = KB::new("opaque");
    let s = kb.shared("s", &[256]);
    let k = kb.body(vec![Stmt::Opaque(Opaque {
        reason: "a call to `g` without a body".into(),
        span: sp(1),
        arrays: vec![s],
        locals: vec![],
        may_sync: false,
        starts_threads: false,
        reads_only: false,
    })]);
    let r = run(&k);
    assert_verdict(&r, Verdict::Unknown);
    assert!(
        r.reason.as_deref().unwrap_or("").contains("`s`"),
        "{:?}",
        r.reason
    );
    // And says where the unmodelled code is.
    assert_eq!(
        r.unmodelled,
        vec![cudarace_ir::Unmodelled {
            span: sp(1),
            what: "a call to `g` without a body".into(),
        }]
    );
}

#[test]
fn an_unmodelled_load_leaves_an_array_nothing_writes_alone() {
    // A load through a pointer whose target is unknown races only with a write: over an
    // array that nothing in the kernel writes it changes no verdict, over a written one it
    // makes the verdict unknown.
    let load = |arrays: Vec<ArrayId>| {
        Stmt::Opaque(Opaque {
            reason: "read through a pointer with an unknown target".into(),
            span: sp(1),
            arrays,
            locals: vec![],
            may_sync: false,
            starts_threads: false,
            reads_only: true,
        })
    };
    let mut kb = KB::new("load_only");
    let table = kb.global("table");
    let k = kb.body(vec![load(vec![table])]);
    assert_verdict(&run(&k), Verdict::RaceFree);

    let mut kb = KB::new("load_and_store");
    let table = kb.global("table");
    let out = kb.global("out");
    let store = kb.wr(out, vec![plus(times(bid(), bdim()), tid())], 2);
    let k = kb.body(vec![load(vec![table, out]), store]);
    let r = run(&k);
    assert_verdict(&r, Verdict::Unknown);
    let reason = r.reason.as_deref().unwrap_or("");
    assert!(
        reason.contains("`out`") && !reason.contains("`table`"),
        "{reason}"
    );
}

#[test]
fn unsupported_kernels_are_not_checked() {
    let mut k = neighbour(false);
    k.unsupported = Some("recursion".into());
    let r = run(&k);
    assert_verdict(&r, Verdict::Unsupported);
    assert_eq!(r.queries, 0);
}

#[test]
fn launch_assumption_is_reported() {
    let r = run(&neighbour(true));
    assert_eq!(
        r.assumed_launch,
        "blockDim=(1..1024, 1, 1) gridDim=(symbolic, 1, 1)"
    );
}

#[test]
fn query_keys_do_not_depend_on_unrelated_code() {
    let plan1 = plan_kernel(&file(), &neighbour(false), &CheckOptions::default());
    // Same pair, with an unrelated loop over another array in front.
    let mut kb = KB::new("neighbour");
    let s = kb.shared("s", &[257]);
    let other = kb.shared("t", &[4]);
    let i = kb.local("i");
    let (rt, _) = kb.rd(other, vec![l(i)], 0);
    let lp = for_(i, n(0), lt(l(i), n(4)), plus(l(i), n(1)), vec![rt], 0);
    let w = kb.wr(s, vec![tid()], 1);
    let (r, _) = kb.rd(s, vec![plus(tid(), n(1))], 3);
    let plan2 = plan_kernel(&file(), &kb.body(vec![lp, w, r]), &CheckOptions::default());
    let keys1: Vec<u64> = plan1.queries.iter().map(|q| q.key()).collect();
    let keys2: Vec<u64> = plan2.queries.iter().map(|q| q.key()).collect();
    assert!(
        keys1.iter().all(|k| keys2.contains(k)),
        "{:#?}\n{:#?}",
        plan1.queries,
        plan2.queries
    );
}

#[test]
fn unknown_values_keep_their_uniformity() {
    // if (f_uniform()) sync;  — not divergent.  if (f_per_thread()) sync; — possibly divergent.
    let mut kb = KB::new("unknowns");
    let u = kb.unknown(true);
    let k = kb_body(&mut kb, vec![if_(u, vec![sync(2)], vec![], 1)]);
    assert_verdict(&run(&k), Verdict::RaceFree);

    let mut kb = KB::new("unknowns");
    let u = kb.unknown(false);
    let k = kb_body(&mut kb, vec![if_(u, vec![sync(2)], vec![], 1)]);
    // Without the plausibility assumptions: this kernel reads no thread index, so
    // `single-block-without-launch` would launch it with one thread per block, and the
    // divergence would be conditional on more.
    let opts = CheckOptions {
        assumptions: assumptions::AssumptionSwitches::NONE,
        ..CheckOptions::default()
    };
    let r = run_with(&k, &opts);
    assert_verdict(&r, Verdict::Divergent);
    assert_eq!(r.findings[0].confidence, Confidence::Possible);
    assert!(
        r.findings[0].confidence_reason.contains("f()"),
        "{}",
        r.findings[0].confidence_reason
    );
}

#[test]
fn long_chains_of_conditional_updates_stay_tractable() {
    // x = 0; 40 times: if (tid > i) x = x * 3 + i;  s[x] = 0;  — the merged value would double
    // in size per branch; it is cut off into an unknown instead.
    let mut kb = KB::new("chain");
    let s = kb.shared("s", &[64]);
    let x = kb.local("x");
    let mut body = vec![set(x, n(0))];
    for i in 0..40 {
        body.push(if_(
            b(BinOp::Gt, tid(), n(i)),
            vec![set(x, plus(times(l(x), n(3)), n(i)))],
            vec![],
            1,
        ));
    }
    body.push(kb.wr_val(s, vec![l(x)], n(0), 2));
    let k = kb.body(body);
    let r = run(&k);
    assert_verdict(&r, Verdict::Racy);
    assert_eq!(r.findings[0].confidence, Confidence::Possible);
    assert!(
        r.findings[0].confidence_reason.contains("too complex"),
        "{}",
        r.findings[0].confidence_reason
    );
}

#[test]
fn grid_sync_orders_blocks_and_syncthreads_does_not() {
    // if (tid == 0 && bid == 0) a[0] = 1;  <barrier>;  .. = a[0];
    let build = |grid: bool| {
        let mut kb = KB::new("publish");
        let a = kb.global("a");
        let w = kb.wr_val(a, vec![n(0)], n(1), 2);
        let (r, _) = kb.rd(a, vec![n(0)], 4);
        let first = b(
            BinOp::And,
            b(BinOp::Eq, tid(), n(0)),
            b(BinOp::Eq, bid(), n(0)),
        );
        let kind = if grid {
            BarrierKind::Grid
        } else {
            BarrierKind::Block
        };
        kb.body(vec![
            if_(first, vec![w], vec![], 1),
            Stmt::Barrier(Barrier { kind, span: sp(3) }),
            r,
        ])
    };
    assert_verdict(&run(&build(true)), Verdict::RaceFree);
    let r = run(&build(false));
    assert_verdict(&r, Verdict::Racy);
    assert_ne!(
        r.findings[0].witness.thread_a.block_idx,
        r.findings[0].witness.thread_b.block_idx
    );
}

#[test]
fn thread_dependent_break_skips_later_iterations_barriers() {
    // for (i = 0; i < n; i++) { sync; if (tid == i) break; }  — divergent in the next iteration.
    let build = |cond: Expr| {
        let mut kb = KB::new("leave");
        let np = kb.param("n");
        let i = kb.local("i");
        let cond = match cond {
            Expr::Int(0) => b(BinOp::Eq, np.clone(), n(0)),
            c => c,
        };
        let body = vec![
            sync(2),
            if_(cond, vec![Stmt::Break { span: sp(4) }], vec![], 3),
        ];
        let lp = for_(i, n(0), lt(l(i), np), plus(l(i), n(1)), body, 1);
        kb.body(vec![lp])
    };
    let r = run(&build(b(BinOp::Eq, tid(), n(5))));
    assert_verdict(&r, Verdict::Divergent);
    assert_eq!(line_of(r.findings[0].span), 2);
    assert_eq!(
        line_of(r.findings[0].related[0].span),
        4,
        "the related span is the break"
    );
    // A uniform break is fine.
    assert_verdict(&run(&build(n(0))), Verdict::RaceFree);
}

#[test]
fn huge_intervals_are_capped_and_never_race_free() {
    // 120 writes s[tid * 128 + i] in one interval: 7260 pairs, more than the cap.
    let mut kb = KB::new("unrolled");
    let s = kb.shared("s", &[1 << 20]);
    let body: Vec<Stmt> = (0..120)
        .map(|i| kb.wr(s, vec![plus(times(tid(), n(128)), n(i))], 1))
        .collect();
    let k = kb.body(body);
    let t0 = std::time::Instant::now();
    let plan = plan_kernel(&file(), &k, &CheckOptions::default());
    assert!(
        t0.elapsed().as_secs() < 30,
        "planning took {:?}",
        t0.elapsed()
    );
    assert!(plan.queries.len() <= 3000);
    let answers = vec![Answer::Unsat; plan.queries.len()];
    let r = finish_kernel(&plan, answers, 0.0);
    assert_verdict(&r, Verdict::Unknown);
    assert!(
        r.reason.as_deref().unwrap_or("").contains("pairs"),
        "{:?}",
        r.reason
    );
}

#[test]
fn undecided_divergence_is_listed_when_races_take_priority() {
    // A race, and a barrier under a thread-dependent condition whose query is left undecided.
    let mut kb = KB::new("mixed");
    let s = kb.shared("s", &[64]);
    let w = kb.wr(s, vec![n(0)], 1);
    let k = kb.body(vec![w, if_(lt(tid(), n(3)), vec![sync(3)], vec![], 2)]);
    let plan = plan_kernel(&file(), &k, &CheckOptions::default());
    // Race questions first, then the divergence question (plan order): leave the last undecided.
    let mut answers: Vec<Answer> = plan
        .queries
        .iter()
        .map(|q| solve(q, &Limits::default()))
        .collect();
    assert!(answers.len() >= 2);
    let last = answers.len() - 1;
    answers[last] = Answer::Unknown("timeout".into());
    let r = finish_kernel(&plan, answers, 0.0);
    assert_verdict(&r, Verdict::Racy);
    let why = r.reason.unwrap_or_default();
    assert!(
        why.contains("could not decide the divergence of a __syncthreads()"),
        "{why}"
    );
}

/// `depth` nested loops, each reading and writing `s[tid]` (and synchronizing when `sync`).
fn nested_loops(depth: usize, sync_each: bool) -> Kernel {
    let mut kb = KB::new("nested");
    let s = kb.shared("s", &[1024]);
    let np = kb.param("n");
    let mut body: Vec<Stmt> = Vec::new();
    for level in (0..depth).rev() {
        let i = kb.local(&format!("i{level}"));
        let line = 10 * level as u32 + 1;
        let (r, _) = kb.rd(s, vec![tid()], line + 1);
        let w = kb.wr(s, vec![tid()], line + 2);
        let mut inner = vec![r, w];
        if sync_each {
            inner.push(sync(line + 3));
        }
        inner.append(&mut body);
        body = vec![for_(
            i,
            n(0),
            lt(l(i), np.clone()),
            plus(l(i), n(1)),
            inner,
            line,
        )];
    }
    kb.body(body)
}

#[test]
fn nested_loops_stay_linear() {
    // Each loop used to copy every value created in its body for "the next iteration",
    // including the copies its inner loops made: 2^depth values.
    for sync_each in [false, true] {
        let k = nested_loops(16, sync_each);
        let p = crate::protocol::build(&k);
        assert!(p.vars.len() < 2_000, "{} values", p.vars.len());
        let r = run(&k);
        assert_verdict(&r, Verdict::RaceFree);
    }
}

#[test]
fn query_cap_counts_queries_not_pruned_pairs() {
    // 80 writes: 3240 pairs. Disjoint by shape (`s[tid + k*T]`): no query, race-free.
    let mut kb = KB::new("rows");
    let s = kb.shared("s", &[1 << 20]);
    let ws: Vec<Stmt> = (0..80)
        .map(|k| kb.wr(s, vec![plus(tid(), times(n(k), bdim()))], k as u32 + 1))
        .collect();
    let plan = plan_kernel(&file(), &kb.body(ws), &CheckOptions::default());
    assert!(plan.queries.is_empty());
    assert_verdict(&finish_kernel(&plan, vec![], 1.0), Verdict::RaceFree);
    // Only the solver can tell (`s[2*tid + 2*k]`): the cap makes the verdict unknown.
    let mut kb = KB::new("evens");
    let s = kb.shared("s", &[1 << 20]);
    let ws: Vec<Stmt> = (0..80)
        .map(|k| kb.wr(s, vec![plus(times(n(2), tid()), n(2 * k))], k as u32 + 1))
        .collect();
    let plan = plan_kernel(&file(), &kb.body(ws), &CheckOptions::default());
    assert_eq!(plan.queries.len(), 3000);
    let answers = vec![Answer::Unsat; plan.queries.len()];
    let r = finish_kernel(&plan, answers, 1.0);
    assert_verdict(&r, Verdict::Unknown);
    assert!(r.reason.unwrap_or_default().contains("3240 pairs"));
}

#[test]
fn divergence_queries_are_solved_first() {
    // A race (s[tid] against s[tid + 1]) planned before a barrier under a per-thread condition.
    let mut kb = KB::new("order");
    let s = kb.shared("s", &[257]);
    let w = kb.wr(s, vec![tid()], 1);
    let (r, _) = kb.rd(s, vec![plus(tid(), n(1))], 2);
    let u = kb.unknown(false);
    let k = kb_body(&mut kb, vec![w, r, if_(u, vec![sync(4)], vec![], 3)]);
    let plan = plan_kernel(&file(), &k, &CheckOptions::default());
    let order = plan.solve_order();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..plan.queries.len()).collect::<Vec<_>>());
    let is_divergence = |i: usize| matches!(plan.meta.items[i], Item::Divergence { .. });
    assert!(plan
        .meta
        .items
        .iter()
        .any(|i| matches!(i, Item::Race { .. })));
    assert!(is_divergence(order[0]), "{order:?}");
    // Every divergence query comes before every race query.
    let first_race = order.iter().position(|&i| !is_divergence(i));
    if let Some(p) = first_race {
        assert!(order[p..].iter().all(|&i| !is_divergence(i)), "{order:?}");
    }
}

// ---------------------------------------------------------------- time budget and large terms

/// A kernel whose planning is stopped (its time budget is spent, or the check was cancelled)
/// is `unknown` with the reason, never race-free; the same kernel planned to the end is
/// race-free (the barrier separates its accesses).
#[test]
fn planning_stopped_by_the_budget_is_unknown_never_clean() {
    let k = neighbour(true);
    let limits = Limits {
        timeout_ms: 10_000,
        rlimit: 50_000_000,
    };
    let full = check_kernel(&file(), &k, &CheckOptions::default(), &mut |q| {
        solve(q, &limits)
    });
    assert_verdict(&full, Verdict::RaceFree);
    let plan = plan_kernel_until(&file(), &k, &CheckOptions::default(), &|| Some("kernel's"));
    let answers: Vec<Answer> = plan.queries.iter().map(|q| solve(q, &limits)).collect();
    let cut = finish_kernel(&plan, answers, 0.0);
    assert_verdict(&cut, Verdict::Unknown);
    let reason = cut.reason.unwrap_or_default();
    assert!(
        reason.contains("the kernel's time budget ran out"),
        "{reason}"
    );
}

/// Wherever planning is stopped (symbolic execution, aligning the barrier intervals, encoding
/// the pairs), the kernel is `unknown` with the budget named, never race-free: every stop point
/// is tried, by a stop function that fires from its `n`-th call on.
#[test]
fn planning_stopped_at_any_point_is_unknown_never_clean() {
    let k = neighbour(true);
    let limits = Limits {
        timeout_ms: 10_000,
        rlimit: 50_000_000,
    };
    let calls = std::cell::Cell::new(0usize);
    let counting = || {
        calls.set(calls.get() + 1);
        None
    };
    plan_kernel_until(&file(), &k, &CheckOptions::default(), &counting);
    let total = calls.get();
    assert!(total >= 3, "{total} stop points");
    for n in 0..total {
        let seen = std::cell::Cell::new(0usize);
        let stop = || {
            seen.set(seen.get() + 1);
            (seen.get() > n).then_some("file's")
        };
        let plan = plan_kernel_until(&file(), &k, &CheckOptions::default(), &stop);
        let answers: Vec<Answer> = plan.queries.iter().map(|q| solve(q, &limits)).collect();
        let cut = finish_kernel(&plan, answers, 0.0);
        assert_verdict(&cut, Verdict::Unknown);
        let reason = cut.reason.unwrap_or_default();
        assert!(
            reason.contains("the file's time budget ran out"),
            "{n}: {reason}"
        );
    }
}

/// A term built by merging branches shares its parts: `t(i+1) = ite(c_i, t(i), t(i) + 1)` has
/// 2^60 nodes as a tree and about 240 as a graph. Renaming, simplifying, visiting its
/// variables, hashing it and comparing it with itself look at each shared part once (a walk of
/// the tree would never end).
#[test]
fn traversals_of_shared_terms_are_linear_in_the_graph() {
    use crate::terms::{add, int, ite, lt};
    use std::hash::Hash;
    let mut t = Term::Var("$x".into());
    for i in 0..60 {
        let c = lt(Term::Var(format!("%c{i}").into()), int(i));
        t = ite(c, t.clone(), add(t, int(1)));
    }
    let renamed = crate::encode::rename(crate::encode::Scope::SameBlock { warp: None }, 'A', &t);
    let mut vars = std::collections::BTreeSet::new();
    crate::terms::collect_vars(&renamed, &mut vars);
    assert!(vars.contains("A.x") && vars.contains("c59") && !vars.contains("$x"));
    assert_eq!(vars.len(), 61);
    let simplified = crate::terms::simplify(&renamed);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    simplified.hash(&mut h);
    assert!(crate::terms::mentions_var(&simplified, "A.x"));
    assert!(crate::terms::term_size_exceeds(&simplified, 10_000));
}
