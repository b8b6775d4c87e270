"""What the Python tests share (tests/python/test_python.py, test_dask.py,
test_dask_netns.py): TAP output (ok, check, finish) and real gsortd
daemons on temporary sockets (Daemons), an environment variable set for a
while (env_set). Imported from tests/python/, whose scripts put this
folder (tests/support/) first on sys.path."""

import contextlib
import os
import subprocess
import sys
import time
import traceback

GSORTD = os.environ.get("GSORTD", "daemon/gsortd")
PCACHE = os.environ.get("GSORT_PCACHE", "tests/pcache")

_n = 0
_failed = 0


@contextlib.contextmanager
def env_set(name, value):
    """os.environ[name] = value inside the block, put back after it."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def ok(cond, desc, diag=None):
    global _n, _failed
    _n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", _n, desc), flush=True)
    if not cond:
        _failed += 1
        if diag:
            for line in str(diag).splitlines():
                print("# " + line)
    return cond


def check(desc, fn):
    """ok() on fn()'s truth; an exception is a failure with its traceback.
    fn may return (truth, diagnostic)."""
    try:
        r = fn()
    except Exception:
        return ok(False, desc, traceback.format_exc())
    if isinstance(r, tuple):
        return ok(r[0], desc, r[1])
    return ok(bool(r), desc)


def finish():
    """Print the plan and exit 1 when a check failed."""
    print("1..%d" % _n, flush=True)
    sys.exit(1 if _failed else 0)


class Daemons:
    """gsortd processes started in directory tmp (an empty config, their
    own database and socket each, the test suite's program cache)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.conf = os.path.join(tmp, "empty.conf")
        open(self.conf, "w").close()

    def start(self, name, *opts, prefix=()):
        """(socket, log, Popen) of a new daemon, once it serves; socket is
        None when it did not come up in 60 s. prefix: argv to run it under
        (ip netns exec NS)."""
        sock = os.path.join(self.tmp, name + ".sock")
        log = os.path.join(self.tmp, name + ".log")
        argv = list(prefix) + [GSORTD, "--config", self.conf, "--socket", sock,
                               "--db", os.path.join(self.tmp, name + ".db"),
                               "-o", "cache_dir=" + PCACHE] + list(opts)
        # under the sanitizers (tests/support/pyenv.sh): the daemon keeps
        # the run's ASan options, without the interpreter's preload
        env = None
        asan = os.environ.get("GSORT_TEST_DAEMON_ASAN_OPTIONS")
        if asan is not None:
            env = dict(os.environ, ASAN_OPTIONS=asan)
            env.pop("LD_PRELOAD", None)
        with open(log, "w") as lf:
            p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env)
        self.procs.append(p)
        for _ in range(600):
            if os.path.exists(sock) and "serving on" in open(log).read():
                return sock, log, p
            if p.poll() is not None:
                break
            time.sleep(0.1)
        return None, log, p

    def stop(self):
        """Stop every daemon (SIGTERM, then SIGKILL after 20 s)."""
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
