"""Drives VS Code (code-server, in headless Chromium) as a user would and checks what they see.

Run by run.sh, which starts code-server with the packaged extension installed and the workspace
from workspace/ copied to a scratch folder (the quick fix edits reduce.cu there).

Checks, in order (any failure: a screenshot, the reason, exit status 1):
  1. the workbench opens in Restricted Mode (the workspace is not trusted) with no error popup;
  2. reduce.cu: squiggles on the racy access `sdata[tid + s]` and on its partner `sdata[tid]`,
     both in the Problems panel with source cudarace and code data-race;
  3. the hover on `sdata[tid + s]` shows the witness table (thread A, thread B, cell), saying once
     that the witness depends on no unknown value;
  4. the quick-fix menu offers the verified `__syncthreads()` fix; applied, the squiggles go, and
     the saved file has the barrier indented like the loop body;
  5. divergent.cu: a barrier-divergence squiggle on `__syncthreads()`, with its hover;
  6. launch.cu: racy under any launch; `cudarace.blockDim: [64]` in the workspace settings makes it
     race-free, `[128]` makes it racy again with blockDim (128, 1, 1) in the witness.
Timings (ms) go to stdout and to SHOTS/timings.json.
"""

from __future__ import annotations

import argparse
import calendar
import json
import re
import sys
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

CHROMIUM = "/usr/bin/chromium"
# Generous: a debug server on a busy 2-core CI machine; polling ends as soon as the state is there.
LONG = 90_000
SHORT = 20_000


class Failure(Exception):
    pass


