//! `[[range]]` entries: index ranges that a range-based `for` walks
//! (`for (auto i : grid_stride_range(n))` in OpenCV's dnn module,
//! `for (int i : GpuGridRangeX<int>(n))` in TensorFlow), from framework headers that are often
//! missing. The range is an arithmetic sequence `from, from + step, …` below `to`, each written
//! as a C++ expression over the call's arguments and template arguments; the front end lowers
//! the loop as the counted `for` it stands for.
//!
//! An entry is used only when the file and its includes do not define the name, as the other
//! fallback definitions are.

use crate::file::is_identifier;
use crate::*;
use serde::Deserialize;
use std::collections::HashSet;
use std::ops::Range;
use toml::Spanned;

/// One overload of a range function (a name and a number of arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeModel {
    pub name: String,
    pub library: Arc<str>,
    /// The call's parameters, named as `from`, `to` and `step` use them.
    pub params: Vec<String>,
    /// Template parameters (`GpuGridRangeX<T>`, `block_stride_range<BLOCK_SIZE>`), each with its
    /// default: a call may give fewer template arguments than there are parameters only when
    /// the rest have defaults.
    pub template_params: Vec<(String, Option<String>)>,
    /// The type of the loop's value when the loop declares it `auto` (`int`); `None`: the type
    /// of `from`.
    pub value_type: Option<String>,
    /// The first value (C++ expression).
    pub from: String,
    /// The bound: the loop runs while the value is below it.
    pub to: String,
    /// What each iteration adds.
    pub step: String,
}

impl RangeModel {
    /// `text` with every parameter and template parameter replaced by its (parenthesized)
    /// argument text. `None` when the arguments do not fit the entry.
    pub fn substitute(
        &self,
        text: &str,
        args: &[String],
        template_args: &[String],
    ) -> Option<String> {
        if args.len() != self.params.len() || template_args.len() > self.template_params.len() {
            return None;
        }
        let mut names: Vec<(&str, String)> = self
            .params
            .iter()
            .map(String::as_str)
            .zip(args.iter().cloned())
            .collect();
        for (k, (p, default)) in self.template_params.iter().enumerate() {
            let a = template_args.get(k).cloned().or_else(|| default.clone())?;
            names.push((p.as_str(), a));
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut prev = ("", "");
        for (is_id, tok, gap) in pieces(text) {
            out.push_str(gap);
            // `v.to`, `p->to`, `ns::to`: a member or qualified name, not the parameter.
            let member = matches!(prev, (_, ".") | ("-", ">") | (":", ":"));
            prev = (prev.1, tok);
            match names.iter().find(|(p, _)| is_id && !member && *p == tok) {
                Some((_, a)) => {
                    out.push('(');
                    out.push_str(a.trim());
                    out.push(')');
                }
                None => out.push_str(tok),
            }
        }
        Some(out)
    }
}

/// Identifiers and the other characters of `text`, each with the whitespace before it.
fn pieces(text: &str) -> Vec<(bool, &str, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let g = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let s = i;
        let is_id = b[i].is_ascii_alphabetic() || b[i] == b'_';
        if is_id || b[i].is_ascii_digit() {
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || (!is_id && b[i] == b'.'))
            {
                i += 1;
            }
        } else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
        out.push((is_id, &text[s..i], &text[g..s]));
    }
    out
}

/// `[[range]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawRange {
    names: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    params: Vec<String>,
    #[serde(default)]
    template_params: Vec<String>,
    #[serde(default)]
    template_defaults: Vec<String>,
    #[serde(rename = "type")]
    value_type: Option<String>,
    from: String,
    to: String,
    step: String,
}

/// The `[[range]]` entries of one file: one model per name, their names and parameters
/// checked; a name may have several entries of different arities (overloads).
pub(crate) fn ranges_of(
    raw: Vec<Spanned<RawRange>>,
    library: &Arc<str>,
    error: &dyn Fn(Option<Range<usize>>, String) -> LibraryError,
) -> Result<Vec<RangeModel>, LibraryError> {
    let mut out: Vec<RangeModel> = Vec::new();
    let mut seen: HashSet<(String, usize)> = HashSet::new();
    for r in raw {
        let r = r.into_inner();
        let span = r.names.span();
        if let Some(bad) = r
            .params
            .iter()
            .chain(&r.template_params)
            .find(|p| !is_identifier(p))
        {
            return Err(error(
                Some(span),
                format!("`{bad}` is not a parameter name"),
            ));
        }
        if r.template_defaults.len() > r.template_params.len() {
            return Err(error(
                Some(span),
                "`template-defaults` has more entries than `template-params`".to_string(),
            ));
        }
        // Defaults are for the last template parameters, as in C++.
        let first_default = r.template_params.len() - r.template_defaults.len();
        let template_params = r
            .template_params
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let d = k
                    .checked_sub(first_default)
                    .map(|j| r.template_defaults[j].clone());
                (p.clone(), d)
            })
            .collect::<Vec<_>>();
        for e in [&r.from, &r.to, &r.step] {
            if e.trim().is_empty() || e.contains(';') || !balanced(e) {
                return Err(error(
                    Some(span.clone()),
                    format!("`{e}` is not an expression"),
                ));
            }
        }
        if r.names.get_ref().is_empty() {
            return Err(error(Some(r.names.span()), "`names` is empty".to_string()));
        }
        for n in r.names.into_inner() {
            let nspan = n.span();
            let n = n.into_inner();
            if !is_identifier(&n) {
                return Err(error(Some(nspan), format!("`{n}` is not a range name")));
            }
            if !seen.insert((n.clone(), r.params.len())) {
                return Err(error(
                    Some(nspan),
                    format!(
                        "range `{n}` with {} arguments is described twice in this file",
                        r.params.len()
                    ),
                ));
            }
            out.push(RangeModel {
                name: n,
                library: library.clone(),
                params: r.params.clone(),
                template_params: template_params.clone(),
                value_type: r.value_type.clone(),
                from: r.from.clone(),
                to: r.to.clone(),
                step: r.step.clone(),
            });
        }
    }
    Ok(out)
}

fn balanced(e: &str) -> bool {
    let mut depth = 0i32;
    for c in e.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}
