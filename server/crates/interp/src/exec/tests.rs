//! The interpreter on hand-built IR (independent of the front end).

use super::*;
use cudarace_ir::{
    Array, ArrayId, Dim, FileId, LaunchConfig, Local, LocalId, Opaque, Param, ScalarType, UnOp,
    UnknownId, UnknownValue,
};

struct Kb {
    k: Kernel,
    next_access: u32,
    next_span: u32,
}

fn tid() -> Expr {
    Expr::Builtin(Builtin::ThreadIdx(Dim::X))
}
fn bdim() -> Expr {
    Expr::Builtin(Builtin::BlockDim(Dim::X))
}
fn bid() -> Expr {
    Expr::Builtin(Builtin::BlockIdx(Dim::X))
}
fn int(v: i64) -> Expr {
    Expr::Int(v)
}
fn add(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Add, a, b)
}
fn lt(a: Expr, b: Expr) -> Expr {
    Expr::bin(BinOp::Lt, a, b)
}

impl Kb {
    fn new() -> Self {
        Kb {
            k: Kernel {
                name: "k".into(),
                span: Span::default(),
                name_span: Span::default(),
                params: Vec::new(),
                arrays: Vec::new(),
                locals: Vec::new(),
                unknowns: Vec::new(),
                body: Vec::new(),
                launch_bounds: None,
                launch_bounds_param: None,
                annotated_launch: LaunchConfig::default(),
                unsupported: None,
                volatile_arrays: vec![],
                library_notes: vec![],
            },
            next_access: 0,
            next_span: 0,
        }
    }
    fn span(&mut self) -> Span {
        self.next_span += 10;
        Span::new(
            FileId(0),
            self.next_span as usize,
            self.next_span as usize + 5,
        )
    }
    fn shared(&mut self, name: &str, size: i64) -> ArrayId {
        let span = self.span();
        self.k.arrays.push(Array {
            name: name.into(),
            space: MemSpace::Shared,
            origin: ArrayOrigin::SharedDecl,
            elem: ScalarType::INT,
            dims: vec![Some(int(size))],
            span,
        });
        ArrayId(self.k.arrays.len() as u32 - 1)
    }
    fn global(&mut self, name: &str) -> ArrayId {
        let span = self.span();
        self.k.params.push(Param {
            name: name.into(),
            ty: ScalarType::Pointer,
            span,
            is_template: false,
            template_index: None,
            member: false,
            value: None,
        });
        self.k.arrays.push(Array {
            name: name.into(),
            space: MemSpace::Global,
            origin: ArrayOrigin::Param(self.k.params.len() as u32 - 1),
            elem: ScalarType::INT,
            dims: vec![None],
            span,
        });
        ArrayId(self.k.arrays.len() as u32 - 1)
    }
    fn scalar_param(&mut self, name: &str) -> Expr {
        let span = self.span();
        self.k.params.push(Param {
            name: name.into(),
            ty: ScalarType::INT,
            span,
            is_template: false,
            template_index: None,
            member: false,
            value: None,
        });
        Expr::Param(cudarace_ir::ParamId(self.k.params.len() as u32 - 1))
    }
    fn local(&mut self, name: &str) -> LocalId {
        let span = self.span();
        self.k.locals.push(Local {
            name: name.into(),
            ty: ScalarType::INT,
            span,
        });
        LocalId(self.k.locals.len() as u32 - 1)
    }
    fn access(
        &mut self,
        array: ArrayId,
        idx: Expr,
        mode: AccessMode,
        value: Option<Expr>,
    ) -> (Stmt, AccessId) {
        let id = AccessId(self.next_access);
        self.next_access += 1;
        let span = self.span();
        (
            Stmt::Access(Access {
                id,
                array,
                mode,
                index: vec![idx],
                flat: false,
                value,
                span,
            }),
            id,
        )
    }
    fn read(&mut self, array: ArrayId, idx: Expr) -> (Stmt, AccessId) {
        self.access(array, idx, AccessMode::Read, None)
    }
    fn write(&mut self, array: ArrayId, idx: Expr, value: Expr) -> Stmt {
        self.access(array, idx, AccessMode::Write, Some(value)).0
    }
    fn sync(&mut self) -> Stmt {
        let span = self.span();
        Stmt::Barrier(Barrier {
            kind: BarrierKind::Block,
            span,
        })
    }
    fn syncwarp(&mut self) -> Stmt {
        let span = self.span();
        Stmt::Barrier(Barrier {
            kind: BarrierKind::Warp { mask: None },
            span,
        })
    }
    fn if_(&mut self, cond: Expr, then_branch: Block, else_branch: Block) -> Stmt {
        let span = self.span();
        Stmt::If {
            cond,
            then_branch,
            else_branch,
            span,
        }
    }
    fn assign(&mut self, local: LocalId, value: Expr) -> Stmt {
        let span = self.span();
        Stmt::Assign { local, value, span }
    }
    fn ret(&mut self) -> Stmt {
        Stmt::Return { span: self.span() }
    }
}

