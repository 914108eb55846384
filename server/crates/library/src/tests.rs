use super::*;
use std::collections::HashMap;

#[test]
fn every_bundled_file_reads_and_is_named_for_its_file() {
    for (file, text) in BUNDLED {
        let f = parse_file(Path::new(file), text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(format!("{}.toml", f.name), *file);
        assert!(!f.description.trim().is_empty(), "{file}: no description");
        assert!(
            !f.functions.is_empty()
                || !f.macros.is_empty()
                || !f.collectives.is_empty()
                || !f.launchers.is_empty()
                || !f.classes.is_empty(),
            "{file} describes nothing"
        );
    }
}

#[test]
fn no_name_is_described_by_two_bundled_files() {
    let mut owner: HashMap<String, String> = HashMap::new();
    for (file, text) in BUNDLED {
        let f = parse_file(Path::new(file), text).unwrap();
        let names = f
            .functions
            .iter()
            .map(|m| m.name.clone())
            .chain(f.macros.iter().map(|m| format!("macro {}", m.name)))
            .chain(
                f.collectives
                    .iter()
                    .map(|c| format!("collective {}", c.class)),
            )
            .chain(f.launchers.iter().map(|l| format!("launcher {}", l.name)))
            .chain(
                f.classes
                    .iter()
                    .flat_map(|c| c.names.iter().map(|n| format!("class {n}"))),
            )
            .chain(
                f.launch_configs
                    .iter()
                    .map(|c| format!("launch-config {}", c.name)),
            )
            .chain(
                f.ranges
                    .iter()
                    .map(|r| format!("range {}/{}", r.name, r.params.len())),
            );
        for n in names {
            if let Some(other) = owner.insert(n.clone(), file.to_string()) {
                panic!("`{n}` is described in {other} and {file}");
            }
        }
    }
}

#[test]
fn bundled_knowledge_covers_the_families() {
    let lib = Library::bundled();
    let f = |n: &str| lib.function(n).unwrap_or_else(|| panic!("`{n}` missing"));
    assert_eq!(f("__syncthreads").sync, Sync::Block);
    assert_eq!(f("__syncwarp").sync, Sync::Warp { mask_arg: Some(0) });
    assert_eq!(f("synchronize").sync, Sync::Group { group_arg: 0 });
    assert_eq!(f("__threadfence").sync, Sync::None);
    assert_eq!(f("atomicAdd").returns, Returns::Ticket { step_arg: 1 });
    assert_eq!(f("atomicCAS").effects[0].access, Access::Atomic);
    assert_eq!(f("__ldg").returns, Returns::Read);
    assert_eq!(f("curand_init").effects[0].arg, 3);
    assert_eq!(f("curand_init").effects[0].access, Access::Write);
    let memcpy = f("memcpy");
    assert_eq!(memcpy.effects.len(), 2);
    assert_eq!(memcpy.effects[0].count, Count::Arg(2));
    assert_eq!(memcpy.effects[0].unit, Unit::Bytes);
    for pure in ["sinf", "sqrt", "__expf", "__float2half", "__popc", "__hadd"] {
        assert_eq!(f(pure).returns, Returns::Pure, "{pure}");
    }
    for n in [
        "tex2D",
        "tex1Dfetch",
        "__shfl_down_sync",
        "__ballot_sync",
        "clock64",
    ] {
        assert_eq!(f(n).sync, Sync::None, "{n}");
    }
    assert_eq!(f("min").returns, Returns::Min);
    for n in [
        "DIVUP",
        "ATenCeilDiv",
        "divUp",
        "iDivUp",
        "CEIL_DIV",
        "ceil_div",
    ] {
        assert_eq!(f(n).returns, Returns::CeilDiv, "{n}");
    }
    assert_eq!(f("assert").assume_arg, Some(0));
    let m = lib
        .macro_model("CUDA_KERNEL_LOOP")
        .expect("CUDA_KERNEL_LOOP");
    assert_eq!(
        m.params.as_deref(),
        Some(&["i".to_string(), "n".to_string()][..])
    );
    assert!(m.body.trim_start().starts_with("for"));
    assert!(lib.macro_model("CUDA_1D_KERNEL_LOOP").is_some());
    assert!(lib.function_count() > 300, "{}", lib.function_count());
}

fn err(text: &str) -> LibraryError {
    parse_file(Path::new("mylib.toml"), text).expect_err("should be refused")
}

#[test]
fn malformed_files_are_refused_with_file_and_line() {
    let e = err("[library]\nname = \"x\"\ndescription = \"d\"\n\n[[function]]\nnames = [\"f\"]\nsink = \"block\"\n");
    assert_eq!(e.line(), 7, "{e}");
    assert!(e.to_string().starts_with("mylib.toml:7: "), "{e}");
    assert!(e.message.contains("sink"), "{e}");

    let e = err("[library]\nname = \"x\"\ndescription = \"d\"\n[[function]]\nnames = [\"f\"]\nsync = \"always\"\n");
    assert_eq!(e.line(), 6, "{e}");
    assert!(e.message.contains("always"), "{e}");

    let e = err("[library]\nname = \"x\"\ndescription = \"d\"\n[[function]]\nnames = [\"f\"]\nmask-arg = 0\n");
    assert_eq!(e.line(), 6, "{e}");
    assert!(e.message.contains("`mask-arg` is only allowed"), "{e}");

    let e = err(
        "[library]\nname = \"x\"\ndescription = \"d\"\n[[function]]\nnames = [\"f\", \"g h\"]\n",
    );
    assert_eq!(e.line(), 5, "{e}");
    assert!(e.message.contains("`g h`"), "{e}");

    let e = err("[library]\nname = \"x\"\ndescription = \"d\"\n[[function]]\nnames = [\"f\"]\nreturns = \"ticket\"\n");
    assert!(e.message.contains("ticket-arg"), "{e}");

    let e = err("[library]\nname = \"x\"\ndescription = \"d\"\n[[function]]\nnames = [\"f\"]\neffects = [{ arg = 0, access = \"write\", count = 2, count-arg = 1 }]\n");
    assert_eq!(e.line(), 6, "{e}");

    let e = err("[[function]]\nnames = [\"f\"]\n");
    assert!(e.message.contains("library"), "{e}");

    let e = err("[library\nname = 1");
    assert_eq!(e.line(), 1, "{e}");

    let e = err("\u{0}\u{1}binary junk\u{ff}");
    assert!(!e.message.is_empty());
}

#[test]
fn a_user_file_replaces_bundled_descriptions_and_adds_its_own() {
    let dir = std::env::temp_dir().join(format!("cudarace-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("mine.toml");
    std::fs::write(
        &p,
        "[library]\nname = \"mine\"\ndescription = \"our device library\"\n\n\
         [[function]]\nnames = [\"block_reduce\"]\nsync = \"block\"\nreturns = \"uniform\"\n\
         effects = [{ arg = 1, access = \"write\", count-arg = 2 }]\n\n\
         [[function]]\nnames = [\"sinf\"]\nreturns = \"unknown\"\n\n\
         [[macro]]\nname = \"FOR_EACH\"\nparams = [\"i\", \"n\"]\nbody = \"for (int i = threadIdx.x; i < (n); i += blockDim.x)\"\n",
    )
    .unwrap();
    let lib = Library::with_user_files(std::slice::from_ref(&p)).unwrap();
    let f = lib.function("block_reduce").unwrap();
    assert_eq!(f.sync, Sync::Block);
    assert_eq!(&*f.library, "mine");
    assert_eq!(lib.function("sinf").unwrap().returns, Returns::Unknown);
    assert!(lib.macro_model("FOR_EACH").is_some());
    assert_eq!(lib.files().last().map(|s| &**s), Some("mine"));
    let missing = Library::with_user_files(&[dir.join("absent.toml")]).unwrap_err();
    assert!(missing.message.contains("cannot read"), "{missing}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cub_block_collectives_are_described_with_the_arguments_they_write() {
    let lib = Library::bundled();
    let reduce = lib.collective("BlockReduce").expect("BlockReduce");
    assert_eq!(reduce.scope, CollectiveScope::Block);
    assert_eq!(&*reduce.library, "cub");
    // Sum and Reduce are described, and write none of their arguments.
    assert!(reduce.writes.values().all(Vec::is_empty));
    assert_eq!(reduce.writes.get("Sum"), Some(&vec![]));
    let scan = lib.collective("BlockScan").expect("BlockScan");
    assert_eq!(scan.writes.get("ExclusiveSum"), Some(&vec![1, 2]));
    assert!(lib.collective("BlockRadixSort").is_some());
    // Warp-wide collectives and the loads and stores of global memory are not described.
    for absent in ["WarpReduce", "BlockLoad", "BlockStore"] {
        assert!(lib.collective(absent).is_none(), "{absent}");
    }
}

#[test]
fn malformed_collectives_are_refused_with_file_and_line() {
    let head = "[library]\nname = \"x\"\ndescription = \"d\"\n[[collective]]\n";
    let e = err(&format!(
        "{head}classes = [\"BlockReduce\"]\nscope = \"block\"\nsync = \"block\"\n"
    ));
    assert_eq!(e.line(), 7, "{e}");
    assert!(e.message.contains("sync"), "{e}");

    let e = err(&format!(
        "{head}classes = [\"WarpReduce\"]\nscope = \"warp\"\n"
    ));
    assert_eq!(e.line(), 6, "{e}");
    assert!(e.message.contains("warp"), "{e}");

    let e = err(&format!(
        "{head}classes = [\"cub::BlockReduce<float, 256>\"]\nscope = \"block\"\n"
    ));
    assert_eq!(e.line(), 5, "{e}");
    assert!(e.message.contains("not a class name"), "{e}");

    let e = err(&format!("{head}classes = []\nscope = \"block\"\n"));
    assert!(e.message.contains("empty"), "{e}");

    let e = err(&format!(
        "{head}classes = [\"A\"]\nscope = \"block\"\nwrites = {{ \"Sum it\" = [0] }}\n"
    ));
    assert_eq!(e.line(), 7, "{e}");
    assert!(e.message.contains("`Sum it`"), "{e}");

    let e = err(&format!("{head}classes = [\"A\"]\nscope = \"block\"\n[[collective]]\nclasses = [\"A\"]\nscope = \"block\"\n"));
    assert_eq!(e.line(), 8, "{e}");
    assert!(e.message.contains("twice"), "{e}");

    let e = err(&format!(
        "{head}classes = [\"A\"]\nscope = \"block\"\nblock-dim-args = [3]\n"
    ));
    assert_eq!(e.line(), 7, "{e}");
    assert!(e.message.contains("block-dim-args"), "{e}");

    let e = err(&format!("{head}scope = \"block\"\n"));
    assert!(e.message.contains("classes"), "{e}");
}

#[test]
fn launchers_are_described_with_their_kernel_sizes_and_arguments() {
    let lib = Library::bundled();
    let l = lib.launcher("cudaLaunchKernel").expect("cudaLaunchKernel");
    assert_eq!(l.kernel_arg, 0);
    assert_eq!(l.sizes, LaunchSizes::Args { grid: 1, block: 2 });
    assert_eq!(l.kernel_args, KernelArgs::Array(3));
    let ggl = lib
        .launcher("hipLaunchKernelGGL")
        .expect("hipLaunchKernelGGL");
    assert_eq!(ggl.kernel_args, KernelArgs::From(5));
    let of = lib.launcher("LaunchKernel").expect("LaunchKernel");
    assert_eq!(of.sizes, LaunchSizes::Config { arg: 1 });
    assert_eq!(of.kernel_args, KernelArgs::From(2));
    let cfg = lib
        .launch_config("CudaLaunchConfig")
        .expect("CudaLaunchConfig");
    assert_eq!((cfg.grid_arg, cfg.block_arg), (0, 1));
    assert!(lib.launcher("cudaMemcpy").is_none());
}

#[test]
fn malformed_launchers_are_refused_with_file_and_line() {
    let head = "[library]\nname = \"x\"\ndescription = \"d\"\n[[launcher]]\n";
    // Sizes both ways.
    let e = err(&format!(
        "{head}names = [\"L\"]\nkernel-arg = 0\ngrid-arg = 1\nblock-arg = 2\nconfig-arg = 3\n"
    ));
    assert_eq!(e.line(), 4, "{e}");
    assert!(e.message.contains("config-arg"), "{e}");
    // No sizes.
    let e = err(&format!("{head}names = [\"L\"]\nkernel-arg = 0\n"));
    assert!(e.message.contains("grid-arg"), "{e}");
    // Two roles for one argument.
    let e = err(&format!(
        "{head}names = [\"L\"]\nkernel-arg = 1\ngrid-arg = 1\nblock-arg = 2\n"
    ));
    assert!(e.message.contains("different arguments"), "{e}");
    // The kernel's arguments before the sizes.
    let e = err(&format!(
        "{head}names = [\"L\"]\nkernel-arg = 0\ngrid-arg = 1\nblock-arg = 2\nargs-from = 2\n"
    ));
    assert!(e.message.contains("args-from"), "{e}");
    let e = err(&format!(
        "{head}names = [\"L\"]\nkernel-arg = 0\nconfig-arg = 1\nargs-from = 2\nargs-array-arg = 3\n"
    ));
    assert!(e.message.contains("not both"), "{e}");
    let e = err(&format!(
        "{head}names = [\"s->L\"]\nkernel-arg = 0\nconfig-arg = 1\n"
    ));
    assert_eq!(e.line(), 5, "{e}");
    assert!(e.message.contains("not a launcher name"), "{e}");
    let e = err(&format!(
        "{head}names = [\"L\"]\nkernel-arg = 0\nconfig-arg = 1\nthreads-arg = 2\n"
    ));
    assert!(e.message.contains("threads-arg"), "{e}");
    let e = err(
        "[library]\nname = \"x\"\ndescription = \"d\"\n[[launch-config]]\nnames = [\"C\"]\ngrid-arg = 0\nblock-arg = 0\n",
    );
    assert_eq!(e.line(), 4, "{e}");
    assert!(e.message.contains("different"), "{e}");
}

const CLASS_HEAD: &str = "[library]\nname = \"x\"\ndescription = \"d\"\n\n[[class]]\n";

#[test]
fn class_sources_are_read_by_every_name_they_define() {
    let f = parse_file(
        Path::new("mylib.toml"),
        &format!("{CLASS_HEAD}names = [\"Row\", \"Rowf\"]\nsource = \"\"\"\ntemplate <typename T> struct Row {{ T *p; }};\ntypedef Row<float> Rowf;\n\"\"\"\n"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut lib = Library::default();
    lib.add(f);
    assert_eq!(lib.class_sources().len(), 1);
    assert!(lib.class_source("Rowf").is_some());
    let opencv = Library::bundled();
    let s = opencv.class_source("PtrStepSzf").expect("OpenCV's typedef");
    assert!(s.names.iter().any(|n| n == "PtrStep"));
}

#[test]
fn malformed_class_entries_are_refused_with_file_and_line() {
    let cases = [
        ("names = [\"Row\"]\nsource = \"struct Col { int *p; };\"\n", 7, "does not define `Row`"),
        ("names = [\"Row\"]\nsource = \"struct Row { int *p; \"\n", 7, "unclosed `{`"),
        ("names = [\"Row\"]\nsource = \"struct Row { int *p; }};\"\n", 7, "unbalanced `}`"),
        ("names = [\"Row\"]\nsource = \"\"\"\n#include <row.h>\nstruct Row {};\"\"\"\n", 7, "no preprocessor directive"),
        ("names = [\"Row\"]\nsource = \"struct Row {}; __global__ void k() {}\"\n", 7, "no kernel"),
        ("names = [\"Row<T>\"]\nsource = \"struct Row {};\"\n", 6, "not a class name"),
        ("names = []\nsource = \"struct Row {};\"\n", 6, "`names` is empty"),
        ("names = [\"Row\"]\nsource = \"  \"\n", 7, "`source` is empty"),
        ("names = [\"Row\"]\nbody = \"struct Row {};\"\n", 7, "body"),
        ("names = [\"Row\"]\nsource = \"struct Row {};\"\n[[class]]\nnames = [\"Row\"]\nsource = \"struct Row {};\"\n", 9, "described twice"),
    ];
    for (entry, line, what) in cases {
        let e = err(&format!("{CLASS_HEAD}{entry}"));
        assert_eq!(e.line(), line, "{e}");
        assert!(e.message.contains(what), "{e} (wanted: {what})");
    }
}

#[test]
fn defined_names_are_definitions_not_uses_or_forward_declarations() {
    let d = defined_names(
        "struct Fwd; template <typename T> struct A : B<T> { typedef T elem; int f(Fwd x); };\nclass C final {};\ntypedef A<float> Af;\nusing Ai = A<int>;\ntypedef void (*Fn)(int);",
    );
    for n in ["A", "C", "Af", "Ai", "elem"] {
        assert!(d.contains(n), "{n} in {d:?}");
    }
    for n in ["Fwd", "B", "f", "x"] {
        assert!(!d.contains(n), "{n} in {d:?}");
    }
}

const RANGE_HEAD: &str = "[library]\nname = \"x\"\ndescription = \"d\"\n\n[[range]]\n";

#[test]
fn ranges_are_read_by_name_and_arity_and_fill_in_their_arguments() {
    let lib = Library::bundled();
    let one = lib
        .range("grid_stride_range", 1)
        .expect("OpenCV's grid_stride_range(to)");
    let two = lib
        .range("grid_stride_range", 2)
        .expect("OpenCV's grid_stride_range(from, to)");
    assert!(lib.range("grid_stride_range", 3).is_none());
    let args = ["n".to_string()];
    assert_eq!(one.substitute(&one.to, &args, &[]).as_deref(), Some("(n)"));
    let args2 = ["a + 1".to_string(), "b".to_string()];
    assert_eq!(
        two.substitute(&two.from, &args2, &[]).as_deref(),
        Some("(a + 1) + blockDim.x * blockIdx.x + threadIdx.x")
    );
    // A template parameter takes the call's template argument, else its default.
    let block = lib.range("block_stride_range", 1).unwrap();
    assert_eq!(
        block
            .substitute(&block.step, &args, &["128".into()])
            .as_deref(),
        Some("((128) == 0 ? blockDim.x : (128))")
    );
    assert_eq!(
        block.substitute(&block.step, &args, &[]).as_deref(),
        Some("((0) == 0 ? blockDim.x : (0))")
    );
    // Too many template arguments, or a wrong count of arguments: the entry does not fit.
    assert!(block
        .substitute(&block.step, &args, &["1".into(), "2".into()])
        .is_none());
    assert!(block.substitute(&block.step, &[], &[]).is_none());
    // A member named like a parameter is not the parameter.
    assert_eq!(
        one.substitute("v.to + to", &args, &[]).as_deref(),
        Some("v.to + (n)")
    );
}

#[test]
fn malformed_range_entries_are_refused_with_file_and_line() {
    let cases = [
        ("names = [\"r\"]\nparams = [\"n-1\"]\nfrom = \"0\"\nto = \"n\"\nstep = \"1\"\n", 6, "not a parameter name"),
        ("names = [\"r<T>\"]\nfrom = \"0\"\nto = \"1\"\nstep = \"1\"\n", 6, "not a range name"),
        ("names = []\nfrom = \"0\"\nto = \"1\"\nstep = \"1\"\n", 6, "`names` is empty"),
        ("names = [\"r\"]\nfrom = \"0\"\nto = \"(1\"\nstep = \"1\"\n", 6, "not an expression"),
        ("names = [\"r\"]\nfrom = \"0; x\"\nto = \"1\"\nstep = \"1\"\n", 6, "not an expression"),
        ("names = [\"r\"]\nfrom = \"0\"\nto = \"1\"\n", 5, "step"),
        ("names = [\"r\"]\ntemplate-defaults = [\"0\"]\nfrom = \"0\"\nto = \"1\"\nstep = \"1\"\n", 6, "more entries"),
        ("names = [\"r\"]\nfrom = \"0\"\nto = \"1\"\nstep = \"1\"\n[[range]]\nnames = [\"r\"]\nfrom = \"0\"\nto = \"1\"\nstep = \"1\"\n", 11, "described twice"),
    ];
    for (entry, line, what) in cases {
        let e = err(&format!("{RANGE_HEAD}{entry}"));
        assert_eq!(e.line(), line, "{e}");
        assert!(e.message.contains(what), "{e} (wanted: {what})");
    }
}
