"""browser.py — a headless Chromium driven over the DevTools protocol, for the viewer's tests.

No driver and no package beyond Python's standard library: Chromium's `--remote-debugging-pipe`
speaks the DevTools protocol (JSON messages, each ended by a NUL byte) on file descriptors 3
(what Chromium reads) and 4 (what it writes), so a test needs neither chromedriver nor a
WebSocket client. Seen with Debian's chromium 156 (bookworm): the pipe, Target.attachToTarget
with flatten=true (commands to a page carry its sessionId), Runtime.exceptionThrown and
Runtime.consoleAPICalled for the page's errors.

    with Browser() as b:             # raises BrowserMissing when there is no chromium
        page = b.open(url)           # waits for the load event
        page.eval("document.title")  # a JSON value; a thrown error raises PageError
        page.screenshot(path)        # PNG
        b.errors                     # console errors and uncaught exceptions, as text
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


class BrowserMissing(Exception):
    """No chromium to run: a test skips, saying so."""


class PageError(Exception):
    """The page threw, or the protocol answered with an error."""


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    def __init__(self, browser, session):
        self.browser, self.session = browser, session

    def call(self, method, timeout=30, **params):
        return self.browser.call(method, session=self.session, timeout=timeout, **params)

    def eval(self, expression, timeout=30):
        """The value of a JavaScript expression (a promise is awaited), as JSON."""
        r = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text", "error")
            raise PageError(text)
        return r.get("result", {}).get("value")

    def wait_for(self, expression, timeout=30, poll=0.05):
        """Waits until the expression is truthy; returns its value."""
        end = time.monotonic() + timeout
        while True:
            v = self.eval(expression)
            if v:
                return v
            if time.monotonic() > end:
                raise PageError("timed out waiting for: " + expression)
            time.sleep(poll)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def mouse(self, kind, x, y, **extra):
        """One mouse event: kind 'mousePressed', 'mouseReleased', 'mouseMoved', 'mouseWheel'."""
        params = {"type": kind, "x": x, "y": y}
        if kind in ("mousePressed", "mouseReleased"):
            params.update(button="left", clickCount=1)
        params.update(extra)
        self.call("Input.dispatchMouseEvent", **params)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def wheel(self, x, y, delta_y):
        self.mouse("mouseWheel", x, y, deltaX=0, deltaY=delta_y)


class Browser:
    def __init__(self, width=1400, height=900):
        self.path = find_chromium()
        if not self.path:
            raise BrowserMissing("no chromium on PATH (Debian: apt-get install chromium)")
        self.size = (width, height)
        self.errors = []
        self.next_id = 0
        self.buf = b""
        self.events = []

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="gmt-chromium-")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        args = [self.path, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
                "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--user-data-dir=" + self.profile,
                "--window-size=%d,%d" % self.size, "about:blank"]

        def fds():  # Chromium reads fd 3 and writes fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds,
                                     pass_fds=(3, 4))  # kept after fds() made them
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.out, self.inp = to_chrome_w, from_chrome_r
        try:
            self.call("Target.getTargets", timeout=60)  # Chromium is up
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except Exception:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self.out, self.inp):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        import select
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PageError("chromium did not answer in time")
            ready, _, _ = select.select([self.inp], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise PageError("chromium closed the pipe (it crashed or exited)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def _note(self, msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: " + (d.get("exception", {}).get("description")
                                                or d.get("text", "?")))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append("log: %s %s" % (e.get("text", ""), e.get("url", "")))
        self.events.append(msg)

    def call(self, method, session=None, timeout=30, **params):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise PageError("%s: %s" % (method, m["error"].get("message")))
                return m.get("result", {})
            self._note(m)

    def wait_event(self, method, session, timeout=30):
        deadline = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session:
                del self.events[i]
                return m
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self._note(m)

    def open(self, url, timeout=30, init_script=None):
        """A new page at url, its load event awaited; init_script (JavaScript) runs in it before
        any of the page's own scripts."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            page.call(domain + ".enable")
        page.call("Emulation.setDeviceMetricsOverride", width=self.size[0],
                  height=self.size[1], deviceScaleFactor=1, mobile=False)
        if init_script:
            page.call("Page.addScriptToEvaluateOnNewDocument", source=init_script)
        page.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", session, timeout=timeout)
        return page