fn launch(bx: u64, gx: u64) -> Launch {
    Launch::new([bx, 1, 1], [gx, 1, 1])
}

fn go(k: &Kernel, l: &Launch) -> RunReport {
    run(k, l, &Budget::default())
}

/// `s[tid] = tid; [__syncthreads();] for (st = 1; st < blockDim.x; st *= 2) { if (tid % (2*st) == 0)
/// s[tid] += s[tid + st]; [__syncthreads();] }`
fn reduction(with_barriers: bool) -> Kernel {
    let mut b = Kb::new();
    let s = b.shared("s", 16);
    let st = b.local("st");
    let mut body = vec![b.write(s, tid(), tid())];
    if with_barriers {
        body.push(b.sync());
    }
    let (r1, a1) = b.read(s, tid());
    let (r2, a2) = b.read(s, add(tid(), Expr::Local(st)));
    let w = b.write(s, tid(), add(Expr::Load(a1), Expr::Load(a2)));
    let cond = Expr::bin(
        BinOp::Eq,
        Expr::bin(
            BinOp::Rem,
            tid(),
            Expr::bin(BinOp::Mul, int(2), Expr::Local(st)),
        ),
        int(0),
    );
    let mut loop_body = vec![b.if_(cond, vec![r1, r2, w], vec![])];
    if with_barriers {
        loop_body.push(b.sync());
    }
    let init = vec![b.assign(st, int(1))];
    let step = vec![b.assign(st, Expr::bin(BinOp::Mul, Expr::Local(st), int(2)))];
    body.push(Stmt::Loop(Loop {
        kind: LoopKind::For,
        init,
        cond: Some(lt(Expr::Local(st), bdim())),
        cond_effects: vec![],
        step,
        body: loop_body,
        span: Span::default(),
    }));
    b.k.body = body;
    b.k
}

#[test]
fn reduction_without_barriers_races() {
    let k = reduction(false);
    let r = go(&k, &launch(8, 1));
    assert!(r.is_complete(), "{:?}", r.outcome);
    assert!(!r.races.is_empty());
    assert!(r.divergence.is_none());
    // The first race: thread 1 writes s[1] while thread 0 reads it, in interval 0.
    assert!(r.races.iter().any(|x| x.cell == 1
        && x.a.interval == 0
        && [x.a.thread[0], x.b.thread[0]].contains(&0)
        && [x.a.thread[0], x.b.thread[0]].contains(&1)));
}

#[test]
fn reduction_with_barriers_is_race_free_and_computes_the_sum() {
    let k = reduction(true);
    for bx in [1, 2, 4, 8] {
        let r = go(&k, &launch(bx, 2));
        assert!(r.is_complete(), "{:?}", r.outcome);
        assert!(r.races.is_empty(), "blockDim {bx}: {}", r.describe(""));
        assert!(r.divergence.is_none());
        let r2 = run(
            &k,
            &launch(bx, 2),
            &Budget {
                keep_log: true,
                ..Budget::default()
            },
        );
        assert_eq!(r2.log.len(), r2.accesses);
        // The first access of every thread is its write of s[tid], in interval 0.
        assert!(
            r2.log
                .iter()
                .filter(|a| a.event.mode == AccessMode::Write && a.event.interval == 0)
                .count()
                >= bx as usize
        );
        // Every thread passed 1 + log2(bx) barriers.
        let expect = 1 + (bx as f64).log2() as usize;
        assert!(r
            .barrier_sequences
            .iter()
            .all(|(_, _, seq)| seq.len() == expect));
        assert_eq!(r.barrier_sequences.len(), 2 * bx as usize);
    }
}

