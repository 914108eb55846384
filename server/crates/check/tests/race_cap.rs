//! The cap on racy pairs per array (`race_cap`): the gate a dispatcher uses asks exactly the
//! pairs the cap keeps, whatever the order the answers come back in, and never more than the
//! cap's worth of a racy array's pairs.

use cudarace_check::race_cap::{RaceGate, Step, MAX_RACES_PER_ARRAY};
use cudarace_check::{plan_kernel, CheckOptions, KernelPlan};
use cudarace_solver::Answer;
use std::collections::{BTreeMap, VecDeque};

/// Twelve stores to neighbouring cells of `out` (66 racy pairs) and two of `aux`.
fn plan() -> KernelPlan {
    let mut src = String::from(
        "__global__ void smear(float *out, float *aux, const float *in) {\n\
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         float v = in[i];\n",
    );
    for c in 0..12 {
        src.push_str(&format!("out[i + {c}] = v;\n"));
    }
    src.push_str("aux[i] = v;\naux[i + 1] = v;\n}\n");
    let ir = cudarace_syntax::lower_source(None, &src, &Default::default());
    plan_kernel(&ir, &ir.kernels[0], &CheckOptions::default())
}

fn sat() -> Answer {
    Answer::Sat(BTreeMap::new())
}

/// Runs the gate over `ask` with `window` answers pending at most, each query answered by
/// `answer`, answers taken back in a scrambled order; returns the queries asked and skipped.
fn dispatch(
    plan: &KernelPlan,
    ask: &[usize],
    answers: &mut [Answer],
    answer: &dyn Fn(usize) -> Answer,
    window: usize,
) -> (Vec<usize>, Vec<usize>) {
    let mut gate = RaceGate::new(plan, ask, answers);
    let (mut asked, mut skipped) = (Vec::new(), Vec::new());
    let mut pending: VecDeque<usize> = VecDeque::new();
    let mut turn = 0usize;
    loop {
        while pending.len() < window {
            match gate.next_step() {
                Some(Step::Ask(i)) => {
                    asked.push(i);
                    pending.push_back(i);
                }
                Some(Step::Skip(i)) => skipped.push(i),
                None => break,
            }
        }
        if pending.is_empty() {
            break;
        }
        // Not first in, first out: the pool's workers finish in any order.
        turn += 1;
        let at = (turn * 7) % pending.len();
        let i = pending.remove(at).unwrap();
        let a = answer(i);
        gate.answered(i, &a);
        answers[i] = a;
    }
    asked.sort_unstable();
    skipped.sort_unstable();
    (asked, skipped)
}

fn all(plan: &KernelPlan) -> Vec<usize> {
    plan.solve_order()
}

#[test]
fn every_pair_of_a_race_free_array_is_asked() {
    let plan = plan();
    let n = plan.queries.len();
    let mut answers = vec![Answer::Unsat; n];
    let (asked, skipped) = dispatch(&plan, &all(&plan), &mut answers, &|_| Answer::Unsat, 5);
    assert_eq!(asked.len(), n);
    assert!(skipped.is_empty());
    assert!(plan.capped(&answers).iter().all(|c| !c));
}

#[test]
fn a_racy_array_is_asked_up_to_the_cap_and_the_gate_agrees_with_the_report() {
    let plan = plan();
    let n = plan.queries.len();
    let of_out = |i: usize| plan.race_array(i) == Some("out");
    let out_pairs = (0..n).filter(|&i| of_out(i)).count();
    assert!(out_pairs > MAX_RACES_PER_ARRAY + 10, "{out_pairs} pairs");
    // Every pair of `out` between two different stores is racy; `aux` is left alone.
    for window in [1, 3, 40] {
        let mut answers = vec![Answer::Unknown("not asked".into()); n];
        let (asked, skipped) = dispatch(
            &plan,
            &all(&plan),
            &mut answers,
            &|i| if of_out(i) { sat() } else { Answer::Unsat },
            window,
        );
        let capped = plan.capped(&answers);
        let kept: Vec<usize> = (0..n).filter(|&i| !capped[i]).collect();
        let left: Vec<usize> = (0..n).filter(|&i| capped[i]).collect();
        assert_eq!(asked, kept, "window {window}");
        assert_eq!(skipped, left, "window {window}");
        let racy = asked
            .iter()
            .filter(|&&i| matches!(answers[i], Answer::Sat(_)))
            .count();
        assert_eq!(racy, MAX_RACES_PER_ARRAY);
        assert!(asked.iter().any(|&i| plan.race_array(i) == Some("aux")));
    }
}

#[test]
fn a_second_pass_counts_the_races_of_the_first() {
    let plan = plan();
    let n = plan.queries.len();
    let of_out: Vec<usize> = (0..n)
        .filter(|&i| plan.race_array(i) == Some("out"))
        .collect();
    // The first pass found 20 races among `out`'s first pairs and stopped at the next ten.
    let mut answers = vec![Answer::Unsat; n];
    for &i in &of_out[..20] {
        answers[i] = sat();
    }
    let again: Vec<usize> = of_out[20..30].to_vec();
    for &i in &again {
        answers[i] = Answer::Unknown("timeout".into());
    }
    let (asked, skipped) = dispatch(&plan, &again, &mut answers, &|_| sat(), 4);
    // Ten more races: 30, below the cap.
    assert_eq!(asked, again);
    assert!(skipped.is_empty());
    // Then the last pairs: two more reach the cap, the others are left out.
    let (asked, skipped) = {
        let mut answers = answers.clone();
        for &i in &of_out[30..] {
            answers[i] = Answer::Unknown("timeout".into());
        }
        dispatch(&plan, &of_out[30..], &mut answers, &|_| sat(), 4)
    };
    assert_eq!(asked, of_out[30..32].to_vec());
    assert_eq!(skipped, of_out[32..].to_vec());
}
