#!/bin/sh
# hardening.sh - what runs inside slurmstepd or inside jobs is built hardened
# (configure's HARDEN_CFLAGS and HARDEN_LDFLAGS), read from the built ELF
# files with readelf and nm: a read-only GOT after relocation (GNU_RELRO and
# BIND_NOW), stack canaries (__stack_chk_fail), glibc's checked functions
# (_FORTIFY_SOURCE, not in the sanitizer build), and libcohort's interface:
# no hwloc, only cohort_* exported, every function of cohort.h exported (so
# that cohort.map keeps up with the headers), the public version nodes
# (COHORT_1, COHORT_1.1, ...) holding exactly cohort.h's functions and every
# other export a cohort_internal_* one under COHORT_PRIVATE_1 (no internal
# symbol in the public ABI). Emits TAP; a failure says what was seen.
b="$COHORT_BUILDDIR"
headers="$COHORT_SRCDIR/runtime/libcohort/cohort.h $COHORT_SRCDIR/runtime/libcohort/cohort_work.h $COHORT_SRCDIR/runtime/libcohort/cohort_streams.h"
. "$COHORT_SRCDIR/tests/tap.sh"

command -v readelf >/dev/null && command -v nm >/dev/null ||
    skip_all "readelf or nm not found (binutils)"

# check STATUS DESCRIPTION SEEN: one TAP line; a failure adds what was seen.
check() {
    if [ "$1" = 0 ]; then ok 0 "$2"; else ok 1 "$2; seen: $3"; fi
}

# The real ELF file of a libtool library (DIR/NAME.la -> DIR/.libs/NAME.so)
# or of a program (DIR/.libs/NAME behind a libtool wrapper, else DIR/NAME);
# nothing when it is not built in this configuration.
lib_elf() { [ -e "$b/$1/$2.la" ] && echo "$b/$1/.libs/$2.so"; }
prog_elf() {
    if [ -e "$b/$1/.libs/$2" ]; then echo "$b/$1/.libs/$2"
    elif [ -e "$b/$1/$2" ]; then echo "$b/$1/$2"; fi
}

libcohort=$(lib_elf runtime/libcohort libcohort)
[ -n "$libcohort" ] && readelf -h "$libcohort" >/dev/null 2>&1 ||
    bail "libcohort is not built in $b (run make first)"
plugin=$(lib_elf plugin spank_cohort)
nccl=$(lib_elf runtime/libcohort libcohort-nccl)
info=$(prog_elf runtime/tools cohort-info)
launch=$(prog_elf runtime/tools cohort-launch)

# Undefined dynamic symbols of $1, without their version.
undefined() { nm -D --undefined-only "$1" | awk '{ sub(/@.*/, "", $2); print $2 }'; }

for f in "$libcohort" "$plugin" "$nccl" "$info" "$launch"; do
    [ -n "$f" ] || continue
    name=${f##*/}
    types=$(readelf -lW "$f" | awk '/^  [A-Z]/ && $1 != "Type" { printf "%s ", $1 }')
    case " $types" in *" GNU_RELRO "*) s=0 ;; *) s=1 ;; esac
    check $s "$name has a GNU_RELRO segment (-z relro)" "program headers ${types% }"
    flags=$(readelf -dW "$f" | awk '/\((FLAGS|FLAGS_1|BIND_NOW)\)/ {
        $1 = ""; sub(/^ /, ""); printf "%s%s", sep, $0; sep = "; " }')
    case "$flags" in
    *"(FLAGS)"*BIND_NOW* | *"(FLAGS_1)"*NOW* | *"(BIND_NOW)"*) s=0 ;;
    *) s=1 ;;
    esac
    check $s "$name is bound at load time (-z now: BIND_NOW)" \
        "dynamic section flags: ${flags:-none}"
done

# -fstack-protector-strong puts canaries only in functions with arrays or
# addresses taken on the stack: these four have char buffers there.
for f in "$libcohort" "$plugin" "$info" "$launch"; do
    [ -n "$f" ] || continue
    name=${f##*/}
    chk=$(undefined "$f" | grep -c '^__stack_chk_fail$')
    check $((chk == 0)) "$name checks stack canaries (references __stack_chk_fail)" \
        "no __stack_chk_fail among its $(undefined "$f" | wc -l) undefined symbols"
done

# What configure chose (it leaves _FORTIFY_SOURCE out without -O).
harden_cflags=$(sed -n 's/^HARDEN_CFLAGS = //p' "$b/Makefile")
fortify=no
case "$harden_cflags" in *-D_FORTIFY_SOURCE=*) fortify=yes ;; esac
if [ -n "${COHORT_SANITIZED:-}" ]; then
    skip "libcohort.so uses glibc's checked functions (_FORTIFY_SOURCE=2)" \
        "the sanitizer build leaves _FORTIFY_SOURCE out (see configure.ac)"