#[test]
fn one_thread_never_races() {
    let r = go(&reduction(false), &launch(1, 1));
    assert!(r.is_complete() && r.races.is_empty());
}

#[test]
fn barrier_under_thread_condition_diverges() {
    let mut b = Kb::new();
    let sync = b.sync();
    let s = b.if_(lt(tid(), int(2)), vec![sync], vec![]);
    b.k.body = vec![s];
    let r = go(&b.k, &launch(4, 1));
    let d = r.divergence.expect("divergence");
    assert_eq!(d.end_b, ThreadEnd::Exited);
    assert!(matches!(d.end_a, ThreadEnd::AtBarrier(_)));
    // With two threads the condition holds for both: no divergence.
    let r = go(&b.k, &launch(2, 1));
    assert!(r.is_complete() && r.divergence.is_none());
}

#[test]
fn barriers_in_both_branches_diverge() {
    let mut b = Kb::new();
    let (s1, s2) = (b.sync(), b.sync());
    let cond = Expr::bin(BinOp::Eq, Expr::bin(BinOp::Rem, tid(), int(2)), int(0));
    let s = b.if_(cond, vec![s1], vec![s2]);
    b.k.body = vec![s];
    let r = go(&b.k, &launch(2, 1));
    let d = r.divergence.expect("divergence");
    assert!(
        matches!((d.end_a, d.end_b), (ThreadEnd::AtBarrier(x), ThreadEnd::AtBarrier(y)) if x != y)
    );
}

#[test]
fn early_return_before_a_barrier_diverges_but_uniform_return_does_not() {
    let mut b = Kb::new();
    let ret = b.ret();
    let s = b.if_(Expr::bin(BinOp::Eq, tid(), int(3)), vec![ret], vec![]);
    let sync = b.sync();
    b.k.body = vec![s, sync];
    assert!(go(&b.k, &launch(4, 1)).divergence.is_some());
    assert!(go(&b.k, &launch(3, 1)).divergence.is_none());

    let mut b = Kb::new();
    let ret = b.ret();
    let s = b.if_(Expr::bin(BinOp::Eq, bid(), int(1)), vec![ret], vec![]);
    let sync = b.sync();
    b.k.body = vec![s, sync];
    let r = go(&b.k, &launch(4, 2));
    assert!(r.is_complete() && r.divergence.is_none());
}

#[test]
fn barrier_in_loop_with_thread_dependent_trip_count_diverges() {
    let mut b = Kb::new();
    let i = b.local("i");
    let sync = b.sync();
    let lp = Stmt::Loop(Loop {
        kind: LoopKind::For,
        init: vec![b.assign(i, int(0))],
        cond: Some(lt(Expr::Local(i), tid())),
        cond_effects: vec![],
        step: vec![b.assign(i, add(Expr::Local(i), int(1)))],
        body: vec![sync],
        span: Span::default(),
    });
    b.k.body = vec![lp];
    let r = go(&b.k, &launch(3, 1));
    let d = r.divergence.expect("divergence");
    assert_eq!(d.interval, 0);
    assert!(go(&b.k, &launch(1, 1)).divergence.is_none());
}

