//! What cudarace knows about CUDA and its libraries, kept as data (in the spirit of cppcheck's
//! library files): for each function without a body, whether it synchronizes, what memory it
//! reads and writes through its pointer arguments, and what its result is; and fallback
//! definitions of framework macros and classes whose headers are often missing.
//!
//! The bundled files (`data/*.toml`) are compiled into the binary; a project adds its own
//! through `cudarace.toml` (`[library] files = […]`). The format is documented in
//! `docs/library.md`; [`file`] reads and validates it.

pub mod classes;
pub mod file;
pub mod ranges;

pub use classes::{defined_names, ClassSource};
pub use file::{parse_file, LibraryError, LibraryFile};
pub use ranges::RangeModel;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The barrier a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    None,
    /// `__syncthreads()`.
    Block,
    /// `__syncwarp(mask)`; `mask_arg` is the lane mask's argument, if any.
    Warp {
        mask_arg: Option<usize>,
    },
    /// A grid-wide barrier.
    Grid,
    /// The sync of the cooperative group passed as argument `group_arg`.
    Group {
        group_arg: usize,
    },
}

/// What a call's result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    /// Any value, possibly different in every thread.
    Unknown,
    Void,
    /// The same value in every thread of a block.
    Uniform,
    /// A function of the arguments alone.
    Pure,
    /// Differs between any two calling threads.
    Distinct,
    /// An atomic counter's old value: distinct for every call on the same counter when argument
    /// `step_arg` is a non-zero integer constant.
    Ticket {
        step_arg: usize,
    },
    /// The value of argument `arg`.
    Argument {
        arg: usize,
    },
    /// The value the first reading effect reads.
    Read,
    Min,
    Max,
    Abs,
    Product,
    /// `(a + b - 1) / b` of the two arguments (C division): a ceiling division helper.
    CeilDiv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Atomic,
}

/// How many elements an effect covers, from the pointer on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    One,
    Const(u64),
    Arg(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Elements,
    Bytes,
}

/// Memory a call reads or writes through pointer argument `arg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    pub arg: usize,
    pub access: Access,
    pub count: Count,
    pub unit: Unit,
}

/// One described function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionModel {
    pub name: String,
    /// The library file's name (`cuda-math`).
    pub library: Arc<str>,
    pub sync: Sync,
    pub returns: Returns,
    /// The program continues only where this argument holds (`assert`).
    pub assume_arg: Option<usize>,
    pub effects: Vec<Effect>,
}

/// A fallback macro definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacroModel {
    pub name: String,
    pub library: Arc<str>,
    /// `Some` for a function-like macro.
    pub params: Option<Vec<String>>,
    pub body: String,
}

/// The threads that must all call a collective, and that it synchronizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectiveScope {
    /// Every thread of the block (`cub::BlockReduce`).
    Block,
}

/// A class of block-wide collectives (`cub::BlockReduce`): `Class(temp).Method(args…)` is one
/// collective operation on the shared `temp` storage, which every thread of the scope must
/// call; the storage may be reused only after a barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveModel {
    /// The class's bare name (`BlockReduce` for `cub::BlockReduce<float, 256>`).
    pub class: String,
    pub library: Arc<str>,
    pub scope: CollectiveScope,
    /// Method name → the arguments (0-based) it writes through references (`[]`: none). A method
    /// not listed is not described: its calls stay unknown.
    pub writes: BTreeMap<String, Vec<usize>>,
    /// The template arguments (0-based) that give the block's y and z sizes. The class then
    /// numbers threads by `threadIdx.x` alone unless the type gives one of them as something
    /// other than `1` (CUB's `BLOCK_DIM_Y`, `BLOCK_DIM_Z`, which default to 1). `None`: threads
    /// are numbered in all three dimensions.
    pub block_dim_args: Option<[usize; 2]>,
}

/// Where a launcher (a host function that launches the kernel it is given:
/// `cudaLaunchKernel((void *)k, grid, block, args, smem, stream)`) takes the launch sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchSizes {
    /// The grid and the block are these arguments (`dim3` or integers).
    Args { grid: usize, block: usize },
    /// A launch configuration object is this argument; its sizes are read when it is built on
    /// the spot by a constructor that a `[[launch-config]]` entry describes
    /// (`ep::CudaLaunchConfig(grid, block, smem)`), otherwise they are unknown.
    Config { arg: usize },
}

