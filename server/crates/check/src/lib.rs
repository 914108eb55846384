//! Kernel IR → memory access protocols → barrier intervals → solver queries → findings.
