#!/bin/bash
# store-torch.sh - PyTorch's own store tests against cohort's store
# (tests/store/torch_store_tests.py: a fresh node agent and holder per
# test, the tests' server fixture pointed at the agent, their assertions
# unchanged), taken from an unpacked PyTorch source named by
# COHORT_PYTORCH_SRC (Debian's: `apt-get source pytorch`, with deb-src
# lines), never copied into cohort: test/distributed/test_store.py's
# TCPStoreTest and PrefixTCPStoreTest with this machine's torch, and
# test/cpp/c10d/TCPStoreTest.cpp (the watch tests among them), built here
# against libtorch-dev and GoogleTest with _createServer dialing the
# agent. Skipped, saying why, without the source, torch or the C++ build's
# needs. TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
py=${COHORT_PYTHON_TORCH:-/usr/bin/python3}
src=${COHORT_PYTORCH_SRC:-}
[ -n "$src" ] || skip_all "COHORT_PYTORCH_SRC is not set (an unpacked PyTorch source: apt-get source pytorch)"
[ -f "$src/test/distributed/test_store.py" ] || skip_all "$src holds no test/distributed/test_store.py"
"$py" -c 'import torch.distributed' 2>/dev/null || skip_all "$py lacks torch"

# results NAME FILE: one TAP line per "ok"/"not ok"/"skip" line of the runner.
results() {
    local line
    while IFS= read -r line; do
        case $line in
        "ok "*) ok 0 "$1: ${line#ok }" ;;
        "not ok "*) ok 1 "$1: ${line#not ok }" ;;
        "skip "*) skip "$1: ${line#skip }" "not a store's answers" ;;
        esac
    done <"$2"
    grep -q '^done ' "$2" || ok 1 "$1: the runner ended early ($(tail -c 300 "$2" | tr '\n' ' '))"
}

(cd "$COHORT_SRCDIR/tests/store" && timeout 900 "$py" torch_store_tests.py py "$src") >"$tmp/py" 2>&1
results test_store.py "$tmp/py"

cpp=$src/test/cpp/c10d/TCPStoreTest.cpp
if [ ! -f "$cpp" ]; then
    skip "TCPStoreTest.cpp" "$src has no test/cpp/c10d/TCPStoreTest.cpp"
elif [ ! -f /usr/include/torch/csrc/distributed/c10d/TCPStore.hpp ] ||
    [ ! -f /usr/include/gtest/gtest.h ] || ! command -v g++ >/dev/null; then
    skip "TCPStoreTest.cpp" "needs g++, libtorch-dev and libgtest-dev (apt-get install libtorch-dev libgtest-dev)"
else
    # _createServer, alone, made a client of the agent at COHORT_STORE_TEST_PORT
    sed -e '/^constexpr int defaultTimeout = 20;/a static uint16_t cohortPort() { return (uint16_t)std::atoi(std::getenv("COHORT_STORE_TEST_PORT")); }' \
        -e '/^c10::intrusive_ptr<c10d::TCPStore> _createServer(/,/^}/{s|/\* port \*/ 0,|/* port */ cohortPort(),|;s|/\* isServer \*/ true,|/* isServer */ false,|}' \
        "$cpp" >"$tmp/TCPStoreTest.cpp"
    if [ "$(grep -c 'cohortPort()' "$tmp/TCPStoreTest.cpp")" != 2 ] || ! grep -q '/\* isServer \*/ false,' "$tmp/TCPStoreTest.cpp"; then
        ok 1 "TCPStoreTest.cpp's _createServer is not as expected: the fixture could not be pointed at the agent"
    elif ! g++ -std=c++17 -O1 -I"$src/test/cpp/c10d" "$tmp/TCPStoreTest.cpp" -o "$tmp/tcpstore_test" \
        -ltorch -ltorch_cpu -lc10 -lgtest -lgtest_main -pthread >"$tmp/cc" 2>&1; then
        ok 1 "TCPStoreTest.cpp builds against libtorch ($(tail -c 300 "$tmp/cc" | tr '\n' ' '))"
    else
        (cd "$COHORT_SRCDIR/tests/store" && timeout 1800 "$py" torch_store_tests.py cpp "$tmp/tcpstore_test") >"$tmp/cpp" 2>&1
        results TCPStoreTest.cpp "$tmp/cpp"
    fi
fi
tap_done