#[test]
fn global_memory_races_across_blocks_only_at_colliding_indices() {
    let mut b = Kb::new();
    let g = b.global("g");
    let gid = add(Expr::bin(BinOp::Mul, bid(), bdim()), tid());
    b.k.body = vec![b.write(g, gid, int(1))];
    assert!(go(&b.k, &launch(4, 2)).races.is_empty());

    let mut b = Kb::new();
    let g = b.global("g");
    b.k.body = vec![b.write(g, tid(), int(1))];
    let r = go(&b.k, &launch(4, 2));
    assert!(!r.races.is_empty());
    assert!(r
        .races
        .iter()
        .all(|x| x.a.block != x.b.block && x.a.thread == x.b.thread));
    // Barriers do not order blocks.
    let mut b = Kb::new();
    let g = b.global("g");
    let w = b.write(g, tid(), int(1));
    let sync = b.sync();
    let (rd, _) = b.read(g, Expr::bin(BinOp::BitXor, tid(), int(1)));
    b.k.body = vec![w, sync, rd];
    let r = go(&b.k, &launch(2, 1));
    assert!(r.races.is_empty(), "{}", r.describe(""));
    let r = go(&b.k, &launch(2, 2));
    assert!(!r.races.is_empty());
}

#[test]
fn atomics_race_only_with_plain_accesses() {
    let mut b = Kb::new();
    let s = b.shared("s", 4);
    let (a1, _) = b.access(s, int(0), AccessMode::Atomic, None);
    b.k.body = vec![a1];
    let r = go(&b.k, &launch(4, 1));
    assert!(r.is_complete() && r.races.is_empty());

    let mut b = Kb::new();
    let s = b.shared("s", 4);
    let (a1, _) = b.access(s, int(0), AccessMode::Atomic, None);
    let (rd, _) = b.read(s, int(0));
    b.k.body = vec![a1, rd];
    let r = go(&b.k, &launch(2, 1));
    assert!(r.races.iter().any(
        |x| (x.a.mode, x.b.mode) == (AccessMode::Atomic, AccessMode::Read)
            || (x.a.mode, x.b.mode) == (AccessMode::Read, AccessMode::Atomic)
    ));
}

#[test]
fn reads_do_not_race_and_same_thread_does_not_race() {
    let mut b = Kb::new();
    let s = b.shared("s", 4);
    let (r1, _) = b.read(s, int(0));
    let w = b.write(s, tid(), int(0));
    let (r2, _) = b.read(s, tid());
    b.k.body = vec![r1, w, r2];
    let r = go(&b.k, &launch(1, 1));
    assert!(r.races.is_empty());
    let r = go(&b.k, &launch(2, 1));
    // Thread 0 writes s[0] which thread 1 read.
    assert_eq!(r.races.len(), 1);
    assert_eq!(r.races[0].cell, 0);
}

#[test]
fn syncwarp_orders_threads_of_one_warp() {
    let mut b = Kb::new();
    let s = b.shared("s", 64);
    let w = b.write(s, tid(), tid());
    let sw = b.syncwarp();
    let (rd, _) = b.read(s, Expr::bin(BinOp::BitXor, tid(), int(1)));
    b.k.body = vec![w.clone(), sw, rd.clone()];
    let r = go(&b.k, &launch(8, 1));
    assert!(r.is_complete() && r.races.is_empty(), "{}", r.describe(""));
    // Without it the neighbours race.
    b.k.body = vec![w, rd];
    assert!(!go(&b.k, &launch(8, 1)).races.is_empty());
}

#[test]
fn syncwarp_does_not_order_different_warps() {
    let mut b = Kb::new();
    let s = b.shared("s", 64);
    let w = b.write(s, tid(), tid());
    let sw = b.syncwarp();
    // Thread t reads s[t ^ 32]: its partner is in the other warp.
    let (rd, _) = b.read(s, Expr::bin(BinOp::BitXor, tid(), int(32)));
    b.k.body = vec![w, sw, rd];
    let r = go(&b.k, &launch(64, 1));
    assert!(r.is_complete());
    assert!(!r.races.is_empty());
}

#[test]
fn values_read_steer_control_flow_exactly() {
    // v = s[0] (never written, initial memory) ; if (v == v0) s[tid] = 1 else s[0] = 1.
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    let v = b.local("v");
    let (rd, a) = b.read(s, int(1));
    let asg = b.assign(v, Expr::Load(a));
    let w_own = b.write(s, add(tid(), int(2)), int(1));
    let w_shared = b.write(s, int(0), int(1));
    let cond = Expr::bin(BinOp::Ge, Expr::Local(v), int(0));
    let i = b.if_(cond, vec![w_own], vec![w_shared]);
    b.k.body = vec![rd, asg, i];
    // Initial memory is small and non-negative: the own-cell branch runs, no race.
    let r = go(&b.k, &launch(4, 1));
    assert!(r.is_complete() && r.races.is_empty(), "{}", r.describe(""));
}

