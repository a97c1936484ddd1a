#!/usr/bin/env python3
"""scripts/bench: the service's throughput beside this machine's floor, on SQLite and
PostgreSQL (fsync on, as in production). Starts a release `coe serve` on a fresh
database on a free loopback port per database and drives it with wrk (Debian's) from a
second process on the same machine.

Scenarios (each a fixed number of seconds):
  healthz        GET /healthz: the floor (HTTP and the machine, no database)
  ingest-single  one new Alertmanager-like alert per request, 32 connections
  ingest-batch   100 new alerts per delivery, 8 connections
  storm          100-alert deliveries over 100 groups at the COE policy (sev2), 16
                 connections; afterwards exactly 100 incidents and 100 drafts (checked)
  create-actions a new corrective action per request through the API, 16 connections
  (outbox)       the emails waiting after create-actions (one per new action's owner) are
                 delivered (to the file transport) before mixed starts; their rate is a row of its
                 own (the 100 actions mixed sets up queue 100 more, delivered during it)
  mixed          200 connections: COE documents, lists and stats read, sections edited
                 with their version, actions started and reopened (mixed.lua); 409/412
                 (someone saved first) are counted apart from failures
  change-actions after mixed, 16 connections: PATCH an action's description (change.lua), every
                 answer a 200 (a write that is kept)
  overdue-query  GET /api/v1/actions?overdue=true (the first 100), 8 connections, and
  sweep          one reminder sweep (`coe sweep --dry-run`: every decision, nothing
                 queued), each at 10,000, 100,000 and 1,000,000 actions seeded with bulk
                 SQL (scripts/seed/: 10,000 owners in 100 teams, one action in ten overdue)

For each: throughput, p50/p99 latency, failed answers, the server's peak RSS and CPU
seconds, and its requests per second as a share of healthz's. Prints a Markdown table; exits 1 when
a check fails. Bounded: a few minutes per database (the wait for the outbox at most 300 s more).

--perf DIR records a profile of the server during each ingest scenario, create-actions and mixed
(`perf record` with DWARF call graphs) into DIR/SCENARIO.BACKEND.data; the profiler's own cost
lowers the figures of that run.
--perf-machine records a flat profile of the whole machine instead (`perf record -a`, no call graphs,
DIR/SCENARIO.BACKEND.machine.data): how the cores divide between coe, PostgreSQL, wrk and the kernel.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe  # noqa: E402  (the same server and database helpers)

ROOT = probe.ROOT
LUA = os.path.join(ROOT, "scripts", "bench.d")


def memory_mib(pid, field):
    """A memory figure of /proc/PID/status in MiB: VmRSS (now) or VmHWM (peak)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_peak(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


PERF_DIR = None  # --perf DIR: a `perf record` of the server per scenario
PERF_MACHINE = False  # --perf-machine: with --perf, a flat `perf record -a` of the machine instead


def profiled(name, pid):
    """Starts `perf record` on the server for scenario `name` (with --perf); returns a stop function."""
    if PERF_DIR is None:
        return lambda: None
    os.makedirs(PERF_DIR, exist_ok=True)
    data = os.path.join(PERF_DIR, f"{name}.data")
    if PERF_MACHINE:
        # The whole machine, flat (no call graphs: recording them would take a core):
        # how the two cores divide between coe, PostgreSQL, wrk and the kernel.
        data = os.path.join(PERF_DIR, f"{name}.machine.data")
        command = ["perf", "record", "-q", "-F", "499", "-a", "-o", data]
        report = "--sort comm,dso,symbol"
    else:
        command = ["perf", "record", "-q", "-F", "499", "--call-graph", "dwarf,16384", "-p", str(pid), "-o", data]
        report = "--no-children --sort dso,symbol"
    rec = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)

    def stop():
        rec.send_signal(2)
        rec.wait(timeout=120)
        print(f"profile: perf report -i {data} {report}", file=sys.stderr)
    return stop


