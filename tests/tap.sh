# tap.sh - sourced by the shell tests: a scratch directory removed at exit,
# ok STATUS DESCRIPTION printing one TAP line, tap_done printing the plan.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi; }
tap_done() { echo "1..$n"; test $fails -eq 0; }