#[test]
fn unknown_values_only_matter_when_they_steer() {
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    b.k.unknowns.push(UnknownValue {
        reason: "rand()".into(),
        span: Span::default(),
        uniform: false,
        grid: false,
        distinct: None,
    });
    let unk = Expr::Unknown(UnknownId(0));
    // Storing an unknown value: the race on s[0] is still certain.
    b.k.body = vec![b.write(s, int(0), unk.clone())];
    let r = go(&b.k, &launch(2, 1));
    assert!(r.is_complete() && r.races.len() == 1);
    // An unknown index: inconclusive.
    b.k.body = vec![b.write(s, unk.clone(), int(0))];
    assert!(matches!(
        go(&b.k, &launch(2, 1)).outcome,
        Outcome::Inconclusive(_)
    ));
    // An unknown condition: inconclusive.
    let sync = b.sync();
    b.k.body = vec![b.if_(unk, vec![sync], vec![])];
    assert!(matches!(
        go(&b.k, &launch(2, 1)).outcome,
        Outcome::Inconclusive(_)
    ));
}

#[test]
fn opaque_statements_and_atomic_results_are_inconclusive_when_used() {
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    b.k.body = vec![Stmt::Opaque(Opaque {
        reason: "asm".into(),
        span: Span::default(),
        arrays: vec![s],
        locals: vec![],
        may_sync: true,
        starts_threads: false,
        reads_only: false,
    })];
    assert!(matches!(
        go(&b.k, &launch(2, 1)).outcome,
        Outcome::Inconclusive(_)
    ));

    // After an atomic the cell's contents are unknown; branching on them is inconclusive.
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    let (at, _) = b.access(s, int(0), AccessMode::Atomic, None);
    let (rd, a) = b.read(s, int(0));
    let w = b.write(s, tid(), int(1));
    let i = b.if_(Expr::bin(BinOp::Gt, Expr::Load(a), int(3)), vec![w], vec![]);
    let sync = b.sync();
    b.k.body = vec![at, sync, rd, i];
    assert!(matches!(
        go(&b.k, &launch(1, 1)).outcome,
        Outcome::Inconclusive(_)
    ));
}

#[test]
fn endless_loops_exhaust_the_budget() {
    let mut b = Kb::new();
    let lp = Stmt::Loop(Loop {
        kind: LoopKind::While,
        init: vec![],
        cond: None,
        cond_effects: vec![],
        step: vec![],
        body: vec![],
        span: Span::default(),
    });
    b.k.body = vec![lp];
    let r = run(
        &b.k,
        &launch(2, 1),
        &Budget {
            max_steps: 10_000,
            ..Budget::default()
        },
    );
    assert!(matches!(r.outcome, Outcome::Inconclusive(ref w) if w.contains("budget")));
}

#[test]
fn break_continue_and_do_while() {
    // i = 0; do { i = i + 1; if (i == 2) continue; if (i == 4) break; s[tid*8 + i] = 1; } while (i < 6);
    // Writes cells i = 1, 3 (2 skipped, loop left at 4).
    let mut b = Kb::new();
    let s = b.shared("s", 64);
    let i = b.local("i");
    let w = b.write(
        s,
        add(Expr::bin(BinOp::Mul, tid(), int(8)), Expr::Local(i)),
        int(1),
    );
    let cont = Stmt::Continue {
        span: Span::default(),
    };
    let brk = Stmt::Break {
        span: Span::default(),
    };
    let body = vec![
        b.assign(i, add(Expr::Local(i), int(1))),
        b.if_(
            Expr::bin(BinOp::Eq, Expr::Local(i), int(2)),
            vec![cont],
            vec![],
        ),
        b.if_(
            Expr::bin(BinOp::Eq, Expr::Local(i), int(4)),
            vec![brk],
            vec![],
        ),
        w,
    ];
    let lp = Stmt::Loop(Loop {
        kind: LoopKind::DoWhile,
        init: vec![],
        cond: Some(lt(Expr::Local(i), int(6))),
        cond_effects: vec![],
        step: vec![],
        body,
        span: Span::default(),
    });
    b.k.body = vec![b.assign(i, int(0)), lp];
    // Then every thread reads each cell 0..16 through its own access: races (one per access
    // pair) land exactly on the written cells 1, 3, 9, 11.
    for c in 0..16 {
        let (rd, _) = b.read(s, int(c));
        b.k.body.push(rd);
    }
    let r = go(&b.k, &launch(2, 1));
    assert!(r.is_complete(), "{:?}", r.outcome);
    let mut cells: Vec<i128> = r.races.iter().map(|x| x.cell).collect();
    cells.sort();
    cells.dedup();
    assert_eq!(cells, vec![1, 3, 9, 11]);
}

