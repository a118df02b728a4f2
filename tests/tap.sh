# tap.sh - sourced by the shell tests: a scratch directory removed at exit,
# ok STATUS DESCRIPTION printing one TAP line, skip and skip_all for what
# cannot run here (with the reason), bail for a test bed that did not come
# up, tap_done printing the plan and how long the script took (a TAP
# comment, for whoever makes CI faster).
tmp=$(mktemp -d) || exit 1
tap_start=$(date +%s)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
bail() { echo "Bail out! $1"; exit 1; }
tap_done() { echo "1..$n"; echo "# took $(($(date +%s) - tap_start)) s"; test $fails -eq 0; }
