"""ranks.py SCENARIO - one rank of a simulated step (tests/bootstrap/spawn)
for the Python package's tests: runs SCENARIO and writes what it saw as
JSON lines to $PY_OUT/result.RANK (an exception as {"error": class,
"code", "msg"}). $PY_OUT is a scratch directory shared by the ranks;
$PY_VICTIM a rank that misbehaves as the scenario says."""

import json
import os
import pathlib
import signal
import sys
import time

import cohort

RANK = int(os.environ.get("SLURM_PROCID", "-1"))
VICTIM = int(os.environ.get("PY_VICTIM", "-1"))
OUT = os.environ.get("PY_OUT", ".")


def say(**what):
    """One result line, in OUT/result.RANK (lines longer than a pipe's
    atomic write would interleave on a shared stdout)."""
    with open(os.path.join(OUT, "result.%d" % RANK), "a") as f:
        f.write(json.dumps(what, sort_keys=True) + "\n")


def error(e):
    return {"error": type(e).__name__, "code": getattr(e, "code", None), "msg": str(e)}


def fifo_wait(name):
    with open(os.path.join(OUT, name)) as f:
        return f.read()


def fifo_tell(name, text="go"):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def collectives():
    with cohort.init() as c:
        big = b"x" * 100000 if c.rank == 1 else b""
        say(rank=c.rank, size=c.size, local_rank=c.local_rank, local_size=c.local_size,
            node_rank=c.node_rank, node_count=c.node_count, bootstrap=c.bootstrap,
            obj=c.bcast({"from": c.rank, "list": [1, 2.5, "three"]} if c.rank == 0 else None),
            raw=c.bcast(b"raw bytes\0" if c.rank == c.size - 1 else None,
                        root=c.size - 1).decode("latin-1"),
            none=c.bcast(None), empty=c.bcast(b"").decode(),
            objs=c.allgather({"r": c.rank, "pad": "y" * c.rank}),
            lens=[len(x) for x in c.allgather(big)],
            types=[type(x).__name__ for x in c.allgather(bytearray(b"b") if c.rank % 2 else 7)])
        c.barrier()


def usage():
    with cohort.init() as c:
        got = []
        for call in (lambda: c.bcast(b"x", root=c.size), lambda: c.set_timeout(0),
                     lambda: c.set_timeout("soon"), lambda: c.bcast(1, root="0"),
                     lambda: c.bcast(b"x", root=2**32), lambda: c.set_timeout(2**32 + 5),
                     lambda: c.bcast(b"x", root=True), lambda: c.set_timeout(86401)):
            try:
                call()
                got.append("none")
            except cohort.Error as e:
                got.append("%s %d" % (type(e).__name__, e.code))
        c.barrier()
    try:
        c.barrier()
        got.append("none")
    except cohort.UsageError as e:
        got.append("after finalize: " + str(e))
    say(got=got)


def pickles():
    with cohort.init() as c:
        got = {}
        try:
            c.bcast(lambda: 0)
        except cohort.UsageError as e:
            got["bcast"] = str(e)
        try:
            c.allgather((lambda: 0) if c.rank == 0 else c.rank)
        except cohort.UsageError as e:
            got["allgather"] = str(e)
        say(after=c.allgather(c.rank), **got)


def stall_or(call):
    c = cohort.init(timeout=30)
    if RANK == VICTIM:
        signal.alarm(15)
        signal.pause()
    c.set_timeout(2)
    try:
        call(c)
        say(ok=True)
    except cohort.Error as e:
        say(**error(e))


def timeout():
    stall_or(lambda c: c.barrier())


def peer_lost():
    die_or_barrier()


def die_or_barrier():
    c = cohort.init(timeout=30)
    if RANK == VICTIM:
        os._exit(3)
    try:
        with c:
            c.barrier()
        say(ok=True)
    except cohort.Error as e:
        say(**error(e), abandoned=repr(c).endswith("finalized>"))


def init_only():
    try:
        with cohort.init() as c:
            c.barrier()
        say(ok=True)
    except cohort.Error as e:
        say(**error(e))


def work_all():
    """Every rank records what it committed, from work.stale after each
    implicit commit. With PY_HOW every rank first takes one batch (then a
    barrier: each holds one); the victim then leaves that loop by raising
    (raise) or break (break), or exits holding it (die, noted in
    $PY_OUT/died); the others break (giving theirs back) and go on."""
    how = os.environ.get("PY_HOW", "")
    n = int(os.environ.get("PY_ITEMS", "3000"))
    done, given = [], []
    try:
        work_loops(how, n, done, given)
    except cohort.PeerLost as e:  # the victim's death, at the last barrier
        say(peer_lost=str(e))


