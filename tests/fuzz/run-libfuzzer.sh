#!/bin/sh
# run-libfuzzer.sh SECONDS [hostlist|wire] - builds a fuzz target (the
# hostlist parser, default, or the bootstrap's frame decoder) with clang's
# libFuzzer under ASan+UBSan and runs it for SECONDS over a copy of its
# corpus. Exit status: libFuzzer's (non-zero when it found a crash or a leak).
set -e
secs=${1:-60}
target=${2:-hostlist}
src=$(cd "$(dirname "$0")/../.." && pwd)
case $target in
hostlist) sources="$src/runtime/planner/hostlist.c" corpus="$src/tests/fuzz/corpus" max_len=256 ;;
wire) sources="$src/runtime/net/wire.c $src/runtime/net/handshake.c $src/runtime/net/auth.c
        $src/runtime/base/envlist.c"
    libs="-lhogweed -lnettle" corpus="$src/tests/fuzz/corpus-wire" max_len=4096 ;;
*) echo "run-libfuzzer.sh: unknown target '$target' (hostlist or wire)" >&2; exit 2 ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
: >"$out/config.h" # the build's config.h without munge: proofs use the secret
clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -I"$out" -I"$src/runtime/base" -I"$src/runtime/planner" -I"$src/runtime/net" \
    "$src/tests/fuzz/fuzz_$target.c" $sources "$src/runtime/base/error.c" \
    "$src/runtime/base/base_text.c" "$src/runtime/base/base_sys.c" ${libs:-} \
    -o "$out/fuzz_$target"
cp -r "$corpus" "$out/corpus"
"$out/fuzz_$target" -max_total_time="$secs" -max_len="$max_len" -print_final_stats=1 "$out/corpus"
