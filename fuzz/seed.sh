#!/usr/bin/env bash
# Seeds the fuzz corpora from the CUDA fixtures and examples (corpus/ is not committed).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/parse_lower corpus/incremental_reparse
n=0
for f in ../tests/fixtures/*/*.cu ../examples/*.cu; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  cp "$f" "corpus/parse_lower/seed$n"
  # incremental: BASE \0 OPS — one op that inserts "x" at byte 40 and deletes 1 byte at 300,
  # so the fuzzer starts from inputs that already exercise edits.
  { cat "$f"; printf '\0'; printf '\x28\x00\x00\x01x'; printf '\x2c\x01\x01\x00'; } > "corpus/incremental_reparse/seed$n"
done
echo "seeded $n inputs per target"
