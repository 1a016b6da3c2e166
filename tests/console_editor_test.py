#!/usr/bin/python3
"""The console's matrix editor in a real browser (docs/console.md#tests).

Starts `pathlock console` (embedded backend, the shipped matrix) and drives
Debian's headless chromium through chromium-driver with python3-selenium:
- the grid shows every cell with the original labels; a click shows the
  cell's explanation;
- changing one verdict asks for a reason and credits it to that verdict
  only (origin "owner" on it, the others keep the original grid's); the
  edited text differs from the opened file in that cell's line only; the
  cell reads in words beside its notation; and the page's diff names
  exactly that change, line for line what `pathlock matrix diff` says of
  the downloaded file;
- two operations added with symbols mark every new rule for review, the
  grid still fits a 1600 px window, and the downloaded JSON passes
  `pathlock matrix lint` unchanged;
- "try it" runs a scenario under both matrices;
- an uploaded invalid file lists its problems linked to their cells, and
  hostile matrix text shows literally without running.
Screenshots go to --out. Waits are for DOM states, never for a time.

usage: console_editor_test.py --pathlock BIN --matrix SHIPPED.json --out DIR
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from browser import run, chromium, start_console, wait_until  # noqa: E402

from selenium.webdriver.common.by import By  # noqa: E402

HOSTILE = "<img src=x onerror=window.__pwned=1>"


def cells(d):
    return len(d.find_elements(By.CSS_SELECTOR, "#ed-table td.cell"))


def cell(d, held, requested):
    return d.find_element(By.CSS_SELECTOR, f"#ed-table td.cell[data-held='{held}'][data-requested='{requested}']")


def texts(d, selector):
    return d.execute_script("return [...document.querySelectorAll(arguments[0])].map(e => e.textContent);", selector)


def checked(d, before):
    """Waits for the next answer of /api/matrix/check (the JSON view changes)."""
    return wait_until("the check", lambda: d.find_element(By.ID, "ed-json").get_attribute("textContent") != before)


def json_text(d):
    return d.find_element(By.ID, "ed-json").get_attribute("textContent")


def add_operation(d, name, roles, symbols, label):
    before = json_text(d)
    for field, value in [("add-op", name), ("add-roles", roles), ("add-symbols", symbols), ("add-label", label)]:
        d.find_element(By.ID, field).send_keys(value)
    d.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
    checked(d, before)


def pathlock(binary, *args, ok=(0,)):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    assert r.returncode in ok, (args, r.returncode, r.stdout, r.stderr)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pathlock", required=True)
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    downloads = tempfile.mkdtemp(prefix="pathlock-editor-")
    shipped = json.load(open(a.matrix, encoding="utf-8"))
    n = len(shipped["operations"])

    console = start_console(a.pathlock, "--matrix", a.matrix)
    d = chromium(downloads=downloads)
    try:
        d.get(console)
        d.find_element(By.ID, "tab-matrix").click()
        wait_until("the grid", lambda: cells(d) == n * n)
        # The original labels head the rows and columns.
        labels = texts(d, "#ed-table thead th.col .label")
        assert labels == [op.get("label") or op["op"] for op in shipped["operations"]], labels
        # A click shows the cell's explanation (the same text as `pathlock matrix explain`).
        cell(d, "move_file", "move_file").click()
        explain = wait_until("the explanation", lambda: d.find_element(By.ID, "ed-explain").text)
        cli = pathlock(a.pathlock, "matrix", "explain", a.matrix, "move_file", "move_file").stdout
        assert explain.split("\n")[1].strip() in cli, (explain, cli)

        # Change one verdict: create held, upload requested, on the same path.
        cell(d, "create", "upload").click()
        button = wait_until("the verdicts", lambda: d.find_elements(
            By.CSS_SELECTOR, "#ed-cell button.verdict[data-role='target'][data-requested-role='target'][data-relation='same']"))[0]
        was = button.text.split()[-1]
        assert was == "allow", button.text  # the shipped grid: creating beside a creation is fine
        button.click()  # allow -> deny
        apply = d.find_element(By.ID, "ed-apply")
        assert not apply.is_enabled(), "a change must ask for a reason"
        d.find_element(By.ID, "ed-reason").send_keys("two creations of one name race")
        before = json_text(d)
        d.find_element(By.ID, "ed-apply").click()
        checked(d, before)
        doc = json.loads(json_text(d))
        rule = doc["grid"]["create"]["upload"]
        rule = rule.get("target", rule)
        # The reason goes to the changed verdict only; the rest stays the original grid's.
        assert rule["origin"] == "grid", rule
        assert rule["relation"]["same"] == {"verdict": "deny", "origin": "owner",
                                            "decision": "two creations of one name race"}, rule
        explain = wait_until("the new explanation", lambda: [
            l.strip() for l in d.find_element(By.ID, "ed-explain").text.splitlines() if "vs requested" in l])
        assert explain == ["held target vs requested target, on the same path: deny (owner's rule: two creations of "
                           "one name race)",
                           "held target vs requested target, requested inside the held path, requested on an ancestor "
                           "of the held path: allow (the original grid)"], explain
        # In words, beside the notation.
        words = texts(d, "#ed-words li")
        assert words == ["a held create blocks a requested upload at the same path; allows it below and above"], words
        assert texts(d, "#ed-notation .piece-owner"), texts(d, "#ed-notation .piece")
        # The edited text keeps the opened file's layout: only the cell's line differs.
        orig, now = open(a.matrix, encoding="utf-8").read().split("\n"), json_text(d).split("\n")
        assert len(orig) == len(now), (len(orig), len(now))
        changed = [i for i in range(len(orig)) if orig[i] != now[i]]
        assert len(changed) == 1 and '"create": {' in orig[changed[0] - 1] and '"upload": {' in now[changed[0]], changed
        diff = wait_until("the diff", lambda: texts(d, "#ed-diff li"))
        change = "changed: create.target held, upload.target requested, on the same path: allow -> deny (stricter)"
        assert change in diff, diff
        assert sum(line.startswith("changed:") for line in diff) == 1, diff
        d.save_screenshot(os.path.join(a.out, "editor-cell.png"))

        # A two-role cell: one (held role, requested role, relation) changed
        # becomes a rule by requested role and relation; still valid, one more line.
        cell(d, "move_folder", "move_file").click()
        sel = "#ed-cell button.verdict[data-role='src'][data-requested-role='dst'][data-relation='held_ancestor']"
        button = wait_until("the verdicts", lambda: d.find_elements(By.CSS_SELECTOR, sel))[0]
        was = button.text.split()[-1]
        now = {"allow": "deny", "deny": "unrelated", "unrelated": "allow"}[was]
        button.click()
        d.find_element(By.ID, "ed-reason").send_keys("moving a file into a folder being moved")
        before = json_text(d)
        d.find_element(By.ID, "ed-apply").click()
        checked(d, before)
        wait_until("a valid file", lambda: d.find_elements(By.CSS_SELECTOR, "#ed-lint p.ok"))
        diff = wait_until("the diff", lambda: [l for l in texts(d, "#ed-diff li") if l.startswith("changed:")])
        assert len(diff) == 2, diff
        assert any(l.startswith("changed: move_folder.src held, move_file.dst requested, requested inside the held "
                                f"path: {was} -> {now}") for l in diff), diff
        rule = json.loads(json_text(d))["grid"]["move_folder"]["move_file"]["src"]
        assert rule["origin"] == "grid" and "requested_role" in rule, rule
        assert rule["requested_role"]["dst"]["relation"]["held_ancestor"] == {
            "verdict": now, "origin": "owner", "decision": "moving a file into a folder being moved"}, rule

        # Two operations, each rule marked for review; the grid fits 1600 px.
        add_operation(d, "share_link", "target", "A", "分享 share")
        add_operation(d, "archive", "src,dst", "A,B", "归档 archive")
        wait_until("the bigger grid", lambda: cells(d) == (n + 2) * (n + 2))
        width = d.execute_script("return [document.documentElement.scrollWidth,"
                                 " document.getElementById('ed-table').getBoundingClientRect().right];")
        assert width[0] <= 1600 and width[1] <= 1600, width
        review = d.find_elements(By.CSS_SELECTOR, "#ed-table td.cell .piece-review")
        assert len(review) == 2 * (2 * (n + 2)) - 4, len(review)  # two rows and two columns, less the overlap
        warnings = d.find_elements(By.CSS_SELECTOR, "#ed-lint li.warn.link")
        assert warnings, "review warnings are listed and linked to their cells"
        warnings[0].click()
        wait_until("the linked cell", lambda: d.find_elements(By.CSS_SELECTOR, "#ed-table td.cell.selected"))
        diff = texts(d, "#ed-diff li")
        assert "added operation: share_link" in diff and "added operation: archive" in diff, diff
        # Every new rule is listed in words: the new codes against every code, both ways.
        codes = sum(len(op["roles"]) for op in shipped["operations"])
        added = [line for line in diff if line.startswith("added: ")]
        assert len(added) >= (codes + 3) ** 2 - codes ** 2, (len(added), codes)
        assert all(("share_link." in line or "archive." in line) for line in added), added
        # New symbols, not role names, in the new rows.
        row = texts(d, "#ed-table td.cell[data-held='archive'] .piece-owner")
        assert len(row) == n + 2 and all(t.startswith(("{A", "{B")) for t in row), row

        # Bump the version: the version problem goes away.
        assert d.find_elements(By.ID, "ed-version-problem")
        version = d.find_element(By.ID, "ed-version")
        version.clear()
        before = json_text(d)
        version.send_keys("1.1.0\n")
        checked(d, before)
        wait_until("no version problem", lambda: not d.find_elements(By.ID, "ed-version-problem"))
        d.execute_script("window.scrollTo(0, 0);")
        d.save_screenshot(os.path.join(a.out, "editor-grid.png"))

        # Download: lints unchanged, and `matrix diff` says what the page said.
        d.find_element(By.ID, "ed-download").click()
        name = os.path.basename(a.matrix)
        path = os.path.join(downloads, name)
        wait_until("the download", lambda: os.path.exists(path) and not os.path.exists(path + ".crdownload"))
        pathlock(a.pathlock, "matrix", "lint", path)
        assert json.load(open(path, encoding="utf-8")) == json.loads(json_text(d))
        page_diff = texts(d, "#ed-diff li")
        cli_diff = pathlock(a.pathlock, "matrix", "diff", a.matrix, path).stdout.splitlines()
        assert page_diff[1:] == cli_diff[1:], (page_diff, cli_diff)

        # Try it: the same scenario under both matrices.
        scenario = "alice create /p/x\nbob upload /p/x\ncarol share_link /q\n"
        box = d.find_element(By.ID, "try-text")
        box.clear()
        box.send_keys(scenario)
        d.find_element(By.CSS_SELECTOR, "#try-form button[type=submit]").click()
        rows = wait_until("the results", lambda: d.find_elements(By.CSS_SELECTOR, "#try-table tr"))
        outcome = lambda r, c: rows[r].find_elements(By.TAG_NAME, "td")[c].find_element(By.TAG_NAME, "b").text
        assert outcome(2, 2) == "granted" and outcome(2, 3) == "refused", rows[2].text  # the changed cell
        assert "two creations of one name race" in rows[2].text
        assert outcome(3, 2) == "error" and outcome(3, 3) == "granted", rows[3].text  # share_link is new
        d.save_screenshot(os.path.join(a.out, "editor-try.png"))

        # An uploaded file with a bad verdict and hostile text.
        bad = json.loads(open(a.matrix, encoding="utf-8").read())
        bad["operations"][0]["label"] = HOSTILE
        bad["grid"]["delete_file"]["copy_file"] = "alow"
        bad_path = os.path.join(downloads, "bad.json")
        json.dump(bad, open(bad_path, "w", encoding="utf-8"), ensure_ascii=False)
        d.find_element(By.ID, "ed-upload").send_keys(bad_path)
        problems = wait_until("the problems", lambda: d.find_elements(By.CSS_SELECTOR, "#ed-lint li.bad"))
        cli_problems = pathlock(a.pathlock, "matrix", "lint", bad_path, ok=(1,)).stderr.splitlines()
        assert len(problems) == len(cli_problems), (texts(d, "#ed-lint li.bad"), cli_problems)
        problems[0].click()
        sel = wait_until("the problem's cell", lambda: d.find_elements(By.CSS_SELECTOR, "#ed-table td.cell.selected"))
        assert (sel[0].get_attribute("data-held"), sel[0].get_attribute("data-requested")) == ("delete_file", "copy_file")
        assert "alow" in sel[0].text  # an invalid file's cells show as written
        d.save_screenshot(os.path.join(a.out, "editor-problems.png"))
        # Fix the cell in the editor: the file is valid, the hostile label shows literally, nothing ran.
        raw = wait_until("the cell's JSON", lambda: d.find_elements(By.ID, "ed-raw"))[0]
        raw.clear()
        raw.send_keys(json.dumps(shipped["grid"]["delete_file"]["copy_file"]))
        d.find_element(By.ID, "ed-raw-apply").click()
        wait_until("the hostile label", lambda: HOSTILE in texts(d, "#ed-table thead th.col .label"))
        wait_until("a valid file", lambda: d.find_elements(By.CSS_SELECTOR, "#ed-lint p.ok"))
        assert d.execute_script("return window.__pwned === undefined && document.querySelectorAll('img').length === 0;")
    finally:
        d.quit()
    print("console editor test: ok; screenshots in", a.out)


if __name__ == "__main__":
    run(main)