/// How a launcher hands the kernel its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelArgs {
    /// Passed directly, the kernel's first argument at this launcher argument
    /// (`hipLaunchKernelGGL(k, grid, block, smem, stream, a, b)`).
    From(usize),
    /// Passed as a `void *[]` array of their addresses at this argument (not followed: the
    /// kernel's parameters stay unbound).
    Array(usize),
    /// Not said: the kernel's parameters stay unbound.
    Unknown,
}

/// A host function that launches a kernel (`[[launcher]]`): a launch site like `k<<<g, b>>>(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LauncherModel {
    /// The bare name (`LaunchKernel` for `stream->LaunchKernel(…)`, `cudaLaunchKernel`).
    pub name: String,
    pub library: Arc<str>,
    /// The argument that names the kernel.
    pub kernel_arg: usize,
    pub sizes: LaunchSizes,
    pub kernel_args: KernelArgs,
}

/// A launch configuration's constructor (`[[launch-config]]`): `CudaLaunchConfig(grid, block,
/// smem)` holds the grid and block sizes at these arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchConfigModel {
    /// The bare class (or function) name.
    pub name: String,
    pub library: Arc<str>,
    pub grid_arg: usize,
    pub block_arg: usize,
}

/// Everything known: the bundled files, then the user's (a later description of a name
/// replaces an earlier one).
#[derive(Debug, Clone, Default)]
pub struct Library {
    functions: HashMap<String, Arc<FunctionModel>>,
    macros: HashMap<String, Arc<MacroModel>>,
    collectives: HashMap<String, Arc<CollectiveModel>>,
    launchers: HashMap<String, Arc<LauncherModel>>,
    launch_configs: HashMap<String, Arc<LaunchConfigModel>>,
    /// Fallback class sources by each name they define.
    classes: HashMap<String, Arc<ClassSource>>,
    /// Range functions by name, each overload (arity) once.
    ranges: HashMap<String, Vec<Arc<RangeModel>>>,
    /// The names of the loaded files, in load order.
    files: Vec<Arc<str>>,
}

/// The bundled library files: (file name, text).
pub const BUNDLED: &[(&str, &str)] = &[
    ("cuda-sync.toml", include_str!("../data/cuda-sync.toml")),
    ("cuda-math.toml", include_str!("../data/cuda-math.toml")),
    ("cuda-fp16.toml", include_str!("../data/cuda-fp16.toml")),
    (
        "cuda-intrinsics.toml",
        include_str!("../data/cuda-intrinsics.toml"),
    ),
    ("cuda-memory.toml", include_str!("../data/cuda-memory.toml")),
    (
        "cuda-atomics.toml",
        include_str!("../data/cuda-atomics.toml"),
    ),
    (
        "cuda-texture.toml",
        include_str!("../data/cuda-texture.toml"),
    ),
    (
        "cuda-device-runtime.toml",
        include_str!("../data/cuda-device-runtime.toml"),
    ),
    ("curand.toml", include_str!("../data/curand.toml")),
    ("frameworks.toml", include_str!("../data/frameworks.toml")),
    ("opencv.toml", include_str!("../data/opencv.toml")),
    ("cub.toml", include_str!("../data/cub.toml")),
    ("cuda-launch.toml", include_str!("../data/cuda-launch.toml")),
];

impl Library {
    /// The bundled files, read once. They are validated by this crate's tests; a bundled file
    /// that does not read is skipped (and named on stderr) rather than taking the checker down.
    pub fn bundled() -> Arc<Library> {
        static BUNDLED_LIBRARY: OnceLock<Arc<Library>> = OnceLock::new();
        BUNDLED_LIBRARY
            .get_or_init(|| {
                let mut lib = Library::default();
                for (name, text) in BUNDLED {
                    match parse_file(Path::new(name), text) {
                        Ok(f) => lib.add(f),
                        Err(e) => eprintln!("cudarace: bundled library file {e}"),
                    }
                }
                Arc::new(lib)
            })
            .clone()
    }

