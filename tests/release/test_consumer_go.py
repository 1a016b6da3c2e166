"""The Go client as a stranger adds it (docs/go.md "Install"): in a fresh
folder outside the checkout, a new Go module gets pathlock.dev/pathlock from
the release's module proxy folder (DIST/goproxy, tools/release/go.sh) with
nothing but the documented GOPROXY and GOSUMDB, no network and an empty module
cache, and the doc's example program runs against a real redis-server that
has no library until the client loads the release's .lua itself.

The release folder: $PATHLOCK_TEST_DIST when it names an
existing folder (the release_dist fixture, tests/release/README.md); else
tools/release/go.sh writes one into a temporary folder and the Functions
library CTest names ($PATHLOCK_LIBRARY) is copied to where tools/release.sh
puts it (redis/cloud-drive.lua).
"""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
MODULE = "pathlock.dev/pathlock"


def go_binary():
    found = shutil.which("go") or shutil.which("go", path="/usr/lib/go/bin")
    assert found, "the go command is missing (apt-get install golang-go)"
    return found


def fresh_folder(tag):
    path = pathlib.Path(tempfile.mkdtemp(prefix=f"pathlock-consumer-{tag}-")).resolve()
    assert ROOT not in path.parents, f"{path} lies inside the checkout"
    return path


@pytest.fixture(scope="module")
def dist():
    given = os.environ.get("PATHLOCK_TEST_DIST")
    if given and os.path.isdir(given):
        d = pathlib.Path(given)
        assert (d / "goproxy").is_dir(), f"{d} holds no goproxy/ (tools/release/go.sh)"
        yield d
        return
    library = os.environ.get("PATHLOCK_LIBRARY")
    assert library and os.path.isfile(library), \
        "without a release folder, PATHLOCK_LIBRARY names the built pathlock_library.lua (CTest sets it)"
    d = fresh_folder("go-dist")
    try:
        subprocess.run([str(ROOT / "tools/release/go.sh"), str(d)], check=True, timeout=120,
                       stdout=subprocess.DEVNULL)
        (d / "redis").mkdir()
        shutil.copyfile(library, d / "redis" / "cloud-drive.lua")
        yield d
    finally:
        shutil.rmtree(d)


def user_env(home, **extra):
    """A user's environment: a fresh HOME (so an empty module cache and
    build cache), none of the test wiring's PATHLOCK_* or Go variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PATHLOCK_", "GO", "CGO_"))}
    env.update(HOME=str(home), PATH=os.pathsep.join([os.path.dirname(go_binary()), env.get("PATH", "/usr/bin:/bin")]))
    env.update(extra)
    return env


def doc_example():
    """The program of docs/go.md "A complete example"."""
    doc = (ROOT / "docs/go.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```go\n(.*?)```", doc, re.S) if "package main" in b]
    assert len(blocks) == 1, "docs/go.md shows one complete program (package main)"
    assert f'"{MODULE}"' in blocks[0]
    return blocks[0]


def redis_cli(url, *args):
    return subprocess.run(["redis-cli", "-u", url, *args], check=True, capture_output=True, text=True,
                          timeout=10).stdout


def run(cmd, cwd, env, timeout=120):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def the_commands(dist, url):
    """The steps docs/go.md gives, as shell scripts around writing main.go."""
    before = ["go mod init example.com/mover", f"go get {MODULE}@v{VERSION}"]
    after = ["go vet .", "go run ."]
    env = {"GOPROXY": f"file://{dist}/goproxy", "GOSUMDB": "off", "PATHLOCK_REDIS_URL": url}
    return before, after, env


def test_go_get_from_the_proxy_folder_and_run_the_example(dist, redis_url):
    folder = fresh_folder("go")
    home, project = folder / "home", folder / "mover"
    home.mkdir()
    project.mkdir()
    before, after, extra = the_commands(dist, redis_url)
    env = user_env(home, **extra)
    try:
        assert "pathlock_v4_" not in redis_cli(redis_url, "FUNCTION", "LIST")
        for cmd in before:
            run(["sh", "-c", cmd], project, env)
        (project / "main.go").write_text(doc_example(), encoding="utf-8")
        out = ""
        for cmd in after:
            out = run(["sh", "-c", cmd], project, env).stdout
        assert "move /p/A/C -> /p/B: 200 moved" in out, out
        assert "move /p/A -> /p/A/C: 400 " in out, out
        # The client loaded the release's library itself; nothing stays held.
        assert "pathlock_v4_" in redis_cli(redis_url, "FUNCTION", "LIST")
        check_the_module(project, home, env)
    finally:
        subprocess.run([go_binary(), "clean", "-modcache"], cwd=project, env=env, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(folder)


def check_the_module(project, home, env):
    gomod = (project / "go.mod").read_text(encoding="utf-8")
    assert re.search(rf"^\s*(require\s+)?{re.escape(MODULE)} v{re.escape(VERSION)}( // indirect)?$", gomod, re.M), gomod
    assert "replace" not in gomod, gomod
    gosum = (project / "go.sum").read_text(encoding="utf-8")
    for needed in (MODULE, "github.com/gomodule/redigo", "github.com/mna/redisc"):
        assert f"{needed} " in gosum, f"go.sum lacks {needed}:\n{gosum}"
    # The license and the shipped matrix's library travel inside the module
    # (the example ran with pathlock.DefaultLibrary(), no PATHLOCK_LIBRARY).
    module_dir = home / "go" / "pkg" / "mod" / f"{MODULE}@v{VERSION}"
    assert (module_dir / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    library = (module_dir / "library" / "pathlock_library.lua").read_text(encoding="utf-8")
    assert library.startswith("#!lua name=pathlock_v4_"), library[:80]
    listed = run(["go", "list", "-m", "-f", "{{.Path}} {{.Version}} {{.Dir}}", "all"], project, env).stdout
    assert str(ROOT) not in listed, listed