def drain(work, done):
    """Runs a loop over the queue to its end, adding to done what each
    implicit commit kept (the batch minus work.stale)."""
    prev = []
    for batch in work:
        done += [i for i in prev if i not in work.stale]
        prev = batch
        if not done:
            work.extend()
    done += [i for i in prev if i not in work.stale]


def work_loops(how, n, done, given):
    with cohort.init() as c:
        with c.work("q", n, cap=int(os.environ.get("PY_CAP", "32")),
                    lease_timeout=600) as work:
            if how:
                try:
                    for batch in work:  # every rank holds a batch before any goes on
                        c.barrier()
                        if RANK == VICTIM:
                            given[:] = batch
                            if how == "die":
                                fifo_tell("died", " ".join(map(str, batch)))
                                os._exit(0)
                            if how == "raise":
                                raise ValueError("a bad image")
                        break  # the others give theirs back too, and go on below
                except ValueError:
                    pass
            drain(work, done)
            say(done=done, given=given, held=work.batch, committed=work.committed,
                status=list(work.status()), error=str(work.error or ""))


def work_stale():
    """The victim takes one batch and stops calling (lease_timeout 1 s)
    until rank 0 has seen the queue finish; its commit is then stale."""
    with cohort.init() as c:
        with c.work("q", 400, lease_timeout=1, cap=8) as work:
            done, stale, first = [], [], True
            for batch in work:
                if first:  # every rank holds a batch before the others drain the queue
                    c.barrier()
                    first = False
                if RANK == VICTIM and not stale:
                    fifo_wait("go")
                    stale = work.commit()
                    say(batch=batch, stale=stale, committed=work.committed)
                    continue
                lost = set(work.commit())  # once: a second call has no batch to commit
                done += [i for i in batch if i not in lost]
            if RANK == 0:
                fifo_tell("go")
            say(done=done)


def work_output():
    """Every rank saves each batch's results (a pickled dict for batches
    whose first id is odd, the ids as 8-byte big-endian bytes for the
    others); with PY_HOW=die the victim exits after saving its second
    batch, before its commit."""
    n = int(os.environ.get("PY_ITEMS", "1500"))
    with cohort.init() as c:
        with c.work("q", n, journal=os.path.join(OUT, "q.journal"), cap=16,
                    output=os.path.join(OUT, "results")) as work:
            batches = 0
            for batch in work:
                batches += 1
                if batch[0] % 2:
                    work.save({"rank": RANK, "ids": list(batch)})
                else:
                    work.save(b"".join(i.to_bytes(8, "big") for i in batch))
                if RANK == VICTIM and batches == 2 and os.environ.get("PY_HOW") == "die":
                    os._exit(0)
            say(committed=work.committed)


def work_output_stale():
    """As work_stale, the victim's late batch with saved results: all of it
    stale, nothing of it committed or published."""
    with cohort.init() as c:
        with c.work("q", 400, lease_timeout=1, cap=8, journal=os.path.join(OUT, "q.journal"),
                    output=os.path.join(OUT, "results")) as work:
            first, seen = True, []
            for batch in work:
                if first:  # every rank holds a batch before the others drain the queue
                    c.barrier()
                    first = False
                work.save(b"x" * len(batch))
                if RANK == VICTIM and not seen:
                    seen = list(batch)
                    fifo_wait("go")
                    stale = work.commit()
                    say(batch=seen, stale=stale, held=work.batch, committed=work.committed)
            if RANK == 0:
                fifo_tell("go")


def work_drain():
    """A queue with results; with PY_DRAIN=1 rank 0 sends SIGTERM to every
    rank (itself too) after its third batch: every loop ends after
    committing the batch in hand and close() returns at once. Without it
    the step runs the queue to its end (a rerun over the same journal)."""
    n = int(os.environ.get("PY_ITEMS", "3000"))
    with cohort.init() as c:
        pids = c.allgather(os.getpid())
        with c.work("q", n, journal=os.path.join(OUT, "q.journal"), cap=4,
                    output=os.path.join(OUT, "results"), progress=True) as work:
            batches = 0
            for batch in work:
                batches += 1
                work.save(b"".join(i.to_bytes(8, "big") for i in batch))
                if os.environ.get("PY_DRAIN") and RANK == 0 and batches == 3:
                    for p in pids:
                        os.kill(p, signal.SIGTERM)
        say(committed=work.committed, drained=work.drained, batches=batches)


