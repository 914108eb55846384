//! Reading one library file: the TOML shape (unknown keys refused) and the checks serde cannot
//! make (argument keys that belong to another kind of entry, identifiers, duplicates), each
//! error with the byte range it is about, so that it can be shown as `path:line: message`.

use crate::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// A library file that could not be used: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryError {
    pub path: PathBuf,
    /// The file's text (empty when it could not be read).
    pub text: Arc<str>,
    pub span: Option<Range<usize>>,
    pub message: String,
}

impl LibraryError {
    /// 1-based line of the error (1 when the place is unknown).
    pub fn line(&self) -> usize {
        let at = self
            .span
            .as_ref()
            .map_or(0, |s| s.start.min(self.text.len()));
        self.text[..at].matches('\n').count() + 1
    }
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}",
            self.path.display(),
            self.line(),
            self.message
        )
    }
}

/// One file's descriptions.
#[derive(Debug, Clone)]
pub struct LibraryFile {
    pub name: Arc<str>,
    pub description: String,
    pub functions: Vec<FunctionModel>,
    pub macros: Vec<MacroModel>,
    pub collectives: Vec<CollectiveModel>,
    pub launchers: Vec<LauncherModel>,
    pub launch_configs: Vec<LaunchConfigModel>,
    pub classes: Vec<ClassSource>,
    pub ranges: Vec<RangeModel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    library: Spanned<RawHeader>,
    #[serde(default)]
    function: Vec<Spanned<RawFunction>>,
    #[serde(default, rename = "macro")]
    macros: Vec<Spanned<RawMacro>>,
    #[serde(default)]
    collective: Vec<Spanned<RawCollective>>,
    #[serde(default)]
    launcher: Vec<Spanned<RawLauncher>>,
    #[serde(default, rename = "launch-config")]
    launch_config: Vec<Spanned<RawLaunchConfig>>,
    #[serde(default)]
    class: Vec<Spanned<crate::classes::RawClass>>,
    #[serde(default)]
    range: Vec<Spanned<crate::ranges::RawRange>>,
}

/// `[[launcher]]`: a host function that launches the kernel it is given.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLauncher {
    names: Spanned<Vec<Spanned<String>>>,
    kernel_arg: usize,
    grid_arg: Option<usize>,
    block_arg: Option<usize>,
    config_arg: Option<usize>,
    args_from: Option<usize>,
    args_array_arg: Option<usize>,
}

/// `[[launch-config]]`: a launch configuration's constructor and where it takes the sizes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLaunchConfig {
    names: Spanned<Vec<Spanned<String>>>,
    grid_arg: usize,
    block_arg: usize,
}

/// `[[collective]]`: classes whose objects, built on a shared `TempStorage`, run one
/// block-wide collective per method call (`BlockReduce(temp).Sum(x)`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawCollective {
    classes: Spanned<Vec<Spanned<String>>>,
    scope: RawScope,
    /// Method name → the arguments it writes through references.
    #[serde(default)]
    writes: BTreeMap<Spanned<String>, Vec<usize>>,
    /// The template arguments holding the block's y and z sizes (`BLOCK_DIM_Y`, `BLOCK_DIM_Z`).
    block_dim_args: Option<Spanned<Vec<usize>>>,
}

