"""The ways a Python user installs the package: pip from the source tree
(offline, --no-build-isolation, as docs/python.md says) and the
python3-pathlock Debian package. PATHLOCK_SOURCE_DIR and PATHLOCK_BUILD_DIR
(set by CTest) tell the test where the checkout and the build tree are;
the pip command sees neither.
Each installed copy is imported by a fresh interpreter that sees only it."""
import os
import shutil
import subprocess
import sys

SOURCE = os.environ.get("PATHLOCK_SOURCE_DIR", "")
BUILD = os.environ.get("PATHLOCK_BUILD_DIR", "")

SMOKE = """
import sys, pathlock
assert pathlock.__file__.startswith(sys.argv[1]), pathlock.__file__
e = pathlock.MemoryEngine()
g = e.acquire("ns", "alice", "delete_folder", {"target": "/p"})
assert g and not e.acquire("ns", "bob", "upload", {"target": "/p/x"})
assert e.release("ns", g.grant.id, g.grant.token)
assert hasattr(pathlock, "RedisEngine")
import os; assert os.path.exists(os.path.join(os.path.dirname(pathlock.__file__), "py.typed"))
print("ok")
"""


def _smoke(site):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = site
    out = subprocess.run([sys.executable, "-c", SMOKE, site], env=env, cwd="/", capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_pip_install_from_source_tree(tmp_path):
    # The documented command, `pip install --no-build-isolation ./clients/python`
    # run at the root of a clean clone: the files git tracks, copied with their
    # contents in this checkout. No pathlock variable is set (docs/python.md
    # gives none); PATHLOCK_JOBS is the documented one for the jobs, and ccache
    # (CMake's CMAKE_CXX_COMPILER_LAUNCHER, CCACHE_BASEDIR at the copy) makes
    # a second run fast.
    clone = tmp_path / "pathlock"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=SOURCE, check=True, capture_output=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = os.path.join(SOURCE, name)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(clone / name), exist_ok=True)
            shutil.copy2(src, clone / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATHLOCK_") and k != "PYTHONPATH"}
    env["PATHLOCK_JOBS"] = os.environ.get("PATHLOCK_JOBS", "2")
    if shutil.which("ccache"):
        env.update(CMAKE_CXX_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=str(tmp_path))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "--target", str(site), "./clients/python"], cwd=clone, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    _smoke(str(site))


def test_debian_package(tmp_path):
    deb = subprocess.run([os.path.join(SOURCE, "clients", "python", "make-deb.sh"), BUILD, str(tmp_path)], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert os.path.basename(deb).startswith("python3-pathlock_")
    fields = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Depends"], check=True, capture_output=True,
                            text=True).stdout
    assert "python3-pathlock" in fields and "libhiredis" in fields and "python3 (>=" in fields
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", deb, str(root)], check=True)
    _smoke(str(root / "usr" / "lib" / "python3" / "dist-packages"))
    with open(os.path.join(SOURCE, "LICENSE"), "rb") as f:
        assert (root / "usr" / "share" / "doc" / "python3-pathlock" / "copyright").read_bytes() == f.read()