def work_output_bad():
    """save without output=, outside a batch; output without a journal."""
    got = []
    with cohort.init() as c:
        with c.work("plain", c.size, cap=1) as w:
            for _ in w:
                c.barrier()  # every rank holds its one item
                try:
                    w.save(b"r")
                except cohort.UsageError as e:
                    got.append(str(e))
        with c.work("q", 10, journal=os.path.join(OUT, "j"), output=os.path.join(OUT, "r")) as w:
            try:
                w.save(b"r")
            except cohort.UsageError as e:
                got.append(str(e))
            list(w)
        try:
            c.work("q2", 10, output=os.path.join(OUT, "r2"))
        except cohort.Error as e:
            got.append("%s: %s" % (type(e).__name__, e))
    say(got=got)


def work_give_back():
    with cohort.init() as c:
        with c.work("q", 500, max_attempts=1, cap=16) as work:
            done, given, first = [], [], True
            for batch in work:
                if first:  # every rank holds a batch before the others drain the queue
                    c.barrier()
                    first = False
                if RANK == VICTIM and not given:
                    given = list(batch)
                    stale = work.give_back()
                    say(given=given, stale=stale)
                    continue
                lost = set(work.commit())  # once: a second call has no batch to commit
                done += [i for i in batch if i not in lost]
            say(done=done, status=list(work.status()))


def work_journal():
    with cohort.init() as c:
        with c.work("q", 300, journal=pathlib.Path(OUT) / "q.journal") as work:
            batches = sum(1 for _ in work)
            say(batches=batches, committed=work.committed, status=list(work.status()))


def work_bad():
    c = cohort.init()
    got = []
    for kw in ({"n": None}, {"n": -1}, {"n": 2.5}, {"n": 10, "name": "q\0x"},
               {"n": 10, "cap": 0 if RANK == VICTIM else 8}, {"n": 10, "cap": 0}, {"n": 10, "max_attempts": 0},
               {"n": 10, "lease_timeout": -1}, {"n": 10, "journal": 5}, {"n": 10, "name": 5}):
        args = {"name": "q"}
        args.update(kw)
        try:
            c.work(**args)
            got.append("none")
        except cohort.UsageError as e:
            got.append(str(e))
    try:
        c.work("q", 10 + (RANK == VICTIM))
        got.append("none")
    except cohort.Error as e:
        got.append("%s: %s" % (type(e).__name__, e))
    w = c.work("ok", 20)
    list(w)
    twice = c.work("twice", c.size, cap=1)
    it = iter(twice)
    next(it)  # one item each: nobody has drained the queue before the barrier
    try:
        iter(twice)
        got.append("none")
    except cohort.UsageError as e:
        got.append(str(e))
    c.barrier()
    list(it)
    w.close()
    w.close()
    try:
        w.status()
        got.append("none")
    except cohort.UsageError as e:
        got.append(str(e))
    c.finalize()
    say(got=got)


def work_abandoned():
    """Every rank leaves its loop at once and closes: nobody will do the
    rest, and every close says so instead of waiting."""
    with cohort.init() as c:
        work = c.work("q", 1000, cap=4)
        for batch in work:
            break
        try:
            work.close()
            say(ok=True, held=work.batch)
        except cohort.Error as e:
            say(**error(e), held=work.batch)


def settle(c, s, total, revoked=None, limit_s=60):
    """Polls until the ranks own total streams in all and none is moving
    (collective). status() first: every event sent before its answer is
    then waiting for events(). A set that has not settled within limit_s
    fails every rank alike with what each rank sees, so that the test
    names the state it stopped in rather than running into the launcher's
    timeout with nothing said."""
    end = time.monotonic() + limit_s
    while True:
        st = s.status()
        for ev in s.events(0.05):
            if isinstance(ev, cohort.Revoke):
                if revoked is not None:
                    revoked.append(ev.key)
                s.release(ev)
        late = time.monotonic() > end
        views = c.allgather((len(s.mine()), st.moving, st.unplaced, st.workers, late))
        if sum(v[0] for v in views) == total and not any(v[1] or v[2] for v in views):
            return
        if any(v[4] for v in views):
            raise AssertionError("rank %d: the set did not settle on %d streams within %d s; "
                                 "(owned, moving, unplaced, workers, late) by rank: %s"
                                 % (RANK, total, limit_s, views))


