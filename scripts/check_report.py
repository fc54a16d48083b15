#!/usr/bin/env python3
"""Opens sluice HTML reports in headless Chromium and checks that they render.

For each report: a full-page screenshot goes to the given PNG path; every box (`section.box`) must have
ink (pixels that are not its white background) and every chart's SVG must have coloured pixels (the
data: axes and text are grey); the page must log no console error, throw no exception and request
nothing but the file itself. Prints one JSON line per report (the boxes found) and exits 1 on a failure.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: file descriptors 3
and 4), so nothing beyond Python's standard library and the browser is needed.

Usage: check_report.py CHROMIUM REPORT.html SCREENSHOT.png [REPORT.html SCREENSHOT.png]...
"""
import base64
import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-pipe",
]
WIDTH = 1000
# A box passes with at least this fraction of non-white pixels; a chart with this many coloured ones.
MIN_INK = 0.01
MIN_COLOURED = 8
# The boxes are checked on a half-scale capture: the same verdict, a quarter of the pixels to decode.
CHECK_SCALE = 0.5

BOXES_JS = """JSON.stringify({
  height: document.documentElement.scrollHeight,
  boxes: [...document.querySelectorAll('section.box')].map(box => {
    const rect = el => { const r = el.getBoundingClientRect(); return [r.x + scrollX, r.y + scrollY, r.width, r.height]; };
    const plot = box.querySelector('svg.plot');
    return {title: box.querySelector('h2').textContent, chart: box.classList.contains('chart'),
            box: rect(box), plot: plot ? rect(plot) : null};
  })})"""


class Chromium:
    """A headless Chromium and one page session, spoken to over the DevTools pipe."""

    def __init__(self, executable):
        self.profile = tempfile.mkdtemp(prefix="sluice-report-chromium-")
        to_read, to_write = (high_fd(fd) for fd in os.pipe())
        from_read, from_write = (high_fd(fd) for fd in os.pipe())

        def place_pipe():  # the child's ends at the descriptors Chromium expects
            os.dup2(to_read, 3)
            os.dup2(from_write, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=place_pipe, close_fds=False)
        os.close(to_read)
        os.close(from_write)
        self.out = os.fdopen(to_write, "wb")
        self.inp = os.fdopen(from_read, "rb")
        self.buffer = b""
        self.next_id = 0
        self.events = []
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]

    def send(self, method, session=None, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.out.write(json.dumps(message).encode() + b"\0")
        self.out.flush()
        return self.next_id

    def receive(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.inp.fileno(), 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=None, **params):
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        wanted = self.send(method, session, **params)
        while True:
            message = self.receive()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def page(self, method, **params):
        return self.call(method, self.session, **params)

    def wait_for(self, event):
        while True:
            found = [e for e in self.events if e["method"] == event]
            if found:
                self.events = [e for e in self.events if e["method"] != event]
                return found[0]
            message = self.receive()
            if "method" in message:
                self.events.append(message)

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def high_fd(fd):
    """Moves a descriptor above 4, so placing the child's ends at 3 and 4 cannot overwrite another."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def decode_png(data):
    """Width, height, channels and rows of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 4 if colour == 6 else 3
    raw, stride, rows = zlib.decompress(idat), width * channels, []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        unfilter(kind, row, previous, channels)
        rows.append(row)
        previous = row
    return width, height, channels, rows


def unfilter(kind, row, above, bpp):
    if kind == 1:
        for i in range(bpp, len(row)):
            row[i] = (row[i] + row[i - bpp]) & 255
    elif kind == 2:
        for i in range(len(row)):
            row[i] = (row[i] + above[i]) & 255
    elif kind == 3:
        for i in range(len(row)):
            left = row[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + ((left + above[i]) >> 1)) & 255
    elif kind == 4:
        for i in range(len(row)):
            a = row[i - bpp] if i >= bpp else 0
            b, c = above[i], above[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255


def count_pixels(image, rect):
    """Pixels in `rect` (page coordinates) that are not white, and those clearly coloured (not grey)."""
    width, height, channels, rows = image
    x0, y0 = int(rect[0] * CHECK_SCALE) + 1, int(rect[1] * CHECK_SCALE) + 1
    x1 = min(width, int((rect[0] + rect[2]) * CHECK_SCALE) - 1)
    y1 = min(height, int((rect[1] + rect[3]) * CHECK_SCALE) - 1)
    ink = coloured = total = 0
    for y in range(y0, y1):
        row = rows[y]
        for x in range(x0, x1):
            r, g, b = row[x * channels:x * channels + 3]
            total += 1
            if min(r, g, b) < 245:
                ink += 1
            if max(r, g, b) - min(r, g, b) > 60:
                coloured += 1
    return ink, coloured, max(total, 1)


def check(browser, report, screenshot):
    failures = []
    browser.events.clear()
    browser.page("Page.navigate", url="file://" + os.path.abspath(report))
    browser.wait_for("Page.loadEventFired")
    layout = json.loads(browser.page("Runtime.evaluate", expression=BOXES_JS, returnByValue=True)["result"]["value"])
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": layout["height"], "scale": 1}
    shot = browser.page("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
    with open(screenshot, "wb") as out:
        out.write(base64.b64decode(shot["data"]))
    small = browser.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip=dict(clip, scale=CHECK_SCALE))
    image = decode_png(base64.b64decode(small["data"]))
    if not layout["boxes"]:
        failures.append("no boxes")
    for box in layout["boxes"]:
        ink, _, total = count_pixels(image, box["box"])
        box["ink"] = round(ink / total, 4)
        if ink / total < MIN_INK:
            failures.append(f"box '{box['title']}' is blank")
        if box["chart"]:
            _, coloured, _ = count_pixels(image, box["plot"]) if box["plot"] else (0, 0, 1)
            box["coloured"] = coloured
            if coloured < MIN_COLOURED:
                failures.append(f"chart '{box['title']}' draws no data ({coloured} coloured pixels)")
    failures += page_errors(browser.events)
    print(json.dumps({"report": report, "boxes": [{k: b[k] for k in ("title", "ink", "coloured") if k in b}
                                                  for b in layout["boxes"]]}))
    return [f"{report}: {f}" for f in failures]


def page_errors(events):
    """Console errors, exceptions and any request for something other than the report itself."""
    errors = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            errors.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(f"console {params['type']}: {params.get('args')}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            errors.append(f"log error: {params['entry'].get('text')}")
        elif method == "Network.requestWillBeSent" and not params["request"]["url"].startswith("file:"):
            errors.append(f"external request: {params['request']['url']}")
    return errors


def main(argv):
    if len(argv) < 4 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    browser = Chromium(argv[1])
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.page(f"{domain}.enable")
        browser.page("Emulation.setDeviceMetricsOverride", width=WIDTH, height=800, deviceScaleFactor=1, mobile=False)
        failures = []
        for report, screenshot in zip(argv[2::2], argv[3::2]):
            failures += check(browser, report, screenshot)
    finally:
        browser.close()
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
