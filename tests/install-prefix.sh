#!/bin/bash
# install-prefix.sh - `./configure --prefix=DIR && make install` writes only
# under DIR: configure in a scratch directory, then every place `make -n
# install` would create or write (automake's install directories, the
# hooks' files) must lie under DIR, the plugin's too, and configure's
# summary says where the plugin goes and where Slurm loads plugins from.
# TAP.
. "$COHORT_SRCDIR/tests/tap.sh"
prefix=$tmp/prefix
mkdir -p "$tmp/build"
cd "$tmp/build" || bail "no $tmp/build"
"$COHORT_SRCDIR/configure" --prefix="$prefix" >"$tmp/configure.log" 2>&1 ||
    bail "configure --prefix=$prefix failed: $(tail -3 "$tmp/configure.log")"
make -n install >"$tmp/install.log" 2>&1 || bail "make -n install failed: $(tail -3 "$tmp/install.log")"
# the directories automake's rules make, and the files the hooks write
grep -o "mkdir -p '[^']*'" "$tmp/install.log" | sed "s/^mkdir -p '//; s/'$//" >"$tmp/dest"
grep -o '>"[^"]*"' "$tmp/install.log" | sed 's/^>"//; s/"$//' >>"$tmp/dest"
sort -u "$tmp/dest" -o "$tmp/dest"
outside=$(grep -v "^$prefix/" "$tmp/dest" | tr '\n' ' ')
[ "$(wc -l <"$tmp/dest")" -ge 5 ] && [ -z "$outside" ]
ok $? "configure --prefix=DIR: make install writes only under DIR ($(wc -l <"$tmp/dest") places${outside:+; outside: $outside})"
plugin_line=$(grep 'SPANK plugin ' "$tmp/configure.log")
case $plugin_line in
*'yes (spank_cohort.so into '*)
    grep -qx "$prefix/lib/slurm" "$tmp/dest" && grep -q "into $prefix/lib/slurm" <<<"$plugin_line"
    ok $? "the plugin goes to DIR/lib/slurm, and configure says so ($(echo $plugin_line))"
    ;;
*) skip "the plugin's place" "no plugin is built here ($(echo $plugin_line))" ;;
esac
tap_done