    /// The bundled files, then the user's files `paths` in order.
    pub fn with_user_files(paths: &[PathBuf]) -> Result<Library, LibraryError> {
        let mut lib = (*Library::bundled()).clone();
        for p in paths {
            let text = std::fs::read_to_string(p).map_err(|e| LibraryError {
                path: p.clone(),
                text: Arc::from(""),
                span: None,
                message: format!("cannot read the library file: {e}"),
            })?;
            lib.add(parse_file(p, &text)?);
        }
        Ok(lib)
    }

    /// Adds a file's descriptions (replacing earlier descriptions of the same names).
    pub fn add(&mut self, f: LibraryFile) {
        for m in f.functions {
            self.functions.insert(m.name.clone(), Arc::new(m));
        }
        for m in f.macros {
            self.macros.insert(m.name.clone(), Arc::new(m));
        }
        for c in f.collectives {
            self.collectives.insert(c.class.clone(), Arc::new(c));
        }
        for l in f.launchers {
            self.launchers.insert(l.name.clone(), Arc::new(l));
        }
        for c in f.launch_configs {
            self.launch_configs.insert(c.name.clone(), Arc::new(c));
        }
        for c in f.classes {
            let c = Arc::new(c);
            for n in &c.names {
                self.classes.insert(n.clone(), c.clone());
            }
        }
        for r in f.ranges {
            let overloads = self.ranges.entry(r.name.clone()).or_default();
            overloads.retain(|o| o.params.len() != r.params.len());
            overloads.push(Arc::new(r));
        }
        self.files.push(f.name);
    }

    pub fn function(&self, name: &str) -> Option<&FunctionModel> {
        self.functions.get(name).map(|m| m.as_ref())
    }

    pub fn macro_model(&self, name: &str) -> Option<&MacroModel> {
        self.macros.get(name).map(|m| m.as_ref())
    }

    /// The collective class named `class` (its bare name, without namespace or template
    /// arguments).
    pub fn collective(&self, class: &str) -> Option<&CollectiveModel> {
        self.collectives.get(class).map(|c| c.as_ref())
    }

    /// The launcher named `name` (its bare name).
    pub fn launcher(&self, name: &str) -> Option<&LauncherModel> {
        self.launchers.get(name).map(|l| l.as_ref())
    }

    /// The launch configuration constructor named `name` (its bare name).
    pub fn launch_config(&self, name: &str) -> Option<&LaunchConfigModel> {
        self.launch_configs.get(name).map(|c| c.as_ref())
    }

    /// The fallback class source that defines `name`.
    pub fn class_source(&self, name: &str) -> Option<&Arc<ClassSource>> {
        self.classes.get(name)
    }

    /// Every fallback class source (each once; a source whose names were all replaced by a
    /// later file's is gone).
    pub fn class_sources(&self) -> Vec<&Arc<ClassSource>> {
        let mut out: Vec<&Arc<ClassSource>> = Vec::new();
        let mut names: Vec<&String> = self.classes.keys().collect();
        names.sort();
        for n in names {
            let c = &self.classes[n];
            if !out.iter().any(|o| Arc::ptr_eq(o, c)) {
                out.push(c);
            }
        }
        out
    }

    /// The range function `name` taking `arity` arguments (`grid_stride_range(n)`).
    pub fn range(&self, name: &str, arity: usize) -> Option<&RangeModel> {
        self.ranges
            .get(name)?
            .iter()
            .find(|r| r.params.len() == arity)
            .map(|r| r.as_ref())
    }

    /// Whether some range function is called `name`.
    pub fn has_range(&self, name: &str) -> bool {
        self.ranges.contains_key(name)
    }

    pub fn macros(&self) -> impl Iterator<Item = &MacroModel> {
        self.macros.values().map(|m| m.as_ref())
    }

    pub fn files(&self) -> &[Arc<str>] {
        &self.files
    }

    pub fn function_count(&self) -> usize {
        self.functions.len()
    }
}

#[cfg(test)]
mod tests;
