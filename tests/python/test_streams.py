"""c.streams: add, remove, events, release, report, mine, status, bad
input, a worker's death."""

from conftest import step


def test_placement_remove_release():
    s = step(4, 2, "streams_basic", PY_VICTIM=3)
    assert s.rc == 0, s.out
    got = s.every(4)
    owners = got[0]["owners"]
    keys = [k for o in owners for k in o]
    assert sorted(keys) == ["cam%02d" % i for i in range(40)], owners
    assert [sorted(g["first"]) for g in got] == owners
    assert len(owners[0]) > max(len(o) for o in owners[1:])  # capacity 2 vs 1
    removed = {"cam%02d" % i for i in range(5)}
    revoked = {k for g in got for k in g["revoked"]}
    assert removed <= revoked  # and streams shed by workers the removal left above the bound
    final = [k for g in got for k in g["mine"]]
    assert sorted(final) == sorted(set(keys) - removed)
    key, epoch = got[3]["given"]
    assert key not in got[3]["mine"] and key in final
    assert [g["mine"][key] for g in got if key in g["mine"]][0] > epoch  # a new ownership
    assert got[0]["status"][0] == 35 and got[0]["status"][4] == 4


def test_bad_input():
    s = step(2, 1, "streams_bad")
    assert s.rc == 0, s.out
    for g in s.every(2):
        m = g["got"]
        assert m[0] == "UsageError: cohort: c.streams failed on rank 0: capacity -1.0, " \
            "epsilon None: give capacity above 0 (at most 1e6) and epsilon above 0 (at most 100)"
        assert "capacity 0, epsilon None" in m[1] and "capacity 1.0, epsilon 0" in m[2]
        assert "lease_timeout is 1e+30: give seconds" in m[3]
        m = m[4:]
        assert "has 0 bytes" in m[0] and "has 256 bytes" in m[1] and "a NUL" in m[2]
        assert "is 7: give a str" in m[3] and "cost is 'x'" in m[4]
        assert "release takes an Assign or Revoke" in m[5] and "timeout is -1" in m[6]
        assert "load is nan" in m[7] and "is not UTF-8 text" in m[8]
        assert "the event's epoch is -1" in m[9]
        assert m[10] == "cohort: the stream set 'cams' is closed"
    seen = [e for g in s.every(2) for e in g["seen"]]
    assert seen == [["Assign", "\u00e9cam/\u4e00"]]


def test_a_dead_workers_streams_go_to_the_others():
    s = step(4, 2, "streams_kill", PY_VICTIM=1)
    got = [s.one(r) for r in (0, 2, 3)]
    victims = got[0]["victims"]
    assert victims
    took = {k for g in got for k in g["took"]}
    assert took == set(victims)
    for g in got:  # all 60 on the 3 survivors, none moving, none unplaced
        assert g["status"][:3] == [60, 0, 0] and g["status"][4] == 3, g["status"]
