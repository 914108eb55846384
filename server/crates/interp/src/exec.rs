//! The concrete interpreter.
//!
//! One run = one kernel, one fully concrete launch (sizes, scalar parameter values, initial
//! memory). Blocks run one after another (a legal schedule: nothing orders blocks, so every
//! cross-block pair of global accesses is unordered regardless). Inside a block, every thread runs
//! in turn until it stops at a barrier or exits; then the block-level scheduler releases a
//! `__syncwarp` once every live thread of that warp waits at it, and a `__syncthreads` once every
//! thread of the block waits at the same one. That is one legal interleaving, so every value read
//! is one the hardware could also read.
//!
//! Every access is logged with the thread's barrier counters; afterwards two accesses race when
//! they touch the same cell from different threads, at least one writes, not both are atomic, and
//! no barrier both threads took part in separates them (see [`RunReport::races`]).
//! Barrier divergence is decided at each scheduling point: the live threads of a block wait at
//! different `__syncthreads`, or some wait while others have exited.

use crate::value::{binary, unary, IntTy, Undefined, Val};
use cudarace_ir::{
    Access, AccessId, AccessMode, Array, ArrayOrigin, Barrier, BarrierKind, BinOp, Block, Builtin,
    Expr, Kernel, LineIndex, Loop, LoopKind, MemSpace, Span, Stmt,
};
use std::collections::{BTreeMap, HashMap};

/// A fully concrete launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub block_dim: [u64; 3],
    pub grid_dim: [u64; 3],
    /// Values of scalar (and template) parameters by name. A parameter without a value here
    /// and without a fixed value in the IR makes the run inconclusive if it is ever read.
    pub params: BTreeMap<String, i64>,
    /// Seed of the deterministic pseudo-random initial memory contents.
    pub memory_seed: u64,
}

impl Launch {
    pub fn new(block_dim: [u64; 3], grid_dim: [u64; 3]) -> Self {
        Launch {
            block_dim,
            grid_dim,
            params: BTreeMap::new(),
            memory_seed: 0,
        }
    }

    pub fn describe(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "blockDim=({},{},{}) gridDim=({},{},{}) params=[{}] memory_seed={}",
            self.block_dim[0],
            self.block_dim[1],
            self.block_dim[2],
            self.grid_dim[0],
            self.grid_dim[1],
            self.grid_dim[2],
            params.join(", "),
            self.memory_seed
        )
    }
}

/// Resource bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Statements and loop tests executed, summed over all threads; beyond it the run is
    /// inconclusive (an unbounded or very long loop).
    pub max_steps: u64,
    /// Access pairs compared when searching races; beyond it the search stops (fewer races are
    /// reported, never invented) and [`RunReport::race_search_truncated`] is set.
    pub max_pair_checks: u64,
    /// Threads per launch; larger launches are refused as inconclusive.
    pub max_threads: u64,
    /// Keep the whole access log in [`RunReport::log`] (for traces and debugging).
    pub keep_log: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_steps: 2_000_000,
            max_pair_checks: 4_000_000,
            max_threads: 4096,
            keep_log: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every thread ran to its end (or the run stopped at an observed barrier divergence).
    Complete,
    /// The run hit something it does not model exactly; observations made before that point
    /// are still real (they are a prefix of a legal execution), but absence proves nothing.
    Inconclusive(String),
}

/// One logged access, as reported in a race.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventInfo {
    pub access: AccessId,
    pub span: Span,
    pub mode: AccessMode,
    pub thread: [u64; 3],
    pub block: [u64; 3],
    /// The `__syncthreads` interval of the block the access happened in (0 = before the first).
    pub interval: u32,
    /// `__syncwarp` calls the thread had passed (in this block).
    pub syncs: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaceObs {
    pub array: String,
    pub space: MemSpace,
    /// The flat element offset.
    pub cell: i128,
    pub a: EventInfo,
    pub b: EventInfo,
}