/// Only block-wide collectives are modelled; a warp-wide one is refused, not misread.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum RawScope {
    Block,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: Spanned<String>,
    description: String,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum RawSync {
    None,
    Block,
    Warp,
    Grid,
    Group,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum RawReturns {
    Unknown,
    Void,
    Uniform,
    Pure,
    Distinct,
    Ticket,
    Argument,
    Read,
    Min,
    Max,
    Abs,
    Product,
    CeilDiv,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawFunction {
    names: Spanned<Vec<Spanned<String>>>,
    sync: Option<RawSync>,
    mask_arg: Option<Spanned<usize>>,
    group_arg: Option<Spanned<usize>>,
    returns: Option<RawReturns>,
    returns_arg: Option<Spanned<usize>>,
    ticket_arg: Option<Spanned<usize>>,
    assume_arg: Option<usize>,
    #[serde(default)]
    effects: Vec<Spanned<RawEffect>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawEffect {
    arg: usize,
    access: RawAccess,
    count: Option<u64>,
    count_arg: Option<usize>,
    unit: Option<RawUnit>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum RawAccess {
    Read,
    Write,
    Atomic,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum RawUnit {
    Elements,
    Bytes,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMacro {
    name: Spanned<String>,
    params: Option<Vec<String>>,
    body: String,
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads one library file's text; `path` names it in errors.
pub fn parse_file(path: &Path, text: &str) -> Result<LibraryFile, LibraryError> {
    let error = |span: Option<Range<usize>>, message: String| LibraryError {
        path: path.to_path_buf(),
        text: Arc::from(text),
        span,
        message,
    };
    let raw: RawFile =
        toml::from_str(text).map_err(|e| error(e.span(), e.message().trim().to_string()))?;
    let header = raw.library.into_inner();
    let lib_name = header.name.get_ref().trim().to_string();
    if lib_name.is_empty() {
        return Err(error(
            Some(header.name.span()),
            "the library's `name` is empty".into(),
        ));
    }
    let library: Arc<str> = Arc::from(lib_name.as_str());
    let mut seen: HashSet<String> = HashSet::new();
    let mut functions = Vec::new();
    for f in raw.function {
        let fspan = f.span();
        let f = f.into_inner();
        // Keys that belong to another kind of entry are mistakes, not options to ignore.
        let only_with =
            |key: &str, value: Option<Range<usize>>, ok: bool, what: &str| match (value, ok) {
                (Some(span), false) => Err(error(
                    Some(span),
                    format!("`{key}` is only allowed with {what}"),
                )),
                _ => Ok(()),
            };
        let sync_kind = f.sync.unwrap_or(RawSync::None);
        let returns_kind = f.returns.unwrap_or(RawReturns::Unknown);
        only_with(
            "mask-arg",
            f.mask_arg.as_ref().map(|v| v.span()),
            sync_kind == RawSync::Warp,
            "`sync = \"warp\"`",
        )?;
        only_with(
            "group-arg",
            f.group_arg.as_ref().map(|v| v.span()),
            sync_kind == RawSync::Group,
            "`sync = \"group\"`",
        )?;
        only_with(
            "returns-arg",
            f.returns_arg.as_ref().map(|v| v.span()),
            returns_kind == RawReturns::Argument,
            "`returns = \"argument\"`",
        )?;
        only_with(
            "ticket-arg",
            f.ticket_arg.as_ref().map(|v| v.span()),
            returns_kind == RawReturns::Ticket,
            "`returns = \"ticket\"`",
        )?;
        let sync = match sync_kind {
            RawSync::None => Sync::None,
            RawSync::Block => Sync::Block,
            RawSync::Grid => Sync::Grid,
            RawSync::Warp => Sync::Warp {
                mask_arg: f.mask_arg.map(|v| v.into_inner()),
            },
            RawSync::Group => match f.group_arg {
                Some(g) => Sync::Group {
                    group_arg: g.into_inner(),
                },
                None => {
                    return Err(error(
                        Some(fspan),
                        "`sync = \"group\"` needs `group-arg` (the group's argument)".into(),
                    ))
                }
            },
        };
        let need = |v: Option<Spanned<usize>>, key: &str, what: &str| {
            v.map(|v| v.into_inner())
                .ok_or_else(|| error(Some(fspan.clone()), format!("{what} needs `{key}`")))
        };
        let returns = match returns_kind {
            RawReturns::Unknown => Returns::Unknown,
            RawReturns::Void => Returns::Void,
            RawReturns::Uniform => Returns::Uniform,
            RawReturns::Pure => Returns::Pure,
            RawReturns::Distinct => Returns::Distinct,
            RawReturns::Ticket => Returns::Ticket {
                step_arg: need(f.ticket_arg, "ticket-arg", "`returns = \"ticket\"`")?,
            },
            RawReturns::Argument => Returns::Argument {
                arg: need(f.returns_arg, "returns-arg", "`returns = \"argument\"`")?,
            },
            RawReturns::Read => Returns::Read,
            RawReturns::Min => Returns::Min,
            RawReturns::Max => Returns::Max,
            RawReturns::Abs => Returns::Abs,
            RawReturns::Product => Returns::Product,
            RawReturns::CeilDiv => Returns::CeilDiv,
        };
        let mut effects = Vec::new();
        for e in &f.effects {
            let espan = e.span();
            let e = e.get_ref();
            let count = match (e.count, e.count_arg) {
                (Some(_), Some(_)) => {
                    return Err(error(
                        Some(espan),
                        "an effect takes `count` or `count-arg`, not both".into(),
                    ))
                }
                (Some(0), None) => {
                    return Err(error(Some(espan), "`count` must be at least 1".into()))
                }
                (Some(k), None) => Count::Const(k),
                (None, Some(a)) => Count::Arg(a),
                (None, None) => Count::One,
            };
            effects.push(Effect {
                arg: e.arg,
                access: match e.access {
                    RawAccess::Read => Access::Read,
                    RawAccess::Write => Access::Write,
                    RawAccess::Atomic => Access::Atomic,
                },
                count,
                unit: match e.unit {
                    None | Some(RawUnit::Elements) => Unit::Elements,
                    Some(RawUnit::Bytes) => Unit::Bytes,
                },
            });
        }
        if returns == Returns::Read && !effects.iter().any(|e| e.access != Access::Write) {
            return Err(error(
                Some(fspan),
                "`returns = \"read\"` needs a `read` or `atomic` effect".into(),
            ));
        }
        for n in entry_names(f.names, "function", &mut seen, &error)? {
            functions.push(FunctionModel {
                name: n,
                library: library.clone(),
                sync,
                returns,
                assume_arg: f.assume_arg,
                effects: effects.clone(),
            });
        }
    }
    let mut macros = Vec::new();
    let mut seen_macros: HashSet<String> = HashSet::new();
    for m in raw.macros {
        let m = m.into_inner();
        let span = m.name.span();
        let name = m.name.into_inner();
        if !is_identifier(&name) {
            return Err(error(Some(span), format!("`{name}` is not a macro name")));
        }
        if !seen_macros.insert(name.clone()) {
            return Err(error(
                Some(span),
                format!("macro `{name}` is defined twice in this file"),
            ));
        }
        if let Some(bad) = m
            .params
            .iter()
            .flatten()
            .find(|p| !(is_identifier(p) || p.as_str() == "..."))
        {
            return Err(error(
                Some(span),
                format!("`{bad}` is not a macro parameter name"),
            ));
        }
        macros.push(MacroModel {
            name,
            library: library.clone(),
            params: m.params,
            body: m.body,
        });
    }
    let collectives = collectives_of(raw.collective, &library, &error)?;
    let (launchers, launch_configs) =
        launchers_of(raw.launcher, raw.launch_config, &library, &error)?;
    let classes = crate::classes::classes_of(raw.class, &library, &error)?;
    let ranges = crate::ranges::ranges_of(raw.range, &library, &error)?;
    Ok(LibraryFile {
        name: library,
        description: header.description,
        functions,
        macros,
        collectives,
        launchers,
        launch_configs,
        classes,
        ranges,
    })
}

/// The `[[collective]]` entries: one model per class, its names checked.
fn collectives_of(
    raw: Vec<Spanned<RawCollective>>,
    library: &Arc<str>,
    error: &dyn Fn(Option<Range<usize>>, String) -> LibraryError,
) -> Result<Vec<CollectiveModel>, LibraryError> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for c in raw {
        let c = c.into_inner();
        let RawScope::Block = c.scope;
        let block_dim_args =
            match c.block_dim_args {
                None => None,
                Some(v) => {
                    let span = v.span();
                    match v.into_inner().as_slice() {
                        [y, z] if y != z => Some([*y, *z]),
                        _ => return Err(error(
                            Some(span),
                            "`block-dim-args` is two different template argument indices (y, z)"
                                .into(),
                        )),
                    }
                }
            };
        let mut writes = BTreeMap::new();
        for (method, args) in c.writes {
            let span = method.span();
            let method = method.into_inner();
            if !is_identifier(&method) {
                return Err(error(
                    Some(span),
                    format!("`{method}` is not a method name (letters, digits and `_`)"),
                ));
            }
            writes.insert(method, args);
        }
        let classes_span = c.classes.span();
        let classes = c.classes.into_inner();
        if classes.is_empty() {
            return Err(error(Some(classes_span), "`classes` is empty".into()));
        }
        for class in classes {
            let span = class.span();
            let class = class.into_inner();
            if !is_identifier(&class) {
                return Err(error(
                    Some(span),
                    format!("`{class}` is not a class name (letters, digits and `_`; no `::` or template arguments)"),
                ));
            }
            if !seen.insert(class.clone()) {
                return Err(error(
                    Some(span),
                    format!("collective class `{class}` is described twice in this file"),
                ));
            }
            out.push(CollectiveModel {
                class,
                library: library.clone(),
                scope: CollectiveScope::Block,
                writes: writes.clone(),
                block_dim_args,
            });
        }
    }
    Ok(out)
}

/// The names of an entry, each an identifier and described once in the file.
pub(crate) fn entry_names(
    names: Spanned<Vec<Spanned<String>>>,
    what: &str,
    seen: &mut HashSet<String>,
    error: &dyn Fn(Option<Range<usize>>, String) -> LibraryError,
) -> Result<Vec<String>, LibraryError> {
    let span = names.span();
    let names = names.into_inner();
    if names.is_empty() {
        return Err(error(Some(span), "`names` is empty".into()));
    }
    let mut out = Vec::new();
    for n in names {
        let span = n.span();
        let n = n.into_inner();
        if !is_identifier(&n) {
            return Err(error(
                Some(span),
                format!("`{n}` is not a {what} name (letters, digits and `_`; no `::`, `->` or template arguments)"),
            ));
        }
        if !seen.insert(n.clone()) {
            return Err(error(
                Some(span),
                format!("{what} `{n}` is described twice in this file"),
            ));
        }
        out.push(n);
    }
    Ok(out)
}

/// The `[[launcher]]` and `[[launch-config]]` entries, their argument keys checked: the sizes
/// are `grid-arg` and `block-arg` or a `config-arg`, the kernel's arguments `args-from` or
/// `args-array-arg` (or neither), and no argument has two roles.
fn launchers_of(
    raw: Vec<Spanned<RawLauncher>>,
    raw_configs: Vec<Spanned<RawLaunchConfig>>,
    library: &Arc<str>,
    error: &dyn Fn(Option<Range<usize>>, String) -> LibraryError,
) -> Result<(Vec<LauncherModel>, Vec<LaunchConfigModel>), LibraryError> {
    let mut launchers = Vec::new();
    let mut seen = HashSet::new();
    for l in raw {
        let span = l.span();
        let l = l.into_inner();
        let sizes = match (l.grid_arg, l.block_arg, l.config_arg) {
            (Some(grid), Some(block), None) => LaunchSizes::Args { grid, block },
            (None, None, Some(arg)) => LaunchSizes::Config { arg },
            _ => {
                return Err(error(
                    Some(span),
                    "a launcher takes `grid-arg` and `block-arg`, or `config-arg` alone".into(),
                ))
            }
        };
        let kernel_args = match (l.args_from, l.args_array_arg) {
            (Some(a), None) => KernelArgs::From(a),
            (None, Some(a)) => KernelArgs::Array(a),
            (None, None) => KernelArgs::Unknown,
            (Some(_), Some(_)) => {
                return Err(error(
                    Some(span),
                    "a launcher takes `args-from` or `args-array-arg`, not both".into(),
                ))
            }
        };
        let mut roles = vec![l.kernel_arg];
        match sizes {
            LaunchSizes::Args { grid, block } => roles.extend([grid, block]),
            LaunchSizes::Config { arg } => roles.push(arg),
        }
        if let KernelArgs::Array(a) = kernel_args {
            roles.push(a);
        }
        let distinct: HashSet<usize> = roles.iter().copied().collect();
        if distinct.len() != roles.len() {
            return Err(error(
                Some(span),
                "a launcher's kernel, size and argument-array arguments are different arguments"
                    .into(),
            ));
        }
        if let KernelArgs::From(from) = kernel_args {
            if roles.iter().any(|&r| r >= from) {
                return Err(error(
                    Some(span),
                    "`args-from` comes after the kernel and size arguments".into(),
                ));
            }
        }
        for name in entry_names(l.names, "launcher", &mut seen, error)? {
            launchers.push(LauncherModel {
                name,
                library: library.clone(),
                kernel_arg: l.kernel_arg,
                sizes,
                kernel_args,
            });
        }
    }
    let mut configs = Vec::new();
    let mut seen = HashSet::new();
    for c in raw_configs {
        let span = c.span();
        let c = c.into_inner();
        if c.grid_arg == c.block_arg {
            return Err(error(
                Some(span),
                "`grid-arg` and `block-arg` are different arguments".into(),
            ));
        }
        for name in entry_names(c.names, "launch configuration", &mut seen, error)? {
            configs.push(LaunchConfigModel {
                name,
                library: library.clone(),
                grid_arg: c.grid_arg,
                block_arg: c.block_arg,
            });
        }
    }
    Ok((launchers, configs))
}
