"""docs/grafana/pgmbus.json: every query of every panel names series a real scrape has.

The PromQL of each panel (Grafana's variables replaced) must parse (``promtool check rules``,
when Debian's prometheus is installed), and every metric it selects, every label it matches on
and every label it groups by must exist in the scrape of a real ``pgmbus serve`` with traffic.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psycopg

from tests.ops import state
from tests.ops.serve_process import families, scrape_text, serve

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "pgmbus.json"
VARIABLES = {"$__rate_interval": "5m", "${queue}": ".*", "$queue": ".*", "${group}": ".*",
             "$group": ".*"}  # fmt: skip
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}  # fmt: skip
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # the panels of a collapsed row
    return out


def exprs(dashboard: dict[str, Any]) -> list[str]:
    found = [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]
    assert found and all(e.strip() for e in found)
    return found


def resolve(expr: str) -> str:
    for var, value in VARIABLES.items():
        expr = expr.replace(var, value)
    assert "$" not in expr, f"an unknown Grafana variable in {expr}"
    return expr


def parse(expr: str) -> tuple[list[tuple[str, dict[str, tuple[str, str]]]], set[str]]:
    """The selectors (metric, {label: (op, value)}) and the grouping labels of a PromQL query."""
    grouping = {
        label.strip()
        for _, labels in GROUPING.findall(expr)
        for label in labels.split(",")
        if label.strip()
    }
    rest = GROUPING.sub(" ", expr)
    rest = re.sub(r"\[[^\]]*\]", " ", rest)  # range durations: [5m]
    selectors = []
    pos = 0
    while (m := SELECTOR.search(rest, pos)) is not None:
        pos = m.end()
        name, braces = m.group(1), m.group(2)
        before = rest[m.start() - 1] if m.start() else " "
        if before.isdigit() or before == ".":
            continue  # the exponent or tail of a number
        if braces is None and (name.lower() in KEYWORDS or rest[pos:].lstrip().startswith("(")):
            continue  # a keyword or a function
        matchers: dict[str, tuple[str, str]] = {}
        body = (braces or "{}")[1:-1]
        for label, op, value in MATCHER.findall(body):
            matchers[label] = (op, value)
        assert MATCHER.sub("", body).strip() == "", f"unparsed matchers {body!r} in {expr}"
        selectors.append((name, matchers))
    return selectors, grouping


def test_the_query_parser_finds_selectors_and_grouping() -> None:
    selectors, grouping = parse(
        'histogram_quantile(0.99, max by (le) (rate(a_bucket{x=~".*", y="1"}[5m]))) '
        "/ max without (z) (b) > 1e3 and on (q) c"
    )
    assert selectors == [("a_bucket", {"x": ("=~", ".*"), "y": ("=", "1")}), ("b", {}), ("c", {})]
    assert grouping == {"le", "z", "q"}


def promtool_parses(queries: list[str], folder: Path) -> None:
    if shutil.which("promtool") is None:
        return
    rules = {
        "groups": [
            {"name": "dashboard", "rules": [
                {"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries)
            ]}
        ]
    }  # fmt: skip
    path = folder / "dashboard_rules.json"
    path.write_text(json.dumps(rules))  # JSON is YAML: promtool reads it
    done = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_dashboard_is_importable_with_a_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in panels(dashboard):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == "${datasource}", panel["title"]
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    names = {name for e in exprs(dashboard) for name, _ in parse(resolve(e))[0]}
    # what an operator looks at first: rates per queue, depth and lag, lateness, listeners
    assert {
        "pgmbus_up",
        "pgmbus_queue_posted_total",
        "pgmbus_queue_consumer_consumed_total",
        "pgmbus_queue_selector_errors_total",
        "pgmbus_queue_depth",
        "pgmbus_queue_oldest_ready_age_seconds",
        "pgmbus_stream_group_pending_events",
        "pgmbus_stream_group_lag_seconds",
        "pgmbus_timer_calls_total",
        "pgmbus_timer_lateness_seconds_bucket",
        "pgmbus_sse_listeners",
    } <= names


def test_every_query_matches_a_real_scrape(ops_dsn: str, tmp_path: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [resolve(e) for e in exprs(dashboard)]
    promtool_parses(queries, tmp_path)
    state.build(ops_dsn)
    with psycopg.connect(ops_dsn, autocommit=True) as conn:  # one selector error
        conn.execute("SELECT mbus.create_consumer('orders', 'strict', $$(t.data->>'n')::int > 0$$)")
        conn.execute("""SELECT mbus.post_orders('{"n": "x"}')""")
    with serve(ops_dsn) as base:
        scrape_text(base)  # the first scrape only starts the timer call totals
        scraped = families(scrape_text(base))
    labels: dict[str, set[str]] = {}
    values: dict[str, set[tuple[str, str]]] = {}
    for family in scraped.values():
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
            values.setdefault(sample.name, set()).update(sample.labels.items())
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            found = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["definition"])
            assert found is not None, variable["definition"]
            assert found.group(2) in labels[found.group(1)], variable["name"]
    for query in queries:
        selectors, grouping = parse(query)
        assert selectors, query
        used: set[str] = set()
        for name, matchers in selectors:
            assert name in labels, f"{name} (in {query}) is not in the scrape"
            used |= labels[name]
            for label, (op, value) in matchers.items():
                assert label in labels[name], f"{name} has no label {label} (in {query})"
                if op == "=":
                    assert (label, value) in values[name], (name, label, value)
        assert grouping <= used, f"grouped by {grouping - used}, not labels of {query}"