elif [ "$fortify" = no ]; then
    skip "libcohort.so uses glibc's checked functions (_FORTIFY_SOURCE=2)" \
        "configure left _FORTIFY_SOURCE out (CFLAGS without -O?): HARDEN_CFLAGS '$harden_cflags'"
else
    fortified=$(undefined "$libcohort" | grep '_chk$' | grep -v '^__stack_chk_fail$' | tr '\n' ' ')
    [ -n "$fortified" ]
    check $? \
        "libcohort.so uses glibc's checked functions (_FORTIFY_SOURCE=2)${fortified:+: ${fortified% }}" \
        "no __*_chk symbol but __stack_chk_fail among its undefined symbols"
fi

needed=$(readelf -dW "$libcohort" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $NF); printf "%s ", $NF }')
case " $needed" in *" libhwloc"*) s=1 ;; *) s=0 ;; esac
check $s "libcohort.so does not link hwloc" "NEEDED ${needed% }"

# Exported names with their version node ("NAME NODE", "-" for none), and
# without; absolute (A) entries are the version script's node names, not
# symbols.
versioned=$(nm -D --defined-only "$libcohort" | awk '$2 != "A" {
    name = $3; node = "-"
    if (name ~ /@/) { node = name; sub(/^[^@]*@+/, "", node); sub(/@.*/, "", name) }
    print name, node }')
exported=$(echo "$versioned" | awk '{ print $1 }')
others=$(echo "$exported" | grep -v '^cohort_' | tr '\n' ' ')
[ -z "$others" ]
check $? "libcohort.so exports only cohort_* symbols" \
    "also exported: ${others% }"

# Function names declared in cohort.h, outside comments.
declared=$(awk '{
    line = $0; out = ""
    while (line != "") {
        if (incomment) {
            i = index(line, "*/")
            if (!i) { line = ""; break }
            line = substr(line, i + 2); incomment = 0
        } else {
            i = index(line, "/*")
            if (!i) { out = out line; line = "" }
            else { out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1 }
        }
    }
    sub(/\/\/.*/, "", out); print out
}' $headers | grep -o 'cohort_[a-z_0-9]*[[:space:]]*(' | sed 's/[[:space:]]*($//' | sort -u)
[ -n "$declared" ] || bail "no cohort_* function found in $headers"
missing=""
for fn in $declared; do
    echo "$exported" | grep -qx "$fn" || missing="$missing $fn"
done
[ -z "$missing" ]
check $? \
    "libcohort.so exports all $(echo "$declared" | wc -l) functions of cohort.h, cohort_work.h and cohort_streams.h" \
    "not exported (missing from runtime/libcohort/cohort.map?):$missing"

# The public nodes (COHORT_<major>[.<minor>]) hold the API and nothing else.
public=$(echo "$versioned" | awk '$2 ~ /^COHORT_[0-9][0-9.]*$/ { print $1 }' | sort -u)
stray=$(echo "$public" | grep -vxF "$declared" | tr '\n' ' ')
unversioned=$(echo "$declared" | grep -vxF "$public" | tr '\n' ' ')
[ -n "$public" ] && [ -z "$stray" ] && [ -z "$unversioned" ]
check $? "libcohort.so's public version nodes (COHORT_1...) hold exactly the functions of cohort.h, cohort_work.h and cohort_streams.h" \
    "${stray:+in a public node but not declared in cohort.h: ${stray% }; }${unversioned:+declared but not in a public node: ${unversioned% }; }public: $(echo $public)"
private=$(echo "$versioned" | awk '$2 !~ /^COHORT_[0-9][0-9.]*$/ &&
    !($1 ~ /^cohort_internal_/ && $2 == "COHORT_PRIVATE_1") { printf "%s@%s ", $1, $2 }')
[ -z "$private" ]
check $? "libcohort.so exports nothing else than cohort_internal_* under COHORT_PRIVATE_1" \
    "also exported: ${private% }"

tap_done
