"""The Node package used as a stranger uses it (docs/node.md, "From an empty project").

In a fresh folder outside the checkout: `npm init -y`, `npm install ioredis
<tarball>` (ioredis and TypeScript from the npm registry, or npm's cache),
then the doc's programs run against a real redis-server on a free loopback
port: `locks.mjs` (import) and `locks.cjs` (require) as the section shows
them, and the doc's TypeScript example compiled by the consumer's own `tsc`
as an ES module and as CommonJS against the package's shipped types. The
library is loaded the documented way (`load()` of the file inside the
package). No PATHLOCK_* variable reaches the consumer's programs.

The tarball: the one in PATHLOCK_TEST_DIST (a release's dist/ folder), else one
made by tools/release/node.sh into a temporary folder (it needs the C++
build's library: PATHLOCK_LIBRARY, as CTest sets it).
"""
import glob
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

from consumer_common import release_folder
from kitlib import RedisServer  # clients/kit, put on the path by conftest.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "node.md").read_text(encoding="utf-8")
NPM_FLAGS = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"]


def consumer_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATHLOCK_")}
    env.update(extra)
    return env


def run(args, cwd, env=None, timeout=180):
    proc = subprocess.run(args, cwd=cwd, env=env or consumer_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    dist = release_folder(tmp_path_factory, "node.sh", timeout=240)
    found = glob.glob(os.path.join(dist, "pathlock-*.tgz"))
    assert len(found) == 1, f"one pathlock-*.tgz expected in {dist}, found {found}"
    return found[0]


def start_redis():
    """A redis-server of the caller's own (the kit's RedisServer): yields its port, then stops it."""
    server = RedisServer()
    try:
        yield server.port
    finally:
        server.stop()


@pytest.fixture(scope="module")
def redis_url():
    for port in start_redis():
        yield f"redis://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def project(tarball):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="pathlock-node-consumer-"))
    assert not folder.resolve().is_relative_to(ROOT)
    try:
        run(["npm", "init", "-y"], cwd=folder)
        run(["npm", "install", *NPM_FLAGS, "ioredis", tarball], cwd=folder)
        run(["npm", "install", *NPM_FLAGS, "-D", "typescript", "@types/node"], cwd=folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def doc_js(name):
    blocks = re.findall(r"```js\n(// (\S+), run with:[^\n]*\n[\s\S]*?)```", DOC)
    found = [text for text, file in blocks if file == name]
    assert len(found) == 1, f"docs/node.md has one ```js block starting '// {name}, run with:'"
    return found[0]


def test_one_ioredis_the_applications(project):
    copies = sorted(str(p.relative_to(project)) for p in project.glob("node_modules/**/ioredis/package.json"))
    assert copies == ["node_modules/ioredis/package.json"], copies
    assert json.loads((project / "package.json").read_text())["dependencies"]["ioredis"]
    assert (project / "node_modules" / "pathlock" / "LICENSE").is_file()


@pytest.mark.parametrize("name", ["locks.mjs", "locks.cjs"])
def test_the_empty_project_programs_run(project, redis_url, name):
    (project / name).write_text(doc_js(name), encoding="utf-8")
    out = run(["node", name], cwd=project, env=consumer_env(REDIS_URL=redis_url), timeout=60)
    assert re.fullmatch(r"holding [0-9a-f]+ with fence \d+\n", out), out


RUNNERS = {
    "mts": "import { main } from './example.mjs';\nawait main(process.argv[2]);\n",
    "cts": "const { main } = require('./example.cjs');\nmain(process.argv[2]).catch((e) => { console.error(e); process.exit(1); });\n",
}


@pytest.mark.parametrize("kind", ["mts", "cts"])
def test_the_typescript_example_compiles_and_runs(project, redis_url, kind):
    blocks = re.findall(r"```ts\n([\s\S]*?)```", DOC)
    assert len(blocks) == 1, "docs/node.md has one ```ts example"
    folder = project / kind
    folder.mkdir(exist_ok=True)
    (folder / f"example.{kind}").write_text(blocks[0], encoding="utf-8")
    run([str(project / "node_modules" / ".bin" / "tsc"), "--module", "nodenext", "--target", "es2022", "--lib",
         "es2022,esnext.disposable", "--types", "node", "--strict", f"example.{kind}"], cwd=folder, timeout=120)
    runner = f"run.{kind[0]}js"
    (folder / runner).write_text(RUNNERS[kind], encoding="utf-8")
    out = run(["node", runner, redis_url], cwd=folder, timeout=60)
    lines = [re.sub(r"\d+", "N", line) for line in out.splitlines()]
    assert lines == [
        "refused by alice's move_folder (held_ancestor)",
        "moving with fence N",
        "dave gave up: AbortError",
    ], out


DISCOVERS = """import { Redis } from 'ioredis';
import { PathLock } from 'pathlock';
const redis = new Redis(process.argv[2], { autoResendUnfulfilledCommands: false });
const locks = new PathLock({ redis, namespace: 'cli-loaded' });
const grant = await locks.acquire({ owner: 'worker-1', op: 'upload', paths: ['/docs/a.txt'] });
console.log(`${(await locks.describe()).library} fence ${grant.fence} released ${await locks.release(grant.id, grant.token)}`);
await locks.close();
redis.disconnect();
"""


def test_a_server_where_only_redis_cli_loaded_the_library(project):
    """The doc's redis-cli line loads the packaged file; the client finds it."""
    lua = project / "node_modules" / "pathlock" / "library" / "pathlock_library.lua"
    for port in start_redis():
        with lua.open("rb") as text:
            loaded = subprocess.run(["redis-cli", "-p", str(port), "-x", "FUNCTION", "LOAD"], stdin=text,
                                    capture_output=True, text=True, timeout=30)
        assert loaded.returncode == 0 and loaded.stdout.startswith("pathlock_v4_"), loaded
        (project / "discover.mjs").write_text(DISCOVERS, encoding="utf-8")
        out = run(["node", "discover.mjs", f"redis://127.0.0.1:{port}"], cwd=project, timeout=60)
        assert re.fullmatch(rf"{loaded.stdout.strip()} fence \d+ released true\n", out), out
