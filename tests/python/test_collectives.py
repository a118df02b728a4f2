"""The Cohort handle on simulated steps: accessors, object and bytes
collectives, usage errors, and each failure kind as its exception."""

from conftest import step


def test_accessors_and_collectives():
    s = step(6, 2, "collectives")
    assert s.rc == 0, s.out
    got = s.every(6)
    for r, g in enumerate(got):
        assert (g["rank"], g["size"], g["node_count"], g["bootstrap"]) == (r, 6, 2, "tcp")
        assert (g["node_rank"], g["local_rank"], g["local_size"]) == (r // 3, r % 3, 3)
        assert g["obj"] == {"from": 0, "list": [1, 2.5, "three"]}
        assert g["raw"] == "raw bytes\0"
        assert g["none"] is None and g["empty"] == ""
        assert g["objs"] == [{"r": i, "pad": "y" * i} for i in range(6)]
        assert g["lens"] == [0, 100000, 0, 0, 0, 0]
        assert g["types"] == ["int", "bytes"] * 3


def test_usage_errors_leave_the_step_going():
    s = step(3, 1, "usage")
    assert s.rc == 0, s.out
    for g in s.every(3):
        assert g["got"][:8] == ["UsageError 2"] * 8, g
        assert g["got"][8] == "after finalize: cohort: this Cohort was finalized"


def test_unpicklable_objects_fail_every_rank_alike():
    s = step(3, 1, "pickles")
    assert s.rc == 0, s.out
    for g in s.every(3):
        assert g["bcast"].startswith("cohort: bcast: rank 0 could not pickle its object ("), g
        assert g["allgather"].startswith("cohort: allgather: rank 0 could not pickle"), g
        assert g["after"] == [0, 1, 2]


def test_timeout():
    s = step(4, 2, "timeout", PY_VICTIM=3, SPAWN_TIMEOUT=60)
    for r in range(3):
        g = s.one(r)
        assert (g["error"], g["code"]) == ("Timeout", 3), g
        assert "rank 3" in g["msg"], g


def test_peer_lost():
    s = step(4, 2, "peer_lost", PY_VICTIM=3)
    for r in range(3):
        g = s.one(r)
        assert (g["error"], g["code"]) == ("PeerLost", 4), g
        assert "rank 3" in g["msg"] and g["abandoned"], g


def test_auth_error():
    s = step(4, 2, "init_only", "--bad-secret", "2", COHORT_TIMEOUT=5)
    g = s.one(2)
    assert (g["error"], g["code"]) == ("AuthError", 5), g
    assert g["msg"].startswith("cohort: "), g


def test_config_error():
    env = {"COHORT_TIMEOUT": "abc"}
    s = step(1, 1, "init_only", **env)
    g = s.one(0)
    assert (g["error"], g["code"]) == ("ConfigError", 1), g
    assert "COHORT_TIMEOUT='abc'" in g["msg"], g
