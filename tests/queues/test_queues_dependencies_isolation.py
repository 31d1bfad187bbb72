"""consume_after under concurrency, every interleaving, with PostgreSQL's isolationtester.

A child waits on A (queue a) and B (queue b). Session s1 consumes A, runs the release check
(``SET CONSTRAINTS ALL IMMEDIATE`` fires the deferred trigger before COMMIT, where the race is)
and commits or rolls back; s2 does the same with B. Every valid interleaving of the two is run;
after each commit or rollback an observer counts the child's claimable deliveries: 1 exactly
when both have committed, else 0, and the wait bookkeeping is empty at the end.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import psycopg
import pytest

TESTER = Path("/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/isolationtester")

SPEC = """
setup
{
  SELECT setval('mbus.msg_id_seq', greatest(900000002, nextval('mbus.msg_id_seq')));
  SELECT mbus.post_a(jsonb_build_object('m', 'a'), iid => 'a.900000001@' || current_database());
  SELECT mbus.post_b(jsonb_build_object('m', 'b'), iid => 'b.900000002@' || current_database());
  SELECT mbus.post_c(jsonb_build_object('m', 'c'),
      jsonb_build_object('consume_after', jsonb_build_array(
          'a.900000001@' || current_database(), 'b.900000002@' || current_database())));
}
teardown
{
  DELETE FROM mbus.q_a; DELETE FROM mbus.q_b; DELETE FROM mbus.q_c;
  DELETE FROM mbus.msg_wait; DELETE FROM mbus.msg_dep;
  DELETE FROM mbus.client_iids;  -- the setup posts the same iids again (queues.iid_window)
}
session s1
step s1c { BEGIN; SELECT count(*) AS got1 FROM mbus.consume('a'); }
step s1i { SET CONSTRAINTS ALL IMMEDIATE; }
step s1k { COMMIT; }
step s1r { ROLLBACK; }
session s2
step s2c { BEGIN; SELECT count(*) AS got2 FROM mbus.consume('b'); }
step s2i { SET CONSTRAINTS ALL IMMEDIATE; }
step s2k { COMMIT; }
step s2r { ROLLBACK; }
session s3
step obs { SELECT (SELECT count(*) FROM mbus.q_c WHERE vt < 'infinity') AS ready; }
step fin { SELECT (SELECT count(*) FROM mbus.q_c WHERE vt < 'infinity') AS ready,
                  (SELECT count(*) FROM mbus.msg_wait) + (SELECT count(*) FROM mbus.msg_dep)
                      AS bookkeeping; }
"""


def _valid(order: tuple[str, ...]) -> bool:
    """No step of a session that is blocked (its release waits for the other's open one)."""
    done: dict[str, list[str]] = {"s1": [], "s2": []}
    blocked: str | None = None
    for step in order:
        s, other = step[:2], "s2" if step[:2] == "s1" else "s1"
        if blocked == s:
            return False
        done[s].append(step[2])
        if blocked == other and step[2] in "kr":
            blocked = None
        if step[2] == "i" and "i" in done[other] and not set("kr") & set(done[other]):
            blocked = s
    return True


def _permutations() -> list[tuple[list[str], list[int], int]]:
    """(steps, expected ready after each obs, expected final ready) of every valid order."""
    result = []
    for e1, e2 in itertools.product("kr", "kr"):
        seq1, seq2 = ["s1c", "s1i", f"s1{e1}"], ["s2c", "s2i", f"s2{e2}"]
        for slots in itertools.combinations(range(6), 3):
            it1, it2 = iter(seq1), iter(seq2)
            order = tuple(next(it1) if i in slots else next(it2) for i in range(6))
            if not _valid(order):
                continue
            steps: list[str] = []
            expected: list[int] = []
            committed: set[str] = set()
            for step in order:
                steps.append(step)
                if step[2] in "kr":
                    if step[2] == "k":
                        committed.add(step[:2])
                    steps.append("obs")
                    expected.append(int(committed == {"s1", "s2"}))
            result.append(([*steps, "fin"], expected, int(committed == {"s1", "s2"})))
    return result


@pytest.mark.skipif(not TESTER.exists(), reason="isolationtester not installed")
def test_every_interleaving_releases_once_after_both_commit(db_dsn: str) -> None:
    """A child that depends on A and B, with A and B consumed at the same moment by two
    transactions, is released exactly once and only after both commit."""
    perms = _permutations()
    spec = SPEC + "".join(f"permutation {' '.join(p)}\n" for p, _, _ in perms)
    with psycopg.connect(db_dsn, autocommit=True) as c:
        for q in ("a", "b", "c"):
            c.execute("SELECT mbus.create_queue(%s, 1)", (q,))
        info = c.info
        conninfo = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    out = subprocess.run(
        [str(TESTER), conninfo],
        input=spec,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    blocks = out.stdout.split("starting permutation:")[1:]
    assert len(blocks) == len(perms) >= 40
    assert "<waiting ...>" in out.stdout  # some releases did wait for the other transaction
    for block, (steps, expected, final) in zip(blocks, perms, strict=True):
        assert "ERROR" not in block, block
        readies = [
            int(x) for x in re.findall(r"step obs:.*?\n\s*ready\s*\n-+\s*\n\s*(\d+)", block, re.S)
        ]
        assert readies == expected, (steps, block)
        fin = re.search(
            r"step fin:.*?ready\|bookkeeping\s*\n-+\+-+\s*\n\s*(\d+)\|\s*(\d+)", block, re.S
        )
        assert fin is not None, block
        assert int(fin.group(1)) == final, (steps, block)
        if final:
            assert int(fin.group(2)) == 0, block
