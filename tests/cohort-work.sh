#!/bin/sh
# cohort-work.sh - cohort-work from the outside, over journals written here
# by an independent encoder of the format journal.h documents: the text and
# JSON summaries (done, set aside, remaining, a torn tail), names printed
# safely, and one line on standard error with exit 1 for a missing,
# damaged, linked, shared or old journal, exit 2 for bad usage. Emits TAP.
work="$COHORT_BUILDDIR/runtime/tools/cohort-work"
. "$COHORT_SRCDIR/tests/tap.sh"
command -v python3 >/dev/null || skip_all "no python3 to write journals"

cat >"$tmp/mk.py" <<'EOP'
import hashlib, os, struct, sys

M = (1 << 64) - 1

def mix(h, w):
    h ^= w
    h ^= h >> 33
    h = h * 0xff51afd7ed558ccd & M
    h ^= h >> 33
    h = h * 0xc4ceb9fe1a85ec53 & M
    return h ^ h >> 33

def check(b):
    return hashlib.sha256(b).digest()[:8]

# Format 2: the header, then each record in a frame of its own (as if each
# had been a group commit), then the tail.
def journal(path, name, n, records, tail=b'', magic=b'COHORTJ2'):
    name = name if isinstance(name, bytes) else name.encode()
    h = magic + struct.pack('>QI', n, len(name)) + name.ljust(128, b'\0')
    out = h + check(h)
    key = struct.unpack('>Q', out[-8:])[0]
    for seq, (typ, body) in enumerate(records):
        r = struct.pack('>BI', typ, len(body)) + body
        head = b'CJFR' + struct.pack('>IQ', len(r), seq) + check(r)
        w = struct.unpack('>QQQ', head)
        out += head + struct.pack('>Q', mix(mix(mix(key, w[0]), w[1]), w[2])) + r
    open(path, 'wb').write(out + tail)
    os.chmod(path, 0o644)  # whatever the umask: a journal others can write is refused

def spans(*s):
    return (1, b''.join(struct.pack('>QQ', lo, hi) for lo, hi in s))

def aside(i, attempts):
    return (2, struct.pack('>QI', i, attempts))

d = sys.argv[1]
# 650 is set aside, then committed by a later step; the tail is a cut record
journal(d + '/frames.j', 'frames', 1000,
        [spans((0, 500)), aside(510, 3), aside(520, 4), aside(650, 2), spans((600, 700))],
        tail=struct.pack('>BI', 1, 16) + b'\0' * 5)
journal(d + '/many.j', 'many', 100, [aside(i, 3) for i in range(25)] + [spans((50, 100))])
# names another user could have written: terminal escapes, a C1 control
# in UTF-8, bytes that are not UTF-8, a backslash, and UTF-8 text
journal(d + '/esc.j', b'\x1b]0;owned\x07\x1b[2J\\caf\xc3\xa9', 10, [spans((0, 2))])
journal(d + '/c1.j', b'x\xc2\x9b31m\xff\xfe', 10, [])
journal(d + '/\x1b[31mred.j', 'red', 10, [])
journal(d + '/v1.j', 'old', 10, [], magic=b'COHORTJ1')
b = bytearray(open(d + '/frames.j', 'rb').read())
b[156 + 7] ^= 0x01
open(d + '/damaged.j', 'wb').write(bytes(b))
os.chmod(d + '/damaged.j', 0o644)
EOP
python3 "$tmp/mk.py" "$tmp" || bail "cannot write the test journals"

out=$("$work" status "$tmp/frames.j")
ok $? "status prints a summary"
printf '%s\n' "$out" | grep -qx "queue:     'frames', 1000 items" &&
    printf '%s\n' "$out" | grep -qx 'done:      600' &&
    printf '%s\n' "$out" | grep -qx 'set aside: 2: 510 (3 attempts), 520 (4 attempts)' &&
    printf '%s\n' "$out" | grep -qx 'remaining: 398'
ok $? "text: done, set aside with ids, remaining"
printf '%s\n' "$out" | grep -qx 'torn tail: 10 bytes ignored (a write that did not finish)'
ok $? "text: the torn tail ignored"

out=$("$work" status "$tmp/frames.j" --format json)
ok $? "--format json"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
want = {"queue": "frames", "n_items": 1000, "committed": 600, "set_aside": 2,
        "set_aside_ids": [{"id": 510, "attempts": 3}, {"id": 520, "attempts": 4}],
        "remaining": 398, "torn_tail_bytes": 10, "items_per_s": None, "eta_s": None,
        "leased": None, "workers": None, "recorded_s_ago": None}  # no progress recorded
assert d == want, d
' "$out"
ok $? "json has exactly the documented fields and values"

