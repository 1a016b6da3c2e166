"""Shared by the consumer tests (tests/release/test_consumer_*.py): the
release folder (PATHLOCK_TEST_DIST, set by CTest: tests/release/README.md),
a fresh folder outside the checkout, the Debian package unpacked into it, and
an environment without the test wiring's variables."""
import glob
import os
import re
import subprocess
import tempfile

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def dist():
    d = os.environ.get("PATHLOCK_TEST_DIST")
    assert d, "PATHLOCK_TEST_DIST names the release folder (CTest sets it; tests/release/README.md)"
    assert os.path.isfile(os.path.join(d, "SHA256SUMS")), f"{d} holds no release (no SHA256SUMS)"
    return d


def release_folder(tmp_path_factory, script, timeout=600):
    """The release folder a consumer test installs from: PATHLOCK_TEST_DIST
    (CTest's fixture release_dist), else a temporary one that
    tools/release/<script> writes for this test alone."""
    d = os.environ.get("PATHLOCK_TEST_DIST")
    if not d:
        d = str(tmp_path_factory.mktemp("dist"))
        subprocess.run([os.path.join(ROOT, "tools", "release", script), d], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, timeout=timeout)
    return d


def empty_project_blocks(doc):
    """(language, code) of each fenced block in docs/<doc>'s section
    "From an empty project": the commands and programs a consumer test runs."""
    with open(os.path.join(ROOT, "docs", doc), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## From an empty project", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def fresh_folder(tag):
    """A new folder outside the checkout (and outside any build tree in it)."""
    path = os.path.realpath(tempfile.mkdtemp(prefix=f"pathlock-consumer-{tag}-"))
    assert not path.startswith(ROOT + os.sep), f"{path} lies inside the checkout"
    return path


def the_deb(d):
    debs = glob.glob(os.path.join(d, "pathlock_*.deb"))
    assert len(debs) == 1, f"expected one pathlock_*.deb in {d}, found {debs}"
    return debs[0]


def unpack_deb(deb, folder):
    """`dpkg-deb -x` into folder/root; returns the prefix folder/root/usr."""
    root = os.path.join(folder, "root")
    subprocess.run(["dpkg-deb", "-x", deb, root], check=True, timeout=120)
    return os.path.join(root, "usr")


def user_env(**extra):
    """The environment a user has: none of the test wiring's PATHLOCK_* variables,
    no prefix or pkg-config path of ours."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PATHLOCK_") and k not in ("CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "PYTHONPATH")}
    env.update(extra)
    return env
