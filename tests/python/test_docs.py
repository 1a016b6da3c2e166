"""README.md's Python example runs as written (as the C++ example is built
by packaging_consumers)."""
import os
import re


def test_readme_python_example_runs():
    with open(os.path.join(os.environ["PATHLOCK_SOURCE_DIR"], "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1
    scope = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)
    engine = scope["engine"]
    assert engine.list("project-42") == []  # released on exit
