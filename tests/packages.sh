#!/bin/bash
# packages.sh - cohort as a site installs it: builds the Debian packages
# from a clean export of the tree (dpkg-buildpackage -us -uc -b), installs
# them on this machine (the test cluster's nodes are namespaces of it, so on
# every node), enables the plugin with the packaged plugstack.conf.d snippet
# in the test cluster, runs jobs with the packaged plugin, libcohort and
# Python package, then purges the packages. Builds the RPM with rpmbuild -bb
# (Debian's rpm) from the spec. Run by .ci/run after the build checks (it
# installs and removes system packages: not part of make check). TAP.
#   tests/packages.sh            (as root, from the source tree)
set -u
COHORT_SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
. "$COHORT_SRCDIR/tests/tap.sh"
top=$COHORT_SRCDIR
[ "$(id -u)" = 0 ] || skip_all "installs packages: needs root"
for c in dpkg-buildpackage dh rpmbuild git; do
    command -v "$c" >/dev/null || skip_all "$c is not installed (apt-get install dpkg-dev debhelper dh-python rpm)"
done
git -C "$top" rev-parse HEAD >/dev/null 2>&1 || skip_all "not a git checkout: nothing to export"
version=$(sed -n 's/^AC_INIT(\[cohort\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")

# --- Debian packages ------------------------------------------------------
git -C "$top" archive --format=tar --prefix="cohort-$version/" HEAD | tar -x -C "$tmp"
(cd "$tmp/cohort-$version" && DEB_BUILD_OPTIONS="parallel=$(nproc)" \
    dpkg-buildpackage -us -uc -b) >"$tmp/deb.log" 2>&1
ok $? "dpkg-buildpackage -us -uc -b builds ($(tail -3 "$tmp/deb.log" | tr '\n' ' ' | cut -c1-200))"
debs="slurm-spank-cohort libcohort0 libcohort-dev cohort-tools python3-cohort"
# -Pnocuda: the same without libcohort-nccl0
mkdir "$tmp/nocuda"
git -C "$top" archive --format=tar --prefix="cohort-$version/" HEAD | tar -x -C "$tmp/nocuda"
(cd "$tmp/nocuda/cohort-$version" && DEB_BUILD_OPTIONS="parallel=$(nproc)" \
    dpkg-buildpackage -us -uc -b -Pnocuda) >"$tmp/nocuda.log" 2>&1
[ $? = 0 ] && [ -e "$tmp/nocuda/libcohort0_${version}_"*.deb ] &&
    [ -z "$(ls "$tmp/nocuda"/libcohort-nccl0_* 2>/dev/null)" ]
ok $? "dpkg-buildpackage -Pnocuda builds all but libcohort-nccl0 ($(ls "$tmp/nocuda"/*.deb 2>/dev/null | grep -vc dbgsym) packages)"
files=""
for p in $debs; do files="$files $(ls "$tmp/${p}_${version}_"*.deb 2>/dev/null)"; done
[ "$(echo $files | wc -w)" = 5 ] || bail "packages missing: $(ls "$tmp"/*.deb 2>/dev/null | tr '\n' ' ')"
trap 'dpkg --purge $debs >/dev/null 2>&1; [ -n "${dir:-}" ] && "$top/tests/cluster/cluster.sh" down "$dir"; rm -rf "$tmp"' EXIT
dpkg -i $files >"$tmp/install.log" 2>&1
ok $? "dpkg -i of the plugin, libcohort, -dev, the tools and the Python package ($(tail -2 "$tmp/install.log" | tr '\n' ' ' | cut -c1-200))"
plugin=$(dpkg -L slurm-spank-cohort | grep '/spank_cohort.so$')
snippet=$(dpkg -L slurm-spank-cohort | grep '/examples/cohort.conf$')
[ -e "$plugin" ] && [ -e "$snippet" ] && [ ! -e /etc/slurm/plugstack.conf.d/cohort.conf ] &&
    grep -q "^optional $plugin " "$snippet" &&
    dpkg-query -W -f '${Breaks}' slurm-spank-cohort | grep -q "slurmd (<< $(dpkg-query -W -f '${Version}' libslurm-dev | cut -d. -f1,2)~)"
ok $? "the plugin is in Slurm's plugin directory ($plugin), not enabled; the example snippet names it (optional); it breaks other Slurm releases ($(dpkg-query -W -f '${Breaks}' slurm-spank-cohort | cut -c1-80))"
got=$(cd / && env -u PYTHONPATH -u COHORT_LIBRARY /usr/bin/python3 -c 'import cohort; print(cohort.__file__, cohort.api_version())'
    env -u PYTHONPATH /usr/bin/python3 -m cohort info --env "$top/tests/fixtures/demo.env" --topology "$top/tests/fixtures/dgx-a100.xml" | grep -c 'rank 9 of 16')
case $(echo $got) in "/usr/lib/python3/dist-packages/cohort/__init__.py 100"?" 1") r=0 ;; *) r=1 ;; esac
ok $r "import cohort finds the packaged libcohort, python3 -m cohort info the packaged cohort-info, by themselves ($(echo $got))"
pkg-config --exists cohort && [ "$(pkg-config --modversion cohort)" = "$version" ] &&
    printf '#include <cohort.h>\nint main(void){return cohort_api_version() < 1000;}\n' >"$tmp/t.c" &&
    cc -o "$tmp/t" "$tmp/t.c" $(pkg-config --cflags --libs cohort) && "$tmp/t"
