//! The CUDA front end: source text → [`cudarace_ir::FileIr`].