#[test]
fn out_of_bounds_and_unset_parameters_are_inconclusive() {
    let mut b = Kb::new();
    let s = b.shared("s", 4);
    // s[tid - 1] at tid = 0 wraps to UINT_MAX.
    b.k.body = vec![b.write(s, Expr::bin(BinOp::Sub, tid(), int(1)), int(0))];
    let r = go(&b.k, &launch(2, 1));
    assert!(matches!(r.outcome, Outcome::Inconclusive(ref w) if w.contains("out-of-bounds")));

    let mut b = Kb::new();
    let s = b.shared("s", 4);
    let n = b.scalar_param("n");
    let w = b.write(s, int(0), int(1));
    b.k.body = vec![b.if_(lt(tid(), n), vec![w], vec![])];
    assert!(matches!(
        go(&b.k, &launch(2, 1)).outcome,
        Outcome::Inconclusive(_)
    ));
    let mut l = launch(2, 1);
    l.params.insert("n".into(), 1);
    let r = go(&b.k, &l);
    assert!(r.is_complete() && r.races.is_empty());
    l.params.insert("n".into(), 2);
    assert_eq!(go(&b.k, &l).races.len(), 1);
}

#[test]
fn negation_and_not_in_conditions() {
    // if (!(tid < 1)) s[0] = 1;  → only threads ≥ 1 write: race iff blockDim ≥ 3.
    let mut b = Kb::new();
    let s = b.shared("s", 4);
    let w = b.write(s, int(0), int(1));
    b.k.body = vec![b.if_(Expr::un(UnOp::Not, lt(tid(), int(1))), vec![w], vec![])];
    assert!(go(&b.k, &launch(2, 1)).races.is_empty());
    assert!(!go(&b.k, &launch(3, 1)).races.is_empty());
}

#[test]
fn multi_dimensional_indices_flatten_row_major() {
    // tile[2][4]: thread t writes tile[t / 4][t % 4], then reads flat offset (t + 1) % 8.
    let mut b = Kb::new();
    let span = b.span();
    b.k.arrays.push(Array {
        name: "tile".into(),
        space: MemSpace::Shared,
        origin: ArrayOrigin::SharedDecl,
        elem: ScalarType::INT,
        dims: vec![Some(int(2)), Some(int(4))],
        span,
    });
    let tile = ArrayId(0);
    let w = Stmt::Access(Access {
        id: AccessId(0),
        array: tile,
        mode: AccessMode::Write,
        index: vec![
            Expr::bin(BinOp::Div, tid(), int(4)),
            Expr::bin(BinOp::Rem, tid(), int(4)),
        ],
        flat: false,
        value: Some(int(1)),
        span: b.span(),
    });
    let rd = Stmt::Access(Access {
        id: AccessId(1),
        array: tile,
        mode: AccessMode::Read,
        index: vec![Expr::bin(BinOp::Rem, add(tid(), int(1)), int(8))],
        flat: true,
        value: None,
        span: b.span(),
    });
    b.k.body = vec![w, rd];
    let r = go(&b.k, &launch(8, 1));
    assert!(r.is_complete());
    // Every cell is written by one thread and read by its left neighbour.
    let mut cells: Vec<i128> = r.races.iter().map(|x| x.cell).collect();
    cells.sort();
    cells.dedup();
    assert_eq!(cells.len(), 1, "races are deduplicated per access pair");
    let r = go(&b.k, &launch(1, 1));
    assert!(r.races.is_empty());
}

