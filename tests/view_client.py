"""view_client.py — a running `memanalyze view` for the viewer's tests, and their check kit.

The view tests (test_view_server.py, test_view_window.py, test_view_stacks.py, test_view_inputs.py,
test_view_share.py and the browser ones) all start `memanalyze view INPUT... --port 0`, read the
one line it prints (`memanalyze view: http://127.0.0.1:PORT/?token=TOKEN`), ask its endpoints
with the token and a Host header, and stop it with a signal; this module does that once, as
tests/browser.py does the browser for them. Python 3 standard library only.

    v = ViewServer(MEM, [inp], env, cwd=tmp, url_wait_s=60)  # ViewStartError: no URL line
    v.url, v.token, v.port, v.host, v.process
    v.started, v.took                # the monotonic time it was started; seconds to the URL line
    status, headers, body = v.get("/api/summary", {"device": 0})   # headers' names lowercased
    doc = v.api("/api/summary")      # JSON; asserts 200 (a 503, the blocks index being built,
                                     # asked again first unless ViewServer(wait_built=False))
    rc, took, err = v.stop()         # SIGINT, then kill after stop_wait_s (rc None then)

Every request is a connection of its own (closed after the answer: no keep-alive; a test of
keep-alive opens its own), with an explicit Host (127.0.0.1:PORT unless host= says another; one
of None sends none) and the token as X-Token (token=None sends none, a string sends that one);
a test of malformed requests (no token, a foreign Host, other methods, a body) says so in get()'s
arguments. SizeCap is an on_response hook that holds every answer to the 256 KiB cap.

    checks = Checks()                # FAIL: lines on stderr, "%d failures" and the exit code
    check = checks.check
    ...
    return checks.finish("test_x: ok")
"""
import http.client
import json
import select
import signal
import subprocess
import sys
import time
from urllib.parse import urlencode

PREFIX = "memanalyze view: http://127.0.0.1:"  # also with --bind 0.0.0.0 (any address)


class ViewStartError(RuntimeError):
    """view printed no URL line: str() says so with its stderr; .stderr is that text alone."""

    def __init__(self, line, stderr):
        RuntimeError.__init__(self, "view printed no URL: %s%s" % (
            "%r " % line if line else "", stderr))
        self.line, self.stderr = line, stderr


class ViewServer:
    """`memanalyze view INPUTS... --port 0 ARGS...` started, its URL line parsed."""

    def __init__(self, mem, inputs, env, cwd=None, args=(), url_wait_s=120, timeout=60,
                 stop_wait_s=5, on_response=None, wait_built=True):
        """url_wait_s: how long to wait for the URL line; timeout: each request's socket
        timeout; on_response(path, status, headers, body): called on every answer;
        wait_built: api()'s default (a 503 asked again, or not)."""
        self.timeout, self.stop_wait_s, self.on_response = timeout, stop_wait_s, on_response
        self.wait_built = wait_built
        self.stopped = None
        self.started = t0 = time.monotonic()
        self.process = subprocess.Popen([mem, "view"] + list(inputs) + ["--port", "0"] +
                                        list(args), env=env, cwd=cwd, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.process.stdout], [], [], url_wait_s)
        line = self.process.stdout.readline() if ready else ""
        self.took = time.monotonic() - t0
        if not line.startswith(PREFIX):
            # An empty line at once is the end of its stdout: view is exiting, but may not be
            # reaped yet (poll() says None for a moment), so it is waited for, to read why.
            try:
                self.process.wait(timeout=10 if ready and not line else 0.1)
            except subprocess.TimeoutExpired:
                pass
            exited = self.process.poll() is not None
            err = ("exit %s: %s" % (self.process.returncode, self.process.stderr.read())
                   if exited else "(no line in %g s)" % url_wait_s)
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()
            self.process.stderr.close()
            raise ViewStartError(line, err)
        self.url = line.split(": ", 1)[1].strip()
        port, self.token = line[len(PREFIX):].strip().split("/?token=")
        self.port = int(port)
        self.host = "127.0.0.1:%d" % self.port

    def get(self, path, params=None, headers=None, token=True, host=True, method="GET",
            body=None, wait_built=False, on_503=None, tries=400):
        """(status, {lowercased header: value}, body bytes) of one request. params: a dict added
        to the path's query (urlencoded); headers: more headers (a value None: not sent);
        host: True for 127.0.0.1:PORT, None for no Host; wait_built: a 503 (the blocks
        index being built) asked again, tries requests at most, 50 ms apart, on_503(body) called
        on each 503 asked again."""
        if params:
            path += ("&" if "?" in path else "?") + urlencode(params)
        n = tries if wait_built else 1
        for i in range(n):
            status, h, data = self._request(path, headers, token, host, method, body)
            if status != 503 or i == n - 1:
                break
            if on_503:
                on_503(data)
            time.sleep(0.05)
        return status, h, data

    def _request(self, path, headers, token, host, method, body):
        h = {"Host": self.host if host is True else host}
        if token is True:
            h["X-Token"] = self.token
        elif token:
            h["X-Token"] = token
        h.update(headers or {})
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            if v is not None:
                c.putheader(k, v)
        c.endheaders(body.encode() if body else None)
        r = c.getresponse()
        data = r.read()
        c.close()
        h = dict((k.lower(), v) for k, v in r.getheaders())
        if self.on_response:
            self.on_response(path, r.status, h, data)
        return r.status, h, data

    def api(self, path, params=None, wait_built=None):
        """An endpoint's JSON; asserts 200 (wait_built: as get's; None: the server's default)."""
        status, _, data = self.get(path, params, wait_built=self.wait_built if wait_built is None
                                   else wait_built)
        assert status == 200, (path, status, data[:300])
        return json.loads(data)

    def stop(self, sig=signal.SIGINT, wait_s=None):
        """(exit status or None when it had to be killed, seconds to its end, its stderr); a
        second call answers the first's result."""
        if self.stopped:
            return self.stopped
        t = time.monotonic()
        self.process.send_signal(sig)
        try:
            rc = self.process.wait(timeout=self.stop_wait_s if wait_s is None else wait_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            rc = None
        took = time.monotonic() - t
        err = self.process.stderr.read()
        self.process.stdout.close()
        self.process.stderr.close()
        self.stopped = (rc, took, err)
        return self.stopped


def built_without_server(mem, env, inp="x"):
    """memanalyze's stderr when it was built without libmicrohttpd (the tests skip), else ""."""
    p = subprocess.run([mem, "view", inp, "--port", "0", "--bind", "not-an-address"], env=env,
                       capture_output=True, text=True, timeout=120)
    return p.stderr.strip() if "built without libmicrohttpd" in p.stderr else ""


class SizeCap:
    """An on_response hook: every answer at most cap bytes (a check, saying which path), the
    largest kept (.size, .path) for a test's timing line."""

    def __init__(self, check, cap=256 * 1024):
        self.check, self.cap, self.size, self.path = check, cap, 0, ""

    def __call__(self, path, status, headers, data):
        if len(data) > self.size:
            self.size, self.path = len(data), path
        self.check(len(data) <= self.cap, "%s: %d bytes, over 256 KiB" % (path, len(data)))


class Checks:
    """A test's failures: each printed as "FAIL: what" on stderr as it happens."""

    def __init__(self):
        self.failures = []

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what, file=sys.stderr)
        return cond

    def finish(self, ok_line):
        """The exit code: 1 after "N failures" on stderr, else 0 after ok_line."""
        if self.failures:
            print("%d failures" % len(self.failures), file=sys.stderr)
            return 1
        print(ok_line)
        return 0
