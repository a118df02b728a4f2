#!/bin/sh
# run-libfuzzer.sh SECONDS - builds the hostlist fuzz target with clang's
# libFuzzer under ASan+UBSan and runs it for SECONDS over a copy of the corpus.
# Exit status: libFuzzer's (non-zero when it found a crash or a leak).
set -e
secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -I"$src/runtime/planner" "$src/tests/fuzz/fuzz_hostlist.c" \
    "$src/runtime/planner/hostlist.c" "$src/runtime/planner/error.c" -o "$out/fuzz_hostlist"
cp -r "$src/tests/fuzz/corpus" "$out/corpus"
"$out/fuzz_hostlist" -max_total_time="$secs" -max_len=256 -print_final_stats=1 "$out/corpus"