#[test]
fn syncwarp_does_not_order_a_lane_that_exited_before_it() {
    // if (tid == 7) { s[0] = 1; return; }  __syncwarp();  read s[0]
    // Thread 7 never takes part in the __syncwarp: its write races with the reads.
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    let w = b.write(s, int(0), int(1));
    let ret = b.ret();
    let i = b.if_(Expr::bin(BinOp::Eq, tid(), int(7)), vec![w, ret], vec![]);
    let sw = b.syncwarp();
    let (rd, _) = b.read(s, int(0));
    b.k.body = vec![i, sw, rd];
    let r = go(&b.k, &launch(8, 1));
    assert!(r.is_complete(), "{:?}", r.outcome);
    assert!(
        r.races
            .iter()
            .any(|x| x.a.thread[0] == 7 || x.b.thread[0] == 7),
        "{}",
        r.describe("")
    );

    // The same write by thread 0 before the __syncwarp all live lanes take part in, while thread 7
    // exits early without touching memory: ordered, no race.
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    let w = b.write(s, int(0), int(1));
    let ret = b.ret();
    let i = b.if_(Expr::bin(BinOp::Eq, tid(), int(7)), vec![ret], vec![]);
    let w0 = b.if_(Expr::bin(BinOp::Eq, tid(), int(0)), vec![w], vec![]);
    let sw = b.syncwarp();
    let (rd, _) = b.read(s, int(0));
    b.k.body = vec![i, w0, sw, rd];
    let r = go(&b.k, &launch(8, 1));
    assert!(r.is_complete() && r.races.is_empty(), "{}", r.describe(""));
}

#[test]
fn a_later_syncwarp_does_not_order_an_access_after_an_earlier_one() {
    // s[tid] = 1; __syncwarp(); x = s[tid ^ 1]; __syncwarp();  — ordered (the write is before the
    // first sync, the read after it). Then s[tid ^ 1] = 2 after the second sync races with
    // nothing; but a write s[tid] = 3 between the two syncs races with the neighbour's read.
    let mut b = Kb::new();
    let s = b.shared("s", 8);
    let w1 = b.write(s, tid(), int(1));
    let sw1 = b.syncwarp();
    let (rd, _) = b.read(s, Expr::bin(BinOp::BitXor, tid(), int(1)));
    let sw2 = b.syncwarp();
    b.k.body = vec![w1, sw1, rd.clone(), sw2];
    let r = go(&b.k, &launch(4, 1));
    assert!(r.is_complete() && r.races.is_empty(), "{}", r.describe(""));
    let w3 = b.write(s, tid(), int(3));
    let sw1 = b.syncwarp();
    let sw2 = b.syncwarp();
    b.k.body = vec![sw1, rd, w3, sw2];
    let r = go(&b.k, &launch(4, 1));
    assert!(!r.races.is_empty());
}

#[test]
fn pointer_parameters_are_unknown_data_not_missing_values() {
    // if (g) s[tid] = 1;  — the pointer's value is unknown: inconclusive only because it steers.
    let mut b = Kb::new();
    let g = b.global("g");
    let s = b.shared("s", 8);
    let _ = g;
    let w = b.write(s, tid(), Expr::Param(cudarace_ir::ParamId(0)));
    b.k.body = vec![w];
    // Storing the pointer value is fine.
    let r = go(&b.k, &launch(2, 1));
    assert!(r.is_complete(), "{:?}", r.outcome);
    let w = b.write(s, tid(), int(1));
    b.k.body = vec![b.if_(Expr::Param(cudarace_ir::ParamId(0)), vec![w], vec![])];
    let r = go(&b.k, &launch(2, 1));
    assert!(
        matches!(r.outcome, Outcome::Inconclusive(ref w) if w.contains("condition")),
        "{:?}",
        r.outcome
    );
}
