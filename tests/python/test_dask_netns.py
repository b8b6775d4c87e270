"""A multi-node rehearsal of gsort.dask on one machine: two "hosts" as
network namespaces, each with its own gsortd and a Dask worker (dask-worker,
GSORTD_SOCKET naming its own daemon), joined by veth pairs to a bridge in a
third namespace where the scheduler and the client run. Checks that a
DataFrame sort_values and an array sort/argsort across both workers are
right and that each daemon served sorts (its stats count them). Needs root
and `ip` (iproute2); where namespaces cannot be made it prints a TAP skip
with the reason. Run by tests/python/dask-netns.test; with --driver it is the
client inside the scheduler's namespace and prints one JSON line."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

# pytap.py is in tests/support/, beside this file's folder.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from pytap import Daemons, check, finish, ok

NET = "10.77.0."
PORT = 8786


def driver():
    """The client, in the scheduler's namespace: the sorts, and each
    worker's GSORTD_SOCKET by its address."""
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client

    import gsort.dask as gd
    out = {}
    with Client("tcp://%s1:%d" % (NET, PORT), timeout=60) as c:
        c.wait_for_workers(2, timeout=60)
        out["sockets"] = c.run(lambda: os.environ.get("GSORTD_SOCKET"))
        rng = np.random.default_rng(7)
        n = 40000
        pdf = pd.DataFrame({"k": rng.integers(-1000, 1000, n), "v": rng.standard_normal(n)})
        pdf.loc[rng.random(n) < 0.1, "v"] = np.nan
        ddf = dd.from_pandas(pdf, npartitions=8, sort=False)
        r = ddf.sort_values("k", sort_function=gd.sort_values).compute()
        out["frame"] = bool(r.equals(pdf.sort_values("k", kind="stable")))
        r = ddf.sort_values("v", ascending=False, na_position="first",
                            sort_function=gd.sort_values).compute()
        out["frame_nan"] = bool(r.equals(pdf.sort_values("v", ascending=False,
                                                         na_position="first", kind="stable")))
        a = rng.standard_normal(n).astype(np.float32)
        x = da.from_array(a, chunks=5000)
        out["sort"] = bool(np.array_equal(gd.sort(x).compute(), np.sort(a)))
        out["argsort"] = bool(np.array_equal(gd.argsort(x).compute(),
                                             np.argsort(a, kind="stable")))
        out["fell_back"] = c.run(lambda: sorted(__import__("gsort.dask").dask._warned))
    print(json.dumps(out), flush=True)


def ip(*args, ns=None):
    """Run ip (in namespace ns); CalledProcessError with its stderr."""
    argv = ["ip"] + (["netns", "exec", ns, "ip"] if ns else []) + list(args)
    subprocess.run(argv, check=True, capture_output=True, text=True)


def make_net(tag):
    """Namespaces s, a, b (names prefixed by tag): a bridge in s at .1, a
    veth from it to a (.2) and to b (.3). Returns {host: namespace}."""
    names = {h: tag + h for h in "sab"}
    for n in names.values():
        ip("netns", "add", n)
    s = names["s"]
    ip("link", "set", "lo", "up", ns=s)
    ip("link", "add", "br0", "type", "bridge", ns=s)
    ip("addr", "add", NET + "1/24", "dev", "br0", ns=s)
    ip("link", "set", "br0", "up", ns=s)
    for i, h in enumerate("ab"):
        near, far = tag + h + "0", tag + h + "1"
        ip("link", "add", near, "type", "veth", "peer", "name", far)
        ip("link", "set", near, "netns", s)
        ip("link", "set", far, "netns", names[h])
        ip("link", "set", near, "master", "br0", ns=s)
        ip("link", "set", near, "up", ns=s)
        ip("link", "set", "lo", "up", ns=names[h])
        ip("addr", "add", NET + "%d/24" % (i + 2), "dev", far, ns=names[h])
        ip("link", "set", far, "up", ns=names[h])
    return names


def drop_net(tag):
    for h in "sab":
        subprocess.run(["ip", "netns", "del", tag + h], capture_output=True)
    for h in "ab":  # a veth still in the root namespace after a failure
        subprocess.run(["ip", "link", "del", tag + h + "0"], capture_output=True)