def wrk(server, script, path, connections, seconds, token, args=(), name=None):
    pid = server.proc.pid
    reset_peak(pid)
    cpu = probe.cpu_seconds(pid)
    stop_profile = profiled(name, pid) if name else (lambda: None)
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s",
         os.path.join(LUA, script), f"http://127.0.0.1:{server.port}{path}", "--", *args],
        env=dict(os.environ, BENCH_TOKEN=token or ""), capture_output=True, text=True, timeout=seconds + 60)
    stop_profile()
    line = next((l for l in reversed(out.stdout.splitlines()) if l.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result: {out.stdout} {out.stderr}")
    result = json.loads(line)
    result["cpu_s"] = probe.cpu_seconds(pid) - cpu
    result["peak_rss_mib"] = memory_mib(pid, "VmHWM")
    return result


def bench(backend, coe, workdir, seconds):
    pg = probe.Postgres(workdir) if backend == "postgres" else None
    url = pg.url if pg else f"sqlite://{workdir}/coe.db"
    query = pg.query if pg else probe.sqlite_query(f"{workdir}/coe.db")
    server = probe.Server(coe, probe.env_for(workdir, url, {"COE_LOG_LEVEL": "warn",
                                                            "COE_AUTH_FAILED_TOKENS_PER_CLIENT": "1000000"}),
                          workdir)
    rows = []
    try:
        server.start()
        time.sleep(1)
        idle = memory_mib(server.proc.pid, "VmRSS")
        ingest = probe.token(server, "ingest")
        admin = probe.token(server, "admin")
        floor = wrk(server, "get.lua", "/healthz", 32, seconds, None)
        floor_rate = floor["requests"] / floor["seconds"]

        def row(name, result, per_request=1, unit="req/s"):
            if "not_new" in result:
                probe.check(result["not_new"] == 0,
                            f"{backend} {name}: every delivery stored as new ({result['not_new']} were not)")
            rate = result["requests"] / result["seconds"]
            rows.append((name, backend, f"{rate * per_request:,.0f} {unit}", f"{result['p50_ms']:.1f}",
                         f"{result['p99_ms']:.1f}", result["non2xx"] + result["errors"],
                         f"{result['peak_rss_mib']:.1f}", f"{result['cpu_s']:.1f}",
                         f"{rate / floor_rate:.2%}"))

        row("healthz (floor)", floor)
        row("ingest-single, 32 connections", wrk(server, "events.lua", "/api/v1/events", 32, seconds, ingest,
                                                  ["1", "0", "sev3", "single"], f"ingest-single.{backend}"), 1, "events/s")
        row("ingest-batch, 100 per delivery, 8 connections",
            wrk(server, "events.lua", "/api/v1/events", 8, seconds, ingest, ["100", "0", "sev3", "batch"],
                f"ingest-batch.{backend}"), 100, "events/s")
        row("storm: 100 groups at sev2 (drafts open), 16 connections",
            wrk(server, "events.lua", "/api/v1/events", 16, seconds, ingest, ["100", "100", "sev2", "storm"],
                f"storm.{backend}"), 100,
            "events/s")
        incidents = int(query("SELECT count(*) FROM incidents WHERE group_key LIKE 'g-%'")[0][0])
        drafts = int(query("SELECT count(*) FROM coes c JOIN incidents i ON c.incident_id = i.id "
                           "WHERE i.group_key LIKE 'g-%'")[0][0])
        probe.check(incidents == 100 and drafts == 100,
                    f"{backend} storm: exactly 100 incidents and 100 drafts ({incidents}, {drafts})")
        status, coe_doc = probe.http(server.port, "POST", "/api/v1/coes",
                                     {"title": "Bench COE", "owner": "lead@example.com"}, admin)
        probe.check(status == 201, f"a COE for the actions ({status})")
        row("create-actions, 16 connections",
            wrk(server, "actions.lua", "/api/v1/events", 16, seconds, admin, [coe_doc["id"]],
                f"create-actions.{backend}"))
        # create-actions queued an email to each new action's owner; they are delivered in the background.
        # Mixed is measured once they are out, not beside their delivery (bounded: 300 s).
        started, left, waiting = time.time(), None, None
        while time.time() - started < 300:
            status, page = probe.http(server.port, "GET", "/api/v1/outbox?limit=1", None, admin)
            if status == 200:
                waiting = page["counts"]["pending"] + page["counts"]["sending"]
                left = waiting if left is None else left
                if waiting == 0:
                    break
            time.sleep(0.2)
        drained = time.time() - started
        probe.check(waiting == 0, f"{backend}: the emails of create-actions delivered ({waiting} waiting)")
        rows.append((f"outbox: {left or 0:,} emails left after create-actions, delivered (file transport)", backend,
                     f"{(left or 0) / drained:,.0f} emails/s", "—", "—", "—", "—", "—", "—"))
        # Mixed: 20 COEs with a written section, 100 actions on them.
        coe_ids, action_ids = [], []
        for i in range(20):
            status, doc = probe.http(server.port, "POST", "/api/v1/coes",
                                     {"title": f"Mixed COE {i}", "owner": "lead@example.com"}, admin)
            coe_ids.append(doc["id"])
            for j in range(5):
                status, action = probe.http(server.port, "POST", f"/api/v1/coes/{doc['id']}/actions", {
                    "title": f"Mixed action {i}-{j}: alarm on pool saturation", "owner": f"owner{j}@example.com",
                    "due_date": time.strftime("%Y-%m-%d", time.gmtime(time.time() + 30 * 86400)),
                    "priority": "high", "kind": "detect", "success_criteria": "A page within 5 minutes"}, admin)
                action_ids.append(action["id"])
        mixed = wrk(server, "mixed.lua", "/", 200, seconds, admin, [",".join(coe_ids), ",".join(action_ids)],
                    f"mixed.{backend}")
        rate = mixed["requests"] / mixed["seconds"]
        probe.check(mixed["fivexx"] == 0, f"{backend} mixed: no 5xx ({mixed['fivexx']})")
        rows.append(("mixed, 200 connections (reads, section edits, transitions)", backend, f"{rate:,.0f} req/s",
                     f"{mixed['p50_ms']:.1f}", f"{mixed['p99_ms']:.1f}",
                     f"{mixed['fivexx']} 5xx, {mixed['errors']} dropped, {mixed['conflicts']} 409/412",
                     f"{mixed['peak_rss_mib']:.1f}", f"{mixed['cpu_s']:.1f}", f"{rate / floor_rate:.2%}"))
        # Writes that are kept: the mixed load's edits and transitions are mostly refused
        # (a stale version; `start` of an action already started).
        changed = wrk(server, "change.lua", "/", 16, seconds, admin, [",".join(action_ids)],
                      f"change-actions.{backend}")
        probe.check(changed["non2xx"] + changed["errors"] == 0,
                    f"{backend} change-actions: every change answered 200 "
                    f"({changed['non2xx']} other, {changed['errors']} dropped)")
        row("change-actions, 16 connections (PATCH, every one kept)", changed)
        rows.append(("idle, after start-up", backend, "—", "—", "—", "—", f"{idle:.1f} (RSS)", "—", "—"))
    finally:
        server.stop()
        if pg:
            pg.stop()
    return rows


def seed(backend, target, name, first, last):
    """Runs scripts/seed/NAME.BACKEND.sql for ids first..last."""
    with open(os.path.join(ROOT, "scripts", "seed", f"{name}.{backend}.sql")) as f:
        sql = f.read().replace(":first", str(first)).replace(":last", str(last))
    if backend == "postgres":
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", target], input=sql, text=True, check=True,
                       capture_output=True, timeout=900)
    else:
        import sqlite3
        db = sqlite3.connect(target, timeout=60)
        try:
            db.executescript(sql)
        finally:
            db.close()


def sizes(backend, coe, workdir, seconds):
    """overdue-query and sweep as the actions grow: 10,000, 100,000, 1,000,000."""
    pg = probe.Postgres(workdir) if backend == "postgres" else None
    url = pg.url if pg else f"sqlite://{workdir}/coe.db"
    env = probe.env_for(workdir, url, {"COE_LOG_LEVEL": "warn", "COE_REMINDERS_SEND_HOUR": "0"})
    server = probe.Server(coe, env, workdir)
    rows = []
    try:
        server.start()
        member = probe.token(server, "member")
        target = pg.url if pg else f"{workdir}/coe.db"
        seed(backend, target, "directory", 0, 0)
        done = 0
        for size in (10_000, 100_000, 1_000_000):
            started = time.monotonic()
            seed(backend, target, "actions", done, size - 1)
            done = size
            seeded = time.monotonic() - started
            result = wrk(server, "get.lua", "/api/v1/actions?overdue=true&limit=100", 8, seconds, member)
            rate = result["requests"] / result["seconds"]
            rows.append((f"overdue-query at {size:,} actions ({size // 10:,} overdue)", backend,
                         f"{rate:,.0f} req/s", f"{result['p50_ms']:.1f}", f"{result['p99_ms']:.1f}",
                         result["non2xx"] + result["errors"], f"{result['peak_rss_mib']:.1f}",
                         f"{result['cpu_s']:.1f}", "—"))
            started = time.monotonic()
            out = server.run("sweep", "--dry-run")
            took = time.monotonic() - started
            failed = "" if out.returncode == 0 else f": {out.stderr.strip()[-200:]}"
            probe.check(out.returncode == 0, f"{backend} sweep at {size:,}{failed}")
            decided = next((l for l in out.stdout.splitlines() if l.startswith("would queue")), "?")
            rows.append((f"sweep at {size:,} actions: {decided.split(';')[0]}", backend, f"{took:.2f} s", "—",
                         "—", "—", "—", "—", "—"))
    finally:
        server.stop()
        if pg:
            pg.stop()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coe", default=os.path.join(ROOT, "target/release/coe"))
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--no-sizes", action="store_true", help="skip overdue-query and sweep at 10k–1M")
    parser.add_argument("--perf", metavar="DIR",
                        help="record a profile of the server (perf, DWARF call graphs) per ingest scenario, create-actions and mixed into DIR")
    parser.add_argument("--perf-machine", action="store_true",
                        help="with --perf, record the whole machine instead (flat, `perf record -a`) per scenario")
    parser.add_argument("backends", nargs="*", default=["sqlite", "postgres"])
    args = parser.parse_args()
    global PERF_DIR, PERF_MACHINE
    PERF_DIR = args.perf
    PERF_MACHINE = args.perf_machine
    rows = []
    for backend in args.backends:
        with tempfile.TemporaryDirectory(prefix="coe-bench-") as workdir:
            os.chmod(workdir, 0o755)
            print(f"{backend} …", file=sys.stderr, flush=True)
            rows += bench(backend, args.coe, workdir, args.seconds)
        if not args.no_sizes:
            with tempfile.TemporaryDirectory(prefix="coe-bench-") as workdir:
                os.chmod(workdir, 0o755)
                print(f"{backend}: 10k, 100k, 1M actions …", file=sys.stderr, flush=True)
                rows += sizes(backend, args.coe, workdir, args.seconds)
    print(f"\n{os.cpu_count()} cores, loopback, wrk -t2 in the same machine, {args.seconds} s per scenario; "
          f"release build\n")
    print("| scenario | database | throughput | p50 ms | p99 ms | failed answers | peak RSS MiB | coe CPU s "
          "| requests vs healthz |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    sys.exit(1 if probe.failures else 0)


if __name__ == "__main__":
    main()
