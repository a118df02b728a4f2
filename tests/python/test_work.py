"""c.work: the iterator's commit and give-back rules, stale batches,
set-aside items, journals, bad arguments."""

import importlib.util
import os

import cohort
from conftest import step


def committed_once(results, n):
    done = sorted(i for g in results for i in g.get("done", []))
    assert done == list(range(n)), "%d committed, %d distinct of %d" % (
        len(done), len(set(done)), n)


def test_every_item_committed_once():
    s = step(6, 2, "work_all", PY_ITEMS=3000)
    assert s.rc == 0, s.out
    got = s.every(6)
    committed_once(got, 3000)
    for g in got:
        assert g["status"] == [3000, 3000, 0, 0, 0] and g["held"] is None
        assert g["committed"] == len(g["done"])


def test_a_raising_body_gives_its_batch_back():
    s = step(4, 2, "work_all", PY_ITEMS=2000, PY_VICTIM=2, PY_HOW="raise")
    assert s.rc == 0, s.out
    got = s.every(4)
    committed_once(got, 2000)
    assert got[2]["given"] and got[2]["error"] == ""
    assert all(g["status"] == [2000, 2000, 0, 0, 0] for g in got)


def test_break_gives_the_batch_back():
    s = step(4, 2, "work_all", PY_ITEMS=2000, PY_VICTIM=1, PY_HOW="break")
    assert s.rc == 0, s.out
    got = s.every(4)
    committed_once(got, 2000)
    assert got[1]["given"] and got[1]["held"] is None


def test_a_dead_workers_batch_goes_to_the_others(scratch):
    s = step(4, 2, "work_all", out_dir=scratch, PY_ITEMS=2000, PY_VICTIM=3, PY_HOW="die")
    got = [s.by_rank[r][0] for r in range(3)]
    committed_once(got, 2000)
    lost = [int(i) for i in open(os.path.join(scratch, "died")).read().split()]
    assert lost and all(g["status"] == [2000, 2000, 0, 0, 0] for g in got)
    for r in range(3):  # the survivors' last barrier names the dead rank
        assert s.by_rank[r][1]["peer_lost"].startswith("cohort: rank 3 (n2) closed"), s.out


def test_stale_batch(scratch):
    os.mkfifo(os.path.join(scratch, "go"))
    s = step(3, 1, "work_stale", out_dir=scratch, PY_VICTIM=2)
    assert s.rc == 0, s.out
    victim = s.by_rank[2]
    assert len(victim) == 2, s.out
    assert victim[0]["stale"] == victim[0]["batch"] and victim[0]["committed"] == 0
    committed_once([s.one(0), s.one(1), victim[1]], 400)


def test_given_back_items_are_set_aside():
    s = step(3, 1, "work_give_back", PY_VICTIM=1)
    assert s.rc == 0, s.out
    given = s.by_rank[1][0]["given"]
    assert given and s.by_rank[1][0]["stale"] == []
    ends = [s.by_rank[r][-1] for r in range(3)]
    done = sorted(i for g in ends for i in g["done"])
    assert sorted(done + given) == list(range(500))
    assert ends[0]["status"] == [500, 500 - len(given), 0, 0, len(given)]


def test_journal_resume(scratch):
    first = step(3, 1, "work_journal", out_dir=scratch)
    assert first.rc == 0, first.out
    assert sum(g["committed"] for g in first.every(3)) == 300
    again = step(3, 1, "work_journal", out_dir=scratch)
    assert again.rc == 0, again.out
    for g in again.every(3):
        assert g["batches"] == 0 and g["status"][:2] == [300, 300], g


def test_bad_arguments():
    s = step(3, 1, "work_bad", PY_VICTIM=2)
    assert s.rc == 0, s.out
    got = [g["got"] for g in s.every(3)]
    for g in got:
        p = "cohort: c.work failed on rank 0: "
        assert g[0] == p + "n (the number of items) is None: give a whole number"
        assert g[1].startswith(p + "n (the number of items) is -1: give a whole number")
        assert g[2].startswith(p + "n (the number of items) is 2.5")
        assert g[3] == p + "the queue's name is 'q\\x00x': give a str without NUL"
        assert g[4] == "cohort: c.work failed on rank 2: cap is 0: give a whole number from 1 " \
            "to 1048576"  # one rank's mistake fails every rank alike
        assert g[5].startswith(p + "cap is 0") and g[6].startswith(p + "max_attempts is 0")
        assert g[7].startswith(p + "lease_timeout is -1: give seconds")
        assert g[8] == p + "journal is 5: give a path or None"
        assert g[9] == p + "the queue's name is 5: give a str without NUL"
        assert g[10].startswith("UsageError: cohort: cohort_work_open: rank 2 opens queue 'q' "
                                "of 11 items"), g[10]
        assert "already being iterated over" in g[11]
        assert g[12] == "cohort: the work queue 'ok' is closed"