class Driver:
    def __init__(self, page: Page, shots: Path, workspace: Path):
        self.page = page
        self.shots = shots
        self.workspace = workspace
        self.timings: dict[str, float] = {}
        self.shot_count = 0
        self.opened_at: dict[str, float] = {}

    # --- helpers -------------------------------------------------------------------------------

    def shot(self, name: str) -> None:
        self.shot_count += 1
        path = self.shots / f"{self.shot_count:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        print(f"  screenshot {path.name}")

    def wait_for(self, what: str, predicate, timeout_ms: int = LONG, interval_s: float = 0.02):
        """Polls `predicate` until it returns a true value; returns it (fails after the timeout)."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise Failure(f"timed out after {timeout_ms / 1000:.0f} s waiting for {what}")
            time.sleep(interval_s)

    def editor(self):
        """The editor of the active editor group."""
        return self.page.locator(".editor-group-container.active .editor-instance .monaco-editor").first

    def open_file(self, name: str) -> float:
        """Opens a workspace file with Quick Open; returns the time the open was asked for."""
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("Control+P")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=SHORT)
        box.fill(name)
        row = self.page.locator(".quick-input-widget .monaco-list-row", has_text=name).first
        row.wait_for(state="visible", timeout=SHORT)
        started = time.monotonic()
        self.opened_at[name] = time.time()
        self.page.keyboard.press("Enter")
        self.page.locator(
            f".editor-group-container.active .tab.active[aria-label*='{name}']"
        ).wait_for(state="visible", timeout=SHORT)
        self.wait_for(f"{name} in the editor", lambda: self.token_rect("__global__") is not None, SHORT)
        return started

    def token_rect(self, text: str, occurrence: int = 0):
        """The on-screen box of `text` in the active editor (None if not rendered)."""
        return self.page.evaluate(
            """([text, occurrence]) => {
                const editor = document.querySelector(
                    '.editor-group-container.active .editor-instance .monaco-editor');
                if (!editor) return null;
                let seen = 0;
                const lines = [...editor.querySelectorAll('.view-lines .view-line')]
                    .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
                for (const line of lines) {
                    const content = line.textContent.replace(/\\u00a0/g, ' ');
                    if (content.trim().startsWith('//')) continue;  // comments mention the code
                    let at = content.indexOf(text);
                    while (at >= 0) {
                        if (seen++ === occurrence) {
                            // Walk the text nodes to the characters [at, at + text.length).
                            const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
                            const range = document.createRange();
                            let offset = 0, node, started = false;
                            while ((node = walker.nextNode())) {
                                const len = node.textContent.length;
                                if (!started && at < offset + len) {
                                    range.setStart(node, at - offset); started = true;
                                }
                                if (started && at + text.length <= offset + len) {
                                    range.setEnd(node, at + text.length - offset); break;
                                }
                                offset += len;
                            }
                            const r = range.getBoundingClientRect();
                            return {x: r.x, y: r.y, width: r.width, height: r.height};
                        }
                        at = content.indexOf(text, at + 1);
                    }
                }
                return null;
            }""",
            [text, occurrence],
        )

    def squiggles(self, kind: str = "warning"):
        """Boxes of the squiggles of a severity in the active editor."""
        return self.page.evaluate(
            """(kind) => {
                const editor = document.querySelector(
                    '.editor-group-container.active .editor-instance .monaco-editor');
                if (!editor) return [];
                return [...editor.querySelectorAll('.view-overlays .squiggly-' + kind)].map((e) => {
                    const r = e.getBoundingClientRect();
                    return {x: r.x, y: r.y, width: r.width, height: r.height};
                });
            }""",
            kind,
        )

    def squiggled(self, text: str, occurrence: int = 0, kind: str = "warning") -> bool:
        """Whether a squiggle underlines (most of) `text`."""
        token = self.token_rect(text, occurrence)
        if token is None:
            return False
        for s in self.squiggles(kind):
            same_line = s["y"] < token["y"] + token["height"] and token["y"] < s["y"] + s["height"]
            overlap = min(s["x"] + s["width"], token["x"] + token["width"]) - max(s["x"], token["x"])
            if same_line and overlap >= 0.8 * token["width"]:
                return True
        return False

    def hover(self, text: str, must_contain: str, occurrence: int = 0, timeout_ms: int = LONG):
        """Moves the mouse onto `text` until a hover holding `must_contain` shows; returns
        (its text, ms from the last move to the hover)."""
        hover = self.page.locator(".monaco-hover:not(.hidden)", has_text=must_contain).first
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            token = self.token_rect(text, occurrence)
            if token is None:
                raise Failure(f"`{text}` is not on screen")
            # Move away first: a hover only (re)starts when the mouse arrives.
            self.page.mouse.move(5, 5)
            self.page.keyboard.press("Escape")
            started = time.monotonic()
            self.page.mouse.move(token["x"] + token["width"] / 2, token["y"] + token["height"] / 2)
            try:
                hover.wait_for(state="visible", timeout=5_000)
                return hover.inner_text(), (time.monotonic() - started) * 1000
            except PlaywrightTimeout:
                if time.monotonic() > deadline:
                    raise Failure(f"no hover with {must_contain!r} on `{text}`")

    def problems_text(self) -> str:
        panel = self.page.locator(".markers-panel")
        if not panel.is_visible():
            self.page.keyboard.press("Control+Shift+M")
            panel.wait_for(state="visible", timeout=SHORT)
        return panel.inner_text()

    def error_popups(self) -> list[str]:
        toasts = self.page.locator(".notifications-toasts .notification-toast")
        texts = [toasts.nth(i).inner_text() for i in range(toasts.count())]
        return [t for t in texts if "cudarace" in t.lower() or "epipe" in t.lower()]

    def write_settings(self, settings: dict) -> None:
        folder = self.workspace / ".vscode"
        folder.mkdir(exist_ok=True)
        (folder / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")

    # --- the checks ----------------------------------------------------------------------------

    def workbench(self, url: str) -> None:
        print("1. workbench")
        started = time.monotonic()
        self.page.goto(url)
        self.page.locator(".monaco-workbench .part.statusbar").wait_for(state="visible", timeout=LONG)
        self.page.locator(".explorer-folders-view .monaco-list-row", has_text="reduce.cu").wait_for(
            state="visible", timeout=LONG
        )
        self.timings["workbench_ready_ms"] = (time.monotonic() - started) * 1000
        restricted = self.page.locator(".part.statusbar", has_text="Restricted Mode")
        restricted.wait_for(state="visible", timeout=SHORT)
        self.shot("workbench")

    def racy_file(self) -> None:
        print("2. reduce.cu: squiggles and Problems")
        started = self.open_file("reduce.cu")
        # A server that does not start shows an error popup: fail with it at once.
        self.wait_for("a squiggle in reduce.cu", lambda: self.squiggles() or self.no_error_popups(), LONG, 0.005)
        self.timings["open_to_first_squiggle_ms"] = (time.monotonic() - started) * 1000
        self.wait_for("the squiggle on `sdata[tid + s]`", lambda: self.squiggled("sdata[tid + s]"))
        self.wait_for("the squiggle on its partner `sdata[tid]`", lambda: self.squiggled("sdata[tid]", 1))
        self.timings["open_to_both_squiggles_ms"] = (time.monotonic() - started) * 1000
        if self.squiggled("sdata[tid]", 0):
            raise Failure("the store `sdata[tid] = in[...]` before the loop is underlined: it is not racy")
        self.shot("reduce-squiggles")
        problems = self.wait_for(
            "two data-race entries in the Problems panel",
            lambda: (t := self.problems_text()).count("data race on `sdata`") >= 2 and t,
            SHORT,
        )
        if "cudarace" not in problems or "data-race" not in problems:
            raise Failure(f"the Problems entries lack source cudarace / code data-race:\n{problems}")
        self.shot("problems")
        self.page.keyboard.press("Control+Shift+M")  # close the panel again

    def hover_witness(self) -> None:
        print("3. hover with the witness")
        text, ms = self.hover("sdata[tid + s]", "thread A")
        self.timings["hover_ms"] = ms
        for needed in ["data race", "thread B", "threadIdx", "cell", "sdata["]:
            if needed not in text:
                raise Failure(f"the hover lacks {needed!r}:\n{text}")
        table = self.page.locator(".monaco-hover:not(.hidden) table", has_text="thread A")
        if table.count() == 0:
            raise Failure(f"the witness is not shown as a table:\n{text}")
        said = text.count("depends on no unknown value")
        if said != 1:
            raise Failure(f"the hover says 'depends on no unknown value' {said} times:\n{text}")
        self.shot("hover")
        self.page.mouse.move(5, 5)
        self.page.keyboard.press("Escape")

    def quick_fix(self) -> None:
        print("4. the verified quick fix")
        token = self.token_rect("sdata[tid + s]")
        fix = self.page.locator(
            ".action-widget .monaco-list-row", has_text=re.compile(r"__syncthreads\(\).*verified")
        ).first
        started = time.monotonic()
        # The fix is offered once the server has re-checked the edited kernel: ask until it is there.
        while True:
            self.page.mouse.click(token["x"] + 2, token["y"] + token["height"] / 2)
            self.page.keyboard.press("Control+.")
            try:
                fix.wait_for(state="visible", timeout=3_000)
                break
            except PlaywrightTimeout:
                self.page.keyboard.press("Escape")
                if time.monotonic() - started > LONG / 1000:
                    raise Failure("the quick-fix menu never offered the verified __syncthreads() fix")
        self.timings["quick_fix_menu_ms"] = (time.monotonic() - started) * 1000
        self.shot("quick-fix-menu")
        title = fix.inner_text()
        # Select it with the arrow keys and apply it with Enter (the menu's pointer shield keeps
        # synthetic clicks off the rows).
        for _ in range(8):
            if "focused" in (fix.get_attribute("class") or ""):
                break
            self.page.keyboard.press("ArrowDown")
        else:
            raise Failure("could not select the verified fix in the quick-fix menu")
        clicked = time.monotonic()
        self.page.keyboard.press("Enter")
        self.wait_for("the inserted barrier", lambda: self.token_rect("__syncthreads();", 1) is not None, SHORT)
        self.wait_for("the squiggles to go", lambda: not self.squiggles(), LONG, 0.005)
        self.timings["fix_to_squiggles_gone_ms"] = (time.monotonic() - clicked) * 1000
        self.shot("fixed")
        self.page.keyboard.press("Control+S")
        path = self.workspace / "reduce.cu"
        saved = self.wait_for(
            "reduce.cu saved with the fix", lambda: (t := path.read_text()).count("__syncthreads();") == 2 and t, SHORT
        )
        lines = saved.splitlines()
        at = [i for i, l in enumerate(lines) if l.strip() == "__syncthreads();"][-1]
        indent = lambda l: len(l) - len(l.lstrip(" "))
        # The barrier closes the loop body: after the `if` block, before the loop's `}`.
        if lines[at - 1].strip() != "}" or lines[at + 1].strip() != "}":
            raise Failure(f"the barrier is not at the end of the loop body:\n{saved}")
        if indent(lines[at]) != indent(lines[at - 1]):
            raise Failure(
                f"the barrier is indented by {indent(lines[at])} spaces, the loop body by "
                f"{indent(lines[at - 1])}:\n{saved}"
            )
        print(f"  applied: {title.strip()}")

    def divergence(self) -> None:
        print("5. divergent.cu: barrier divergence")
        started = self.open_file("divergent.cu")
        self.wait_for("the squiggle on __syncthreads()", lambda: self.squiggled("__syncthreads()"), LONG, 0.005)
        self.timings["divergence_open_to_squiggle_ms"] = (time.monotonic() - started) * 1000
        text, _ = self.hover("__syncthreads()", "barrier divergence")
        if "thread (128" not in text and "128" not in text:
            raise Failure(f"the divergence hover does not name a thread that skips the barrier:\n{text}")
        self.shot("divergence-hover")
        self.page.mouse.move(5, 5)

    def setting(self) -> None:
        print("6. launch.cu: the cudarace.blockDim setting")
        self.open_file("launch.cu")
        access = "s[threadIdx.x % 64]"
        self.wait_for("the race under any launch", lambda: self.squiggled(access))
        changed = time.monotonic()
        self.write_settings({"cudarace.blockDim": [64]})
        self.wait_for("the race to go with blockDim [64]", lambda: not self.squiggles())
        self.timings["setting_to_squiggle_gone_ms"] = (time.monotonic() - changed) * 1000
        self.shot("blockdim-64")
        self.write_settings({"cudarace.blockDim": [128]})
        self.wait_for("the race to come back with blockDim [128]", lambda: self.squiggled(access))
        text, _ = self.hover(access, "blockDim = (128, 1, 1)")
        self.shot("blockdim-128-hover")
        print(f"  blockDim [128] witness: {' '.join(text.split())[:160]}")

    def breakdown(self, logs: Path) -> None:
        """Where the time from opening reduce.cu to its first squiggle went, from the logs: when the
        extension was activated (the extension host's log) and when the server had checked the file
        (the server's log, in the cudarace output channel). Negative: before the open."""
        opened = self.opened_at.get("reduce.cu")
        if opened is None:
            return
        for log in sorted(logs.glob("**/*exthost.log")):
            m = re.search(
                r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) .*_doActivateExtension cudarace\.cudarace.*activationEvent: '([^']*)'",
                log.read_text(errors="replace"),
                re.M,
            )
            if m:
                at = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000
                self.timings["open_to_activation_ms"] = (at - opened) * 1000
                self.timings["activation_event"] = m.group(3)
        for log in sorted(logs.glob("**/*cudarace.log")):
            text = log.read_text(errors="replace")
            m = re.search(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d+)Z\s+INFO .*checked file://\S*/reduce\.cu v1:", text, re.M)
            if m:
                at = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float("0." + m.group(2))
                self.timings["open_to_server_checked_ms"] = (at - opened) * 1000
            m = re.search(r"answered initialize (\d+) ms after it was started, (\d+) ms after activation", text)
            if m:
                self.timings["activation_to_server_ready_ms"] = float(m.group(2))

    def no_error_popups(self) -> bool:
        """Fails if cudarace (or the client) popped up an error; else False."""
        popups = self.error_popups()
        if popups:
            raise Failure("error notifications: " + " | ".join(popups))
        return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--workspace", required=True, type=Path)
    parser.add_argument("--shots", required=True, type=Path)
    parser.add_argument("--server", default="")
    parser.add_argument("--logs", type=Path, help="code-server's log folder (for the timing breakdown)")
    args = parser.parse_args()
    args.shots.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        driver = Driver(page, args.shots, args.workspace)
        try:
            driver.workbench(args.url)
            driver.no_error_popups()
            driver.racy_file()
            driver.hover_witness()
            driver.quick_fix()
            driver.divergence()
            driver.setting()
            driver.no_error_popups()
        except (Failure, PlaywrightTimeout) as e:
            try:
                driver.shot("FAILED")
            except Exception:  # noqa: BLE001 - the failure below is what matters
                pass
            print(f"vscode e2e FAILED: {e}", file=sys.stderr)
            popups = driver.error_popups()
            if popups:
                print("  notifications: " + " | ".join(popups), file=sys.stderr)
            return 1
        finally:
            browser.close()

    if args.logs is not None:
        driver.breakdown(args.logs)
    timings = {k: round(v) if isinstance(v, float) else v for k, v in driver.timings.items()}
    timings["server"] = args.server
    (args.shots / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    print("\ntimings (ms):")
    for k, v in timings.items():
        print(f"  {k:34} {v}")
    print("vscode e2e: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