ok $? "libcohort-dev: a program builds with pkg-config cohort and runs"

# --- a job with the packaged plugin on the test cluster --------------------
cluster="$top/tests/cluster/cluster.sh"
if why=$("$cluster" check); then
    dir="$tmp/cluster"
    mkdir -p "$dir/etc"
    cp "$snippet" "$dir/etc/plugstack.conf"
    "$cluster" up "$dir" 2 "$top" "$tmp" >"$tmp/up.log" 2>&1 || bail "the test cluster did not start: $(tail -3 "$tmp/up.log")"
    run() { SLURM_TIMELIMIT=2 "$cluster" exec "$dir" head timeout 120 "$@"; }
    run srun -N2 --ntasks-per-node=2 --cohort=train sh -c 'echo "$SLURM_PROCID $RANK $LOCAL_RANK $MASTER_ADDR ${#COHORT_SECRET}"' \
        >"$tmp/job" 2>"$tmp/job.err"
    [ "$(sort -n "$tmp/job" | tr '\n' ';')" = "0 0 0 n1 64;1 1 1 n1 64;2 2 0 n1 64;3 3 1 n1 64;" ]
    ok $? "srun -N2 --ntasks-per-node=2 --cohort=train with the packaged plugin: RANK, LOCAL_RANK, MASTER_ADDR, the secret ($(sort -n "$tmp/job" | tr '\n' ';')$(head -c 150 "$tmp/job.err"))"
    cat >"$tmp/q.py" <<'END'
import cohort
with cohort.init() as c:
    with c.work("q", 1000) as w:
        n = sum(len(b) for b in w)
    total = sum(c.allgather(w.committed))
    if c.rank == 0:
        print("items", total, "ranks", c.size, "via", c.bootstrap)
END
    run srun -N2 --ntasks-per-node=2 --cohort=infer /usr/bin/python3 "$tmp/q.py" >"$tmp/py" 2>"$tmp/py.err"
    [ "$(cat "$tmp/py")" = "items 1000 ranks 4 via tcp" ]
    ok $? "the packaged Python package and work coordinator on 2 nodes ($(cat "$tmp/py") $(head -c 150 "$tmp/py.err"))"
else
    skip "jobs with the packaged plugin" "no test cluster here: $why"
    skip "the packaged Python package on the cluster" "no test cluster here: $why"
fi
"$cluster" down "$dir" >/dev/null 2>&1
dir=
dpkg --purge $debs >"$tmp/purge.log" 2>&1 && [ ! -e "$plugin" ] && ! dpkg -s libcohort0 >/dev/null 2>&1
ok $? "the packages purge cleanly"

# --- RPM ------------------------------------------------------------------
rpmtop="$tmp/rpm"
mkdir -p "$rpmtop/SOURCES"
git -C "$top" archive --format=tar.gz --prefix="cohort-$version/" -o "$rpmtop/SOURCES/cohort-$version.tar.gz" HEAD
rpmbuild --define "_topdir $rpmtop" --nodeps -bb "$top/cohort.spec" >"$tmp/rpm.log" 2>&1
rc=$?
rpms=$(find "$rpmtop/RPMS" -name '*.rpm' 2>/dev/null | sed 's|.*/||' | sort | tr '\n' ' ')
[ $rc = 0 ] && [ -n "$rpms" ]
ok $? "rpmbuild -bb cohort.spec builds ($rpms$(tail -2 "$tmp/rpm.log" | tr '\n' ' ' | cut -c1-200))"

tap_done
