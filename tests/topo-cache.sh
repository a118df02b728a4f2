#!/bin/bash
# topo-cache.sh - the plugin's own topology cache under real Slurm
# (tests/cluster, 2 nodes; plugstack topology_cache= a directory of the run):
# written by slurmd at its start, root's, one file for this boot of this
# machine; used by a step (its verbose line says so) with the same plan as
# discovery; a stale, foreign-owned, group-writable or damaged cache is not
# used (the step discovers, says why, and runs) and is written anew as root
# at the step's end; an admin's topology= wins; topology_cache=no writes
# nothing. TAP. Skipped where the cluster cannot run.
. "$COHORT_SRCDIR/tests/tap.sh"
. "$COHORT_SRCDIR/tests/cluster/test-cluster.sh"
cluster_skip
cluster_fresh topo-cache-run
cache="$dir/cache"
plugstack() { echo "required $plugin default=env topology_cache=$cache $*" >"$dir/etc/plugstack.conf"; }
plugstack
cluster_up 2

on() { local h=$1; shift; "$cluster" exec "$dir" "$h" "$@"; }
run() { # run OUT SRUN_ARGS...: srun -Q -N1 -n2 --cohort=train --cohort-verbose on head
    local out=$1
    shift
    SLURM_TIMELIMIT=2 on head timeout 120 srun -Q -N1 -n2 --cohort=train --cohort-verbose "$@" \
        sh -c 'echo "rank=$SLURM_PROCID cpus=$COHORT_CPUS"' 2>"$out.err" | sort >"$out"
}
files() { (cd "$cache" 2>/dev/null && ls -A); }
# rewritten: waits (60 s at most) for slurmstepd's end-of-step hook, which
# may run after srun has returned, to have written the cache anew.
rewritten() {
    timeout 60 sh -c 'until [ "$(cd "$1" && ls -A)" = "$2" ] && [ "$(stat -c %U "$1/$2")" = root ] &&
        grep -q "<topology" "$1/$2"; do sleep 0.05; done' _ "$cache" "$name"
}
# why FILE: rank 0's verbose line, from "topology" on.
why() { grep -m1 '^cohort: rank 0/' "$1.err" | sed 's/.*; \(topology\)/\1/; s/.*; \(no topology\)/\1/'; }

name=$(files)
case $name in topology-????????????????.xml) ok=0 ;; *) ok=1 ;; esac
[ $ok = 0 ] && [ "$(stat -c '%U %a' "$cache" "$cache/$name" | tr '\n' ' ')" = "root 755 root 644 " ] &&
    grep -q '<topology' "$cache/$name"
ok $? "slurmd's start wrote the cache: one file for this boot, root's, 0644 in a 0755 directory ($name)"

run "$tmp/cached"
plugstack topology_cache=no
run "$tmp/discovered"
plugstack
grep -q '; topology from the node.s cache' "$tmp/cached.err" &&
    [ "$(cat "$tmp/cached")" = "$(cat "$tmp/discovered")" ] && [ -s "$tmp/cached" ]
ok $? "a step plans from the cache, as discovery would ($(why "$tmp/cached"); $(tr '\n' ' ' <"$tmp/cached"))"

mv "$cache/$name" "$cache/topology-0000000000000000.xml"
run "$tmp/stale"
grep -q "no topology cache for this boot of this machine in $cache: discovered" "$tmp/stale.err" &&
    [ -s "$tmp/stale" ] && rewritten
ok $? "a cache of another boot or machine: not used, the step discovers and runs, the cache is written anew at its end ($(why "$tmp/stale"); now: $(files | tr '\n' ' '))"

for bad in owner group damaged; do
    case $bad in
    owner) chown nobody "$cache/$name" ;;
    group) chmod 775 "$cache" ;;
    damaged) echo '<not hwloc' >"$cache/$name" ;;
    esac
    run "$tmp/$bad"
    case $bad in
    owner) want="topology cache $cache/$name is not root's alone: not used" ;;
    group) want="topology cache $cache is not root's alone: not used" ;;
    damaged) want="topology cache $cache/$name not used: " ;;
    esac
    chmod 755 "$cache"
    grep -qF "$want" "$tmp/$bad.err" && [ -s "$tmp/$bad" ] && rewritten
    ok $? "a cache $bad: not used, the step runs, the cache is written anew ($(why "$tmp/$bad"))"
done
[ "$(stat -c '%U %a' "$cache/$name")" = "root 644" ] && grep -q '<topology' "$cache/$name"
ok $? "after them, the cache is root's and whole again ($(stat -c '%U %a' "$cache/$name"))"

mkdir -p "$dir/open/cache"
cp "$cache/$name" "$dir/open/cache/"
chmod 777 "$dir/open"
plugstack topology_cache="$dir/open/cache"
run "$tmp/open"
plugstack
grep -qF "topology cache $dir/open/cache is not root's alone: not used" "$tmp/open.err" && [ -s "$tmp/open" ]
ok $? "a cache under a directory others can write (not sticky): not used ($(why "$tmp/open"))"

plugstack topology="$COHORT_SRCDIR/tests/fixtures/dgx-a100.xml"
run "$tmp/admin"
plugstack
! grep -q 'topology from the node.s cache\|topology cache' "$tmp/admin.err" &&
    grep -q 'topology file .*dgx-a100.xml has 256 CPUs' "$tmp/admin.err"
ok $? "an admin's topology= wins over the cache ($(grep -m1 -o 'topology file [^;]*' "$tmp/admin.err"))"

rm -rf "$cache"
plugstack topology_cache=no
run "$tmp/none"
plugstack
[ ! -e "$cache" ] && [ -s "$tmp/none" ] && ! grep -q 'topology' "$tmp/none.err"
ok $? "topology_cache=no: no cache written, nothing said ($(grep -c . "$tmp/none") tasks)"

tap_done