/// How a thread stood when divergence was observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadEnd {
    /// Waiting at this `__syncthreads`.
    AtBarrier(Span),
    /// Exited the kernel.
    Exited,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DivergenceObs {
    pub block: [u64; 3],
    /// The `__syncthreads` interval in which the threads split.
    pub interval: u32,
    pub thread_a: [u64; 3],
    pub end_a: ThreadEnd,
    pub thread_b: [u64; 3],
    pub end_b: ThreadEnd,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub launch: Launch,
    pub outcome: Outcome,
    /// One witness per unordered pair of racing accesses (by [`AccessId`]), in log order.
    pub races: Vec<RaceObs>,
    /// The first divergence observed (the run stops there: what follows is undefined).
    pub divergence: Option<DivergenceObs>,
    /// Per thread (block-major, then linear thread id): the `__syncthreads` it passed, in order.
    pub barrier_sequences: Vec<([u64; 3], [u64; 3], Vec<Span>)>,
    pub accesses: usize,
    pub steps: u64,
    pub race_search_truncated: bool,
    /// Every access in execution order, when [`Budget::keep_log`] is set.
    pub log: Vec<LoggedAccess>,
}

/// One entry of the access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedAccess {
    pub array: String,
    pub cell: i128,
    pub event: EventInfo,
}

impl RunReport {
    pub fn is_complete(&self) -> bool {
        self.outcome == Outcome::Complete
    }

    /// A human-readable trace of the observations, with source lines from `text`.
    pub fn describe(&self, text: &str) -> String {
        let idx = LineIndex::new(text);
        let line = |s: Span| {
            let lc = idx.line_col(s.start);
            let snippet = text.get(s.start as usize..s.end as usize).unwrap_or("?");
            format!("line {} `{}`", lc.line + 1, snippet)
        };
        let mut out = format!("launch {}\n", self.launch.describe());
        match &self.outcome {
            Outcome::Complete => out.push_str("outcome: complete\n"),
            Outcome::Inconclusive(r) => out.push_str(&format!("outcome: inconclusive ({r})\n")),
        }
        for r in &self.races {
            out.push_str(&format!(
                "race on {}[{}] ({:?}): {:?} {} by thread {:?} block {:?} interval {}  vs  {:?} {} by thread {:?} block {:?} interval {}\n",
                r.array, r.cell, r.space,
                r.a.mode, line(r.a.span), r.a.thread, r.a.block, r.a.interval,
                r.b.mode, line(r.b.span), r.b.thread, r.b.block, r.b.interval
            ));
        }
        if let Some(d) = &self.divergence {
            let end = |e: &ThreadEnd| match e {
                ThreadEnd::AtBarrier(s) => format!("waits at {}", line(*s)),
                ThreadEnd::Exited => "has exited".to_string(),
            };
            out.push_str(&format!(
                "divergence in block {:?} interval {}: thread {:?} {}, thread {:?} {}\n",
                d.block,
                d.interval,
                d.thread_a,
                end(&d.end_a),
                d.thread_b,
                end(&d.end_b)
            ));
        }
        out
    }
}

/// Why a thread (and so the run) stopped early.
enum Stop {
    Inconclusive(String),
}

impl From<Undefined> for Stop {
    fn from(u: Undefined) -> Stop {
        Stop::Inconclusive(u.0)
    }
}