def streams_basic():
    with cohort.init() as c:
        with c.streams("cams", capacity=2.0 if RANK == 0 else 1.0) as s:
            if RANK == 0:
                for i in range(40):
                    s.add("cam%02d" % i, cost=1.0)
                s.add("cam00")
            settle(c, s, 40)
            first = s.mine()
            owners = c.allgather(sorted(first))
            if RANK == 1:
                for i in range(5):
                    s.remove("cam%02d" % i)
                s.remove("not-a-stream")
            revoked = []
            settle(c, s, 35, revoked)
            mine = s.mine()
            key = sorted(mine)[0]
            s.report(key, 1.5)
            given = None
            if RANK == VICTIM:
                given = [key, mine[key]]
                s.release(cohort.Assign(key, mine[key]))
            settle(c, s, 35)
            status = s.status()
            c.barrier()  # a rank's close hands its streams to those still in
            say(first=first, owners=owners, revoked=revoked, given=given, mine=s.mine(),
                status=list(status))


def streams_bad():
    with cohort.init() as c:
        got = []
        for kw in ({"capacity": -1.0}, {"capacity": 0}, {"epsilon": 0},
                   {"lease_timeout": 1e30}):
            try:
                c.streams("bad", **kw)
                got.append("none")
            except cohort.Error as e:
                got.append("%s: %s" % (type(e).__name__, e))
        s = c.streams("cams")
        for call in (lambda: s.add(""), lambda: s.add("k" * 256), lambda: s.add("a\0b"),
                     lambda: s.add(7), lambda: s.add("k", cost="x"),
                     lambda: s.release(None), lambda: s.poll(-1),
                     lambda: s.report("k", float("nan")), lambda: s.add("\ud800"),
                     lambda: s.release(cohort.Assign("k", -1))):
            try:
                call()
                got.append("none")
            except cohort.UsageError as e:
                got.append(str(e))
        s.report("not-mine", 1.0)  # dropped: no error
        s.add("\u00e9cam/\u4e00")
        s.status()
        seen = [ev for ev in s.events(0)]
        c.barrier()  # a rank's close hands its streams to those still in
        s.close()
        try:
            s.add("x")
            got.append("none")
        except cohort.UsageError as e:
            got.append(str(e))
        say(got=got, seen=[[type(e).__name__, e.key] for e in seen])


def streams_kill():
    with cohort.init() as c:
        s = c.streams("cams", lease_timeout=30)
        if RANK == 0:
            for i in range(60):
                s.add("cam%02d" % i)
        settle(c, s, 60)
        victims = c.allgather(sorted(s.mine()))[VICTIM]
        if RANK == VICTIM:
            os._exit(0)
        got = []
        end = time.monotonic() + 60
        while True:
            got += [ev.key for ev in s.events(0.05) if isinstance(ev, cohort.Assign)]
            st = s.status()
            if st.workers == c.size - 1 and st.moving == 0 and st.unplaced == 0:
                break
            if time.monotonic() > end:
                raise AssertionError("rank %d: the survivors did not take the victim's streams "
                                     "within 60 s; status %s" % (RANK, list(st)))
        got += [ev.key for ev in s.events(0) if isinstance(ev, cohort.Assign)]
        # No survivor leaves before every survivor has seen the set settled:
        # the first to leave is lost to the set, and one that had not yet
        # seen size - 1 workers would wait for ever (no collective can be
        # used, the victim being dead). Polling events keeps the lease.
        pathlib.Path(OUT, "seen.%d" % RANK).touch()
        seen = ["seen.%d" % r for r in range(c.size) if r != VICTIM]
        while not all(os.path.exists(os.path.join(OUT, n)) for n in seen):
            got += [ev.key for ev in s.events(0.05) if isinstance(ev, cohort.Assign)]
            if time.monotonic() > end:
                raise AssertionError("rank %d: not every survivor saw the set settled within "
                                     "60 s" % RANK)
        say(victims=victims, took=sorted(k for k in got if k in victims), status=list(st))
        s.abandon()
        c.abandon()


def info():
    with cohort.init() as c:
        p = cohort.plan()
        say(rank=c.rank, plan_rank=p["tasks"][0]["rank"], world=p["tasks"][0]["world_size"])


if __name__ == "__main__":
    globals()[sys.argv[1]]()