def test_every_worker_closing_early_fails_the_closes_at_once():
    s = step(3, 1, "work_abandoned")
    assert s.rc == 0, s.out
    for g in s.every(3):
        assert g.get("error") == "UsageError" and g["held"] is None, g
        assert "every worker left in queue 'q' closed it with " in g["msg"] and \
            "nobody will do them" in g["msg"], g


def published_once(results, n):
    """read_output over results: every id 0..n-1 once, each part's object
    what its worker saved."""
    seen = []
    for ids, obj in cohort.read_output(results):
        if isinstance(obj, dict):
            assert obj["ids"] == ids
        else:
            assert obj == b"".join(i.to_bytes(8, "big") for i in ids)
        seen += ids
    assert sorted(seen) == list(range(n)), "%d published, %d distinct of %d" % (
        len(seen), len(set(seen)), n)


def test_saved_results_published_once(scratch):
    s = step(4, 2, "work_output", out_dir=scratch, PY_ITEMS=1500)
    assert s.rc == 0, s.out
    assert sum(g["committed"] for g in s.every(4)) == 1500
    published_once(os.path.join(scratch, "results"), 1500)
    results = os.path.join(scratch, "results")
    assert not [f for f in os.listdir(results)
                if not f.startswith("part-") and f not in (".lock", ".offers")]
    assert not os.listdir(os.path.join(results, ".offers"))  # no offer left


def test_a_worker_dying_after_save_loses_and_doubles_nothing(scratch):
    s = step(4, 2, "work_output", out_dir=scratch, PY_ITEMS=1500, PY_VICTIM=1, PY_HOW="die")
    got = [s.by_rank[r][0] for r in (0, 2, 3)]
    assert sum(g["committed"] for g in got) <= 1500, s.out
    published_once(os.path.join(scratch, "results"), 1500)


def test_a_late_batch_with_results_is_stale_and_not_published(scratch):
    os.mkfifo(os.path.join(scratch, "go"))
    s = step(3, 1, "work_output_stale", out_dir=scratch, PY_VICTIM=2)
    assert s.rc == 0, s.out
    v = s.one(2)
    assert v["stale"] == v["batch"] and v["held"] is None and v["committed"] == 0, s.out
    seen = sorted(i for ids, _ in cohort.read_output(os.path.join(scratch, "results"))
                  for i in ids)
    assert seen == list(range(400))


def test_output_misuse(scratch):
    s = step(2, 1, "work_output_bad", out_dir=scratch)
    assert s.rc == 0, s.out
    for g in s.every(2):
        got = g["got"]
        assert got[0].startswith("cohort: work.save: the work queue 'plain' was opened "
                                 "without output="), got
        assert got[1].startswith("cohort: work.save: no batch is held"), got
        assert got[2].startswith("UsageError: cohort: cohort_work_open failed on rank 0: "
                                 "output is set and journal is not"), got


def test_drain_on_sigterm_then_the_rerun_finishes(scratch):
    s = step(4, 2, "work_drain", out_dir=scratch, PY_DRAIN=1, PY_ITEMS=3000)
    assert s.rc == 0, s.out
    first = s.every(4)
    assert all(g["drained"] == "SIGTERM" for g in first), first
    done = sum(g["committed"] for g in first)
    assert 0 < done < 3000, done
    assert "cohort: work 'q' drained on SIGTERM: the items left stay in the journal" in s.out
    s = step(4, 2, "work_drain", out_dir=scratch, PY_ITEMS=3000)
    assert s.rc == 0, s.out
    again = s.every(4)
    assert all(g["drained"] is None for g in again)
    assert done + sum(g["committed"] for g in again) == 3000
    published_once(os.path.join(scratch, "results"), 3000)
    # rank 0's progress, in items, not batches: tqdm's bar where tqdm is
    # installed, else plain lines
    if importlib.util.find_spec("tqdm"):
        assert "q: 100%" in s.out and "3000/3000" in s.out, s.out
    else:
        assert "cohort: work 'q': 3000 of 3000 items (100%)" in s.out, s.out


def test_progress_line():
    from cohort._progress import Progress
    t = [0.0]
    done = [0]
    p = Progress("q", 1000, lambda: done[0], clock=lambda: t[0])
    p._bar = None
    for k in range(1, 13):
        t[0], done[0] = 10.0 * k, 50 * k
        p.update()
    assert p.line(120.0, 600) == "cohort: work 'q': 600 of 1000 items (60%), 5 items/s, " \
        "ETA 80 s"