fn inconclusive<T>(why: impl Into<String>) -> Result<T, Stop> {
    Err(Stop::Inconclusive(why.into()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoopState {
    Init,
    Test,
    Cond,
    Body,
    Step,
}

enum Frame<'k> {
    Block { stmts: &'k [Stmt], pc: usize },
    Loop { lp: &'k Loop, state: LoopState },
}

#[derive(Clone, Copy)]
enum TState<'k> {
    Running,
    AtBlock(&'k Barrier),
    AtWarp(&'k Barrier),
    Exited,
}

struct Thread<'k> {
    tid: [u64; 3],
    linear: u64,
    warp: u64,
    locals: Vec<Option<Val>>,
    loads: HashMap<u32, Val>,
    stack: Vec<Frame<'k>>,
    state: TState<'k>,
    interval: u32,
    syncs: u32,
    /// The `__syncwarp` generations this thread took part in.
    warp_generations: Vec<u32>,
    reached: Vec<Span>,
}

struct Event {
    access: AccessId,
    span: Span,
    array: u32,
    cell: i128,
    mode: AccessMode,
    block_linear: u64,
    block: [u64; 3],
    thread_linear: u64,
    thread: [u64; 3],
    warp: u64,
    interval: u32,
    syncs: u32,
}

impl Event {
    fn info(&self) -> EventInfo {
        EventInfo {
            access: self.access,
            span: self.span,
            mode: self.mode,
            thread: self.thread,
            block: self.block,
            interval: self.interval,
            syncs: self.syncs,
        }
    }
}

struct Interp<'k> {
    kernel: &'k Kernel,
    launch: &'k Launch,
    budget: Budget,
    block: [u64; 3],
    block_linear: u64,
    global_mem: HashMap<(u32, i128), Val>,
    shared_mem: HashMap<(u32, i128), Val>,
    events: Vec<Event>,
    steps: u64,
    /// Per (block, thread): the `__syncwarp` generations the thread took part in, in order.
    warp_history: HashMap<(u64, u64), Vec<u32>>,
    /// The next `__syncwarp` generation number.
    next_generation: u32,
}

/// Runs `kernel` on `launch`. Never panics on any IR.
pub fn run(kernel: &Kernel, launch: &Launch, budget: &Budget) -> RunReport {
    let mut report = RunReport {
        launch: launch.clone(),
        outcome: Outcome::Complete,
        races: Vec::new(),
        divergence: None,
        barrier_sequences: Vec::new(),
        accesses: 0,
        steps: 0,
        race_search_truncated: false,
        log: Vec::new(),
    };
    if let Some(why) = &kernel.unsupported {
        report.outcome =
            Outcome::Inconclusive(format!("kernel unsupported by the front end: {why}"));
        return report;
    }
    let threads_per_block: u64 = launch.block_dim.iter().product();
    let blocks: u64 = launch.grid_dim.iter().product();
    if threads_per_block == 0 || blocks == 0 {
        report.outcome = Outcome::Inconclusive("empty launch".into());
        return report;
    }
    if threads_per_block.saturating_mul(blocks) > budget.max_threads {
        report.outcome = Outcome::Inconclusive("launch larger than the thread budget".into());
        return report;
    }
    let mut it = Interp {
        kernel,
        launch,
        budget: *budget,
        block: [0; 3],
        block_linear: 0,
        global_mem: HashMap::new(),
        shared_mem: HashMap::new(),
        events: Vec::new(),
        steps: 0,
        warp_history: HashMap::new(),
        next_generation: 0,
    };
    'blocks: for bz in 0..launch.grid_dim[2] {
        for by in 0..launch.grid_dim[1] {
            for bx in 0..launch.grid_dim[0] {
                it.block = [bx, by, bz];
                it.block_linear = bx + launch.grid_dim[0] * (by + launch.grid_dim[1] * bz);
                it.shared_mem.clear();
                match it.run_block(&mut report) {
                    Ok(true) => {}
                    Ok(false) => break 'blocks,
                    Err(Stop::Inconclusive(why)) => {
                        report.outcome = Outcome::Inconclusive(why);
                        break 'blocks;
                    }
                }
            }
        }
    }
    report.steps = it.steps;
    report.accesses = it.events.len();
    if budget.keep_log {
        report.log = it
            .events
            .iter()
            .map(|e| LoggedAccess {
                array: kernel.arrays[e.array as usize].name.clone(),
                cell: e.cell,
                event: e.info(),
            })
            .collect();
    }
    it.find_races(&mut report);
    report
}

impl<'k> Interp<'k> {
    /// Runs the current block to its end. `Ok(false)`: divergence observed, stop the run.
    fn run_block(&mut self, report: &mut RunReport) -> Result<bool, Stop> {
        let [dx, dy, dz] = self.launch.block_dim;
        let mut threads: Vec<Thread<'k>> = Vec::new();
        for z in 0..dz {
            for y in 0..dy {
                for x in 0..dx {
                    let linear = x + dx * (y + dy * z);
                    threads.push(Thread {
                        tid: [x, y, z],
                        linear,
                        warp: linear / 32,
                        locals: vec![None; self.kernel.locals.len()],
                        loads: HashMap::new(),
                        stack: vec![Frame::Block {
                            stmts: &self.kernel.body,
                            pc: 0,
                        }],
                        state: TState::Running,
                        interval: 0,
                        syncs: 0,
                        warp_generations: Vec::new(),
                        reached: Vec::new(),
                    });
                }
            }
        }
        let result = self.schedule(&mut threads, report);
        for t in &threads {
            self.warp_history
                .insert((self.block_linear, t.linear), t.warp_generations.clone());
            report
                .barrier_sequences
                .push((self.block, t.tid, t.reached.clone()));
        }
        result
    }

    fn schedule(
        &mut self,
        threads: &mut [Thread<'k>],
        report: &mut RunReport,
    ) -> Result<bool, Stop> {
        loop {
            for t in threads.iter_mut() {
                if matches!(t.state, TState::Running) {
                    self.run_thread(t)?;
                }
            }
            // Release every warp whose live threads all wait at the same `__syncwarp`.
            let mut progress = false;
            let mut warps: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
            for (i, t) in threads.iter().enumerate() {
                if !matches!(t.state, TState::Exited) {
                    warps.entry(t.warp).or_default().push(i);
                }
            }
            for members in warps.values() {
                let at_warp: Vec<&Barrier> = members
                    .iter()
                    .filter_map(|&i| match threads[i].state {
                        TState::AtWarp(b) => Some(b),
                        _ => None,
                    })
                    .collect();
                if at_warp.is_empty() {
                    continue;
                }
                if at_warp.len() != members.len() {
                    return inconclusive("__syncwarp not reached by every live thread of the warp");
                }
                // Exited lanes do not take part (CUDA: "all non-exited threads named in mask");
                // the generation records exactly who did.
                if at_warp.iter().any(|b| b.span != at_warp[0].span) {
                    return inconclusive("threads of a warp wait at different __syncwarp calls");
                }
                let generation = self.next_generation;
                self.next_generation += 1;
                for &i in members {
                    threads[i].state = TState::Running;
                    threads[i].syncs += 1;
                    threads[i].warp_generations.push(generation);
                }
                progress = true;
            }
            if progress {
                continue;
            }
            let live: Vec<usize> = (0..threads.len())
                .filter(|&i| !matches!(threads[i].state, TState::Exited))
                .collect();
            if live.is_empty() {
                return Ok(true);
            }
            // Every live thread waits at a `__syncthreads` now.
            let first = live[0];
            let TState::AtBlock(b0) = threads[first].state else {
                return inconclusive(
                    "internal: scheduler found a thread neither waiting nor exited",
                );
            };
            let end_of = |t: &Thread| match t.state {
                TState::AtBlock(b) => ThreadEnd::AtBarrier(b.span),
                _ => ThreadEnd::Exited,
            };
            let odd = threads.iter().position(|t| match t.state {
                TState::AtBlock(b) => b.span != b0.span,
                TState::Exited => true,
                _ => false,
            });
            if let Some(o) = odd {
                report.divergence = Some(DivergenceObs {
                    block: self.block,
                    interval: threads[first].interval,
                    thread_a: threads[first].tid,
                    end_a: end_of(&threads[first]),
                    thread_b: threads[o].tid,
                    end_b: end_of(&threads[o]),
                });
                return Ok(false);
            }
            for t in threads.iter_mut() {
                t.state = TState::Running;
                t.interval += 1;
                t.reached.push(b0.span);
            }
        }
    }

    fn tick(&mut self) -> Result<(), Stop> {
        self.steps += 1;
        if self.steps > self.budget.max_steps {
            return inconclusive(format!("step budget of {} exceeded", self.budget.max_steps));
        }
        Ok(())
    }

    /// Runs one thread until it waits at a barrier or exits.
    fn run_thread(&mut self, th: &mut Thread<'k>) -> Result<(), Stop> {
        loop {
            self.tick()?;
            let Some(frame) = th.stack.last_mut() else {
                th.state = TState::Exited;
                return Ok(());
            };
            match frame {
                Frame::Block { stmts, pc } => {
                    let stmts: &'k [Stmt] = stmts;
                    if *pc >= stmts.len() {
                        th.stack.pop();
                        continue;
                    }
                    let s = &stmts[*pc];
                    *pc += 1;
                    if self.exec_stmt(th, s)? {
                        return Ok(());
                    }
                }
                Frame::Loop { lp, state } => {
                    let lp: &'k Loop = lp;
                    match *state {
                        LoopState::Init => {
                            *state = if lp.kind == LoopKind::DoWhile {
                                LoopState::Body
                            } else {
                                LoopState::Test
                            };
                            th.stack.push(Frame::Block {
                                stmts: &lp.init,
                                pc: 0,
                            });
                        }
                        LoopState::Test => {
                            *state = LoopState::Cond;
                            th.stack.push(Frame::Block {
                                stmts: &lp.cond_effects,
                                pc: 0,
                            });
                        }
                        LoopState::Cond => {
                            let go = match &lp.cond {
                                None => true,
                                Some(c) => self.cond(th, c)?,
                            };
                            if go {
                                if let Some(Frame::Loop { state, .. }) = th.stack.last_mut() {
                                    *state = LoopState::Body;
                                }
                            } else {
                                th.stack.pop();
                            }
                        }
                        LoopState::Body => {
                            *state = LoopState::Step;
                            th.stack.push(Frame::Block {
                                stmts: &lp.body,
                                pc: 0,
                            });
                        }
                        LoopState::Step => {
                            *state = LoopState::Test;
                            th.stack.push(Frame::Block {
                                stmts: &lp.step,
                                pc: 0,
                            });
                        }
                    }
                }
            }
        }
    }

    /// Executes one statement; `Ok(true)` when the thread stopped (barrier or exit).
    fn exec_stmt(&mut self, th: &mut Thread<'k>, s: &'k Stmt) -> Result<bool, Stop> {
        match s {
            Stmt::Assign { local, value, .. } => {
                let Some(l) = self.kernel.locals.get(local.0 as usize) else {
                    return inconclusive("assignment to an undeclared local");
                };
                let v = self.eval(th, value)?.convert(l.ty);
                th.locals[local.0 as usize] = Some(v);
            }
            Stmt::Access(a) => self.access(th, a)?,
            Stmt::Barrier(b) => match &b.kind {
                BarrierKind::Block => {
                    th.state = TState::AtBlock(b);
                    return Ok(true);
                }
                BarrierKind::Warp { mask } => {
                    if let Some(m) = mask {
                        let m = self.index(th, m)?;
                        let lanes = self.warp_lanes(th.warp);
                        if (m as u64) & lanes != lanes {
                            return inconclusive("__syncwarp with a partial mask");
                        }
                    }
                    th.state = TState::AtWarp(b);
                    return Ok(true);
                }
                BarrierKind::Grid => return inconclusive("grid-wide synchronization"),
            },
            Stmt::If {
                cond,
                then_branch,
                else_branch,
                ..
            } => {
                let branch: &'k Block = if self.cond(th, cond)? {
                    then_branch
                } else {
                    else_branch
                };
                th.stack.push(Frame::Block {
                    stmts: branch,
                    pc: 0,
                });
            }
            Stmt::Loop(lp) => th.stack.push(Frame::Loop {
                lp,
                state: LoopState::Init,
            }),
            Stmt::Return { .. } => {
                th.stack.clear();
                th.state = TState::Exited;
                return Ok(true);
            }
            Stmt::Break { .. } | Stmt::Continue { .. } => loop {
                match th.stack.last_mut() {
                    None => return inconclusive("break/continue outside a loop"),
                    Some(Frame::Loop { state, .. }) => {
                        if matches!(s, Stmt::Break { .. }) {
                            th.stack.pop();
                        } else {
                            *state = LoopState::Step;
                        }
                        break;
                    }
                    Some(Frame::Block { .. }) => {
                        th.stack.pop();
                    }
                }
            },
            Stmt::Opaque(o) => return inconclusive(format!("opaque statement: {}", o.reason)),
            Stmt::Assume { cond, .. } => {
                if !self.cond(th, cond)? {
                    return inconclusive(
                        "an assumption (__assume/__requires/assert) does not hold",
                    );
                }
            }
        }
        Ok(false)
    }

    /// The lane bits (`linear % 32`) of the threads of `warp` that exist in this launch.
    fn warp_lanes(&self, warp: u64) -> u64 {
        let n: u64 = self.launch.block_dim.iter().product();
        let lo = warp * 32;
        let hi = (lo + 32).min(n);
        (lo..hi).fold(0u64, |acc, l| acc | (1u64 << (l % 32)))
    }

    fn cond(&self, th: &Thread<'k>, e: &Expr) -> Result<bool, Stop> {
        match self.eval(th, e)? {
            Val::Int { v, .. } => Ok(v != 0),
            Val::Poison => {
                inconclusive("a condition depends on a value the interpreter does not know")
            }
        }
    }

    fn index(&self, th: &Thread<'k>, e: &Expr) -> Result<i128, Stop> {
        match self.eval(th, e)? {
            Val::Int { v, .. } => Ok(v),
            Val::Poison => {
                inconclusive("an index depends on a value the interpreter does not know")
            }
        }
    }

    fn eval(&self, th: &Thread<'k>, e: &Expr) -> Result<Val, Stop> {
        Ok(match e {
            Expr::Int(v) => Val::literal(*v),
            Expr::Bool(b) => Val::int(*b as i128, IntTy::BOOL),
            Expr::Float(_) => Val::Poison,
            Expr::Builtin(b) => match b {
                Builtin::ThreadIdx(d) => Val::int(th.tid[d.index()] as i128, IntTy::UINT),
                Builtin::BlockIdx(d) => Val::int(self.block[d.index()] as i128, IntTy::UINT),
                Builtin::BlockDim(d) => {
                    Val::int(self.launch.block_dim[d.index()] as i128, IntTy::UINT)
                }
                Builtin::GridDim(d) => {
                    Val::int(self.launch.grid_dim[d.index()] as i128, IntTy::UINT)
                }
                Builtin::WarpSize => Val::int(32, IntTy::INT),
            },
            Expr::Param(p) => {
                let Some(param) = self.kernel.params.get(p.0 as usize) else {
                    return inconclusive("reference to an undeclared parameter");
                };
                if IntTy::of(param.ty).is_none() {
                    // Pointers, floats, structs: data the interpreter does not model.
                    return Ok(Val::Poison);
                }
                let v = match param
                    .value
                    .or_else(|| self.launch.params.get(&param.name).copied())
                {
                    Some(v) => v,
                    None => {
                        return inconclusive(format!("no value for parameter `{}`", param.name))
                    }
                };
                Val::literal(v).convert(param.ty)
            }
            // A local read before any assignment holds an indeterminate value.
            Expr::Local(l) => th
                .locals
                .get(l.0 as usize)
                .copied()
                .flatten()
                .unwrap_or(Val::Poison),
            Expr::Load(a) => match th.loads.get(&a.0) {
                Some(v) => *v,
                None => return inconclusive("a load of an access that has not run"),
            },
            Expr::Unknown(_) => Val::Poison,
            Expr::Unary(op, a) => unary(*op, self.eval(th, a)?),
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                // Short-circuit: the right operand is evaluated only when it decides.
                match self.eval(th, a)? {
                    Val::Poison => Val::Poison,
                    Val::Int { v, .. } => {
                        let lhs = v != 0;
                        if (*op == BinOp::And) != lhs {
                            Val::boolean(lhs)
                        } else {
                            match self.eval(th, b)? {
                                Val::Poison => Val::Poison,
                                Val::Int { v, .. } => Val::boolean(v != 0),
                            }
                        }
                    }
                }
            }
            Expr::Binary(op, a, b) => binary(*op, self.eval(th, a)?, self.eval(th, b)?)?,
            Expr::Ite(c, a, b) => match self.eval(th, c)? {
                Val::Poison => Val::Poison,
                Val::Int { v, .. } => {
                    if v != 0 {
                        self.eval(th, a)?
                    } else {
                        self.eval(th, b)?
                    }
                }
            },
            Expr::Cast(ty, a) => self.eval(th, a)?.convert(*ty),
        })
    }

    /// The flat element offset of an access, checking declared bounds (an out-of-bounds access
    /// is undefined behaviour: the run becomes inconclusive).
    fn cell(&self, th: &Thread<'k>, arr: &Array, a: &Access) -> Result<i128, Stop> {
        let idx = a
            .index
            .iter()
            .map(|e| self.index(th, e))
            .collect::<Result<Vec<i128>, Stop>>()?;
        let dims: Vec<Option<i128>> = arr
            .dims
            .iter()
            .map(|d| match d {
                Some(e) => self.eval(th, e).ok().and_then(|v| v.as_int()),
                None => None,
            })
            .collect();
        let oob = |what: &str| -> Result<i128, Stop> {
            inconclusive(format!("out-of-bounds access to `{}` ({what})", arr.name))
        };
        if dims.is_empty() {
            // A scalar (or a pointer whose size the front end did not record).
            return match idx.as_slice() {
                [] => Ok(0),
                [i] if matches!(arr.origin, ArrayOrigin::Param(_)) => Ok(*i),
                [0] => Ok(0),
                _ => oob("index into a scalar"),
            };
        }
        if a.flat {
            let [i] = idx.as_slice() else {
                return inconclusive("flat access with several indices");
            };
            if dims.iter().all(|d| d.is_some()) {
                let total: i128 = dims.iter().map(|d| d.unwrap_or(0)).product();
                if *i < 0 || *i >= total {
                    return oob("flat offset");
                }
            }
            return Ok(*i);
        }
        if idx.len() != dims.len() {
            return inconclusive("access with a different number of indices than dimensions");
        }
        let mut cell: i128 = 0;
        for (k, (&i, d)) in idx.iter().zip(&dims).enumerate() {
            if let Some(d) = d {
                if i < 0 || i >= *d {
                    return oob("index");
                }
            }
            if k == 0 {
                cell = i;
            } else {
                let Some(d) = d else {
                    return inconclusive("inner array dimension of unknown size");
                };
                cell = cell.wrapping_mul(*d).wrapping_add(i);
            }
        }
        Ok(cell)
    }

    fn initial_value(&self, arr: &Array, array: u32, cell: i128) -> Val {
        let mut h = self.launch.memory_seed ^ 0x9e37_79b9_7f4a_7c15;
        for x in [array as u64, cell as u64, (cell >> 64) as u64] {
            h = splitmix(h ^ x);
        }
        Val::literal((h % 8) as i64).convert(arr.elem)
    }

    fn access(&mut self, th: &mut Thread<'k>, a: &'k Access) -> Result<(), Stop> {
        let Some(arr) = self.kernel.arrays.get(a.array.0 as usize) else {
            return inconclusive("access to an undeclared array");
        };
        let cell = self.cell(th, arr, a)?;
        let key = (a.array.0, cell);
        let current = match arr.space {
            MemSpace::Shared => self.shared_mem.get(&key).copied(),
            MemSpace::Global => self.global_mem.get(&key).copied(),
        }
        .unwrap_or_else(|| self.initial_value(arr, a.array.0, cell));
        let stored = match a.mode {
            AccessMode::Read => {
                th.loads.insert(a.id.0, current);
                None
            }
            AccessMode::Write => Some(match &a.value {
                Some(e) => self.eval(th, e)?.convert(arr.elem),
                None => Val::Poison,
            }),
            AccessMode::Atomic => {
                // The IR does not say which operation: the new contents are unknown.
                th.loads.insert(a.id.0, current);
                Some(Val::Poison)
            }
        };
        if let Some(v) = stored {
            match arr.space {
                MemSpace::Shared => self.shared_mem.insert(key, v),
                MemSpace::Global => self.global_mem.insert(key, v),
            };
        }
        self.events.push(Event {
            access: a.id,
            span: a.span,
            array: a.array.0,
            cell,
            mode: a.mode,
            block_linear: self.block_linear,
            block: self.block,
            thread_linear: th.linear,
            thread: th.tid,
            warp: th.warp,
            interval: th.interval,
            syncs: th.syncs,
        });
        Ok(())
    }

    fn find_races(&self, report: &mut RunReport) {
        // Group by cell; shared cells are per block.
        let mut groups: BTreeMap<(u32, Option<u64>, i128), Vec<usize>> = BTreeMap::new();
        for (i, e) in self.events.iter().enumerate() {
            let space = self.kernel.arrays[e.array as usize].space;
            let block = (space == MemSpace::Shared).then_some(e.block_linear);
            groups.entry((e.array, block, e.cell)).or_default().push(i);
        }
        let mut seen: HashMap<(u32, u32), usize> = HashMap::new();
        let mut checks: u64 = 0;
        let mut found: Vec<(usize, usize)> = Vec::new();
        'outer: for members in groups.values() {
            if !members
                .iter()
                .any(|&i| self.events[i].mode != AccessMode::Read)
            {
                continue;
            }
            for (x, &i) in members.iter().enumerate() {
                for &j in &members[x + 1..] {
                    checks += 1;
                    if checks > self.budget.max_pair_checks {
                        report.race_search_truncated = true;
                        break 'outer;
                    }
                    let (a, b) = (&self.events[i], &self.events[j]);
                    if !self.races(a, b) {
                        continue;
                    }
                    let key = (a.access.0.min(b.access.0), a.access.0.max(b.access.0));
                    if let std::collections::hash_map::Entry::Vacant(v) = seen.entry(key) {
                        v.insert(found.len());
                        found.push((i, j));
                    }
                }
            }
        }
        found.sort();
        for (i, j) in found {
            let (a, b) = (&self.events[i], &self.events[j]);
            let arr = &self.kernel.arrays[a.array as usize];
            report.races.push(RaceObs {
                array: arr.name.clone(),
                space: arr.space,
                cell: a.cell,
                a: a.info(),
                b: b.info(),
            });
        }
    }

    /// Two accesses to the same cell race (see the module documentation).
    fn races(&self, a: &Event, b: &Event) -> bool {
        if a.block_linear == b.block_linear && a.thread_linear == b.thread_linear {
            return false;
        }
        let conflicting = !matches!(
            (a.mode, b.mode),
            (AccessMode::Read, AccessMode::Read) | (AccessMode::Atomic, AccessMode::Atomic)
        );
        if !conflicting {
            return false;
        }
        if a.block_linear != b.block_linear {
            // Only global cells are shared across blocks, and nothing orders blocks.
            return true;
        }
        if a.interval != b.interval {
            return false;
        }
        // Same `__syncthreads` interval: a `__syncwarp` both threads took part in, after the
        // first access (in its thread) and before the second (in its thread), orders them.
        if a.warp != b.warp {
            return true;
        }
        !(self.warp_ordered(a, b) || self.warp_ordered(b, a))
    }

    /// Some `__syncwarp` generation lies after `a` in `a`'s thread and before `b` in `b`'s.
    fn warp_ordered(&self, a: &Event, b: &Event) -> bool {
        let empty = Vec::new();
        let ha = self
            .warp_history
            .get(&(a.block_linear, a.thread_linear))
            .unwrap_or(&empty);
        let hb = self
            .warp_history
            .get(&(b.block_linear, b.thread_linear))
            .unwrap_or(&empty);
        let after_a = ha.get(a.syncs as usize..).unwrap_or(&[]);
        let before_b = hb.get(..(b.syncs as usize).min(hb.len())).unwrap_or(&[]);
        after_a.iter().any(|g| before_b.contains(g))
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests;