def skip(why):
    print("1..0 # SKIP %s" % why, flush=True)
    sys.exit(0)


def main(tmp, daemons, procs, tag):
    if os.geteuid() != 0:
        skip("network namespaces need root")
    if shutil.which("ip") is None:
        skip("no ip command (install iproute2; tools/install-deps does)")
    try:
        ns = make_net(tag)
    except subprocess.CalledProcessError as e:
        skip("cannot make network namespaces here: %s: %s" % (" ".join(e.cmd),
                                                            (e.stderr or "").strip()))
    ok(True, "namespaces %s (scheduler), %s and %s (hosts) joined by a bridge" %
       (ns["s"], ns["a"], ns["b"]))
    py = sys.executable
    socks = {}
    for h in "ab":
        sock, log, _ = daemons.start(h, "-o", "devices=none",
                                     prefix=["ip", "netns", "exec", ns[h]])
        if not ok(sock is not None, "host %s: its gsortd serves" % h, open(log).read()):
            return
        socks[h] = sock
    sched = "tcp://%s1:%d" % (NET, PORT)
    logs = {}

    def spawn(name, argv):
        logs[name] = os.path.join(tmp, name + ".out")
        with open(logs[name], "w") as f:
            procs.append(subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL))

    spawn("scheduler", ["ip", "netns", "exec", ns["s"], py, "-m",
                        "distributed.cli.dask_scheduler", "--host", NET + "1", "--port",
                        str(PORT), "--no-dashboard"])
    for i, h in enumerate("ab"):
        spawn("worker-" + h, ["ip", "netns", "exec", ns[h], "env", "GSORTD_SOCKET=" + socks[h],
                              py, "-m", "distributed.cli.dask_worker", sched, "--host",
                              NET + "%d" % (i + 2), "--nthreads", "1", "--name", h,
                              "--no-dashboard"])
    sorts0 = {h: _sorts(socks[h]) for h in "ab"}
    d = subprocess.run(["ip", "netns", "exec", ns["s"], py, os.path.abspath(__file__),
                        "--driver"], capture_output=True, text=True, timeout=300)
    lines = [ln for ln in d.stdout.splitlines() if ln.startswith("{")]
    if not ok(d.returncode == 0 and lines, "the client in %s ran the sorts on the cluster"
              % ns["s"], d.stdout + d.stderr +
              "".join(open(f).read()[-3000:] for f in logs.values())):
        return
    r = json.loads(lines[-1])
    by_addr = {addr.split("//")[1].split(":")[0]: s for addr, s in r["sockets"].items()}
    ok(by_addr == {NET + "2": socks["a"], NET + "3": socks["b"]},
       "each worker (by its address) names its own host's gsortd", r["sockets"])
    ok(r["frame"] and r["frame_nan"], "DataFrame sort_values across both hosts equals pandas "
       "(int keys; float keys with NaNs first, descending)", r)
    ok(r["sort"] and r["argsort"], "gsort.dask.sort / argsort across both hosts equal numpy", r)
    ok(not any(r["fell_back"].values()), "no worker fell back to numpy", r["fell_back"])
    for h in "ab":
        check("host %s's gsortd served sorts (its stats count them)" % h,
              lambda: (_sorts(socks[h]) - sorts0[h] >= 8, (sorts0[h], _sorts(socks[h]))))


def _sorts(sock):
    import gsort
    with gsort.Client(sock) as c:
        return c.stats()["requests"]["by_op"]["sort"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--driver"]:
        driver()
        sys.exit(0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *a: sys.exit(1))
    tmp = tempfile.mkdtemp(prefix="gsort-netns.")
    daemons = Daemons(tmp)
    procs = []
    tag = "gsd%d" % (os.getpid() % 100000)
    try:
        main(tmp, daemons, procs, tag)
    except BaseException as e:
        if isinstance(e, SystemExit) and e.code == 0:
            raise
        ok(False, "the test program ran to the end", traceback.format_exc())
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        daemons.stop()
        for p in daemons.procs:
            ok(p.returncode == 0, "daemon pid %d stopped cleanly (rc %s)" % (p.pid, p.returncode))
        drop_net(tag)
        shutil.rmtree(tmp, ignore_errors=True)
    finish()