out=$("$work" --format=json status "$tmp/many.j")
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["set_aside"] == 25 and len(d["set_aside_ids"]) == 25, d
assert d["remaining"] == 25 and d["torn_tail_bytes"] == 0, d
' "$out"
ok $? "json lists every set-aside id"
"$work" status "$tmp/many.j" |
    grep -qx 'set aside: 25: 0 (3 attempts), .*, 19 (3 attempts), and 5 more'
ok $? "text names the first 20 set-aside ids"
"$work" status "$tmp/many.j" | grep -qx 'torn tail: none'
ok $? "text: no torn tail"

# A name from another user's journal must not reach a terminal raw.
esc=$(printf '\033')
out=$("$work" status "$tmp/esc.j")
ok $? "status of a journal whose name holds terminal escapes"
printf '%s\n' "$out" | grep -qF "queue:     '\\x1b]0;owned\\x07\\x1b[2J\\\\café', 10 items" &&
    ! printf '%s' "$out" | grep -q "$esc"
ok $? "text: control bytes escaped as \\xNN, a backslash doubled, UTF-8 text kept"
out=$("$work" status "$tmp/c1.j")
printf '%s\n' "$out" | grep -qF "queue:     'x\\xc2\\x9b31m\\xff\\xfe', 10 items"
ok $? "text: a C1 control in UTF-8 and bytes that are not UTF-8 escaped"
out=$("$work" status "$tmp/${esc}[31mred.j")
printf '%s\n' "$out" | grep -qF "journal:   $tmp/\\x1b[31mred.j (" && ! printf '%s' "$out" | grep -q "$esc"
ok $? "text: the journal's path escaped too"
"$work" status "$tmp/${esc}[31mnone.j" 2>&1 | grep -qF "cannot open journal $tmp/\\x1b[31mnone.j"
ok $? "an error line escapes the path"
# json_name JOURNAL NAME: the JSON status is printable ASCII, its queue NAME
# (a Python string literal).
json_name() {
    "$work" status "$1" --format json >"$tmp/out.json" && python3 -c '
import json, sys
raw = open(sys.argv[1], "rb").read()
assert all(0x20 <= c < 0x7f or c == 0x0a for c in raw), raw
d = json.loads(raw)
assert d["queue"] == eval(sys.argv[2]), d
' "$tmp/out.json" "$2"
}
json_name "$tmp/esc.j" '"\x1b]0;owned\x07\x1b[2J\\caf\u00e9"'
ok $? "json: the name exact, every byte printable ASCII"
json_name "$tmp/c1.j" '"x\\xc2\\x9b31m\\xff\\xfe"'
ok $? "json: a name that is not UTF-8 is given escaped as in text"

# One line on standard error, nothing on standard output, and the status.
fails_with() {
    want=$1 pattern=$2
    shift 2
    "$work" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq "$want" ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -q "$pattern" "$tmp/err" || { echo "# rc $rc: $(cat "$tmp/err")"; return 1; }
}
fails_with 1 "journal $tmp/damaged.j is damaged at byte 156 (.*): it cannot be resumed" \
    status "$tmp/damaged.j"
ok $? "a damaged journal: one line with its byte offset, exit 1"
fails_with 1 "journal $tmp/v1.j is of format 1, and this cohort reads format 2 only: finish" \
    status "$tmp/v1.j"
ok $? "a journal of format 1: one line saying what to do, exit 1"
fails_with 1 "cannot open journal $tmp/none.j: No such file or directory" status "$tmp/none.j"
ok $? "a missing journal: one line, exit 1"
fails_with 1 "journal $tmp/mk.py has a bad header at byte 0 (not a cohort journal)" \
    status "$tmp/mk.py"
ok $? "another kind of file: one line, exit 1"
ln -s frames.j "$tmp/link.j"
fails_with 1 "journal $tmp/link.j is a symbolic link, which cohort does not follow" \
    status "$tmp/link.j"
ok $? "a symbolic link: one line, exit 1"
cp "$tmp/frames.j" "$tmp/open.j" && chmod 0666 "$tmp/open.j"
fails_with 1 "journal $tmp/open.j can be written by its group or by others (mode 0666)" \
    status "$tmp/open.j"
ok $? "a journal anyone can write: one line, exit 1"
fails_with 2 "a command is needed"
ok $? "no command: exit 2"
fails_with 2 "unknown command frob" frob "$tmp/frames.j"
ok $? "an unknown command: exit 2"
fails_with 2 "format is not one of text, json: xml" status "$tmp/frames.j" --format xml
ok $? "an unknown format: exit 2"
fails_with 2 "status takes one JOURNAL" status "$tmp/frames.j" "$tmp/many.j"
ok $? "two journals: exit 2"
fails_with 2 "unknown option or missing value: --frob" status --frob "$tmp/frames.j"
ok $? "an unknown option: exit 2"
"$work" --help | grep -q '^usage: cohort-work status JOURNAL'
ok $? "--help prints the usage"

tap_done
