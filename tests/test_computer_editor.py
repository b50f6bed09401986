"""The `edit` computer tool on a real folder: the four commands in the shape coding agents know, and no way out of
/workspace: not by ../, not by an absolute path, not by a symlink the agent made (to a host file or a folder
above), each refused as an error the agent reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evals_cli.computer.confined import PathRefused, Workspace
from evals_cli.computer.editor import EditRefused, edit


@pytest.fixture
def root(tmp_path: Path) -> Workspace:
    folder = tmp_path / "ws"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    return Workspace(folder)


def test_view_numbers_lines_and_lists_folders(root: Workspace) -> None:
    assert edit(root, {"command": "view", "path": "src/calc.py"}) == (
        "/workspace/src/calc.py:\n     1\tdef add(a, b):\n     2\t    return a - b\n     3\t")
    part = edit(root, {"command": "view", "path": "/workspace/src/calc.py", "view_range": [2, -1]})
    assert part.splitlines()[1:] == ["     2\t    return a - b", "     3\t"]
    assert "/workspace/src/calc.py" in edit(root, {"command": "view", "path": "/workspace"})
    with pytest.raises(EditRefused, match="view_range start 9"):
        edit(root, {"command": "view", "path": "src/calc.py", "view_range": [9, 10]})


def test_create_str_replace_and_insert(root: Workspace) -> None:
    folder = root.root
    assert edit(root, {"command": "create", "path": "pkg/new.py", "file_text": "x = 1\n"}).startswith("created")
    assert (folder / "pkg" / "new.py").read_text() == "x = 1\n"
    edit(root, {"command": "str_replace", "path": "src/calc.py", "old_str": "a - b", "new_str": "a + b"})
    assert "return a + b" in (folder / "src" / "calc.py").read_text()
    edit(root, {"command": "insert", "path": "src/calc.py", "insert_line": 0, "new_str": "# calc"})
    assert (folder / "src" / "calc.py").read_text().startswith("# calc\ndef add")
    with pytest.raises(EditRefused, match="not found"):
        edit(root, {"command": "str_replace", "path": "src/calc.py", "old_str": "a * b", "new_str": ""})
    (folder / "twice.py").write_text("a\na\n")
    with pytest.raises(EditRefused, match="occurs 2 times"):
        edit(root, {"command": "str_replace", "path": "twice.py", "old_str": "a", "new_str": "b"})
    assert (folder / "twice.py").read_text() == "a\na\n"  # refused: nothing written
    with pytest.raises(EditRefused, match="command must be one of"):
        edit(root, {"command": "delete", "path": "twice.py"})


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "/workspace/../etc/passwd", "src/../../x"])
def test_paths_out_of_the_workspace_are_refused(root: Workspace, path: str) -> None:
    with pytest.raises(PathRefused, match="outside /workspace"):
        edit(root, {"command": "create", "path": path, "file_text": "pwned"})
    assert not (root.root.parent / "outside.txt").exists() and not (root.root.parent / "x").exists()


def test_a_symlink_out_of_the_workspace_is_never_followed(root: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    os.symlink(secret, root.root / "leak")  # absolute: the host's path, which inside is no path of /workspace
    os.symlink("../..", root.root / "src" / "up")  # relative, climbing out
    os.symlink("/etc", root.root / "etc")
    for call in ({"command": "view", "path": "leak"},
                 {"command": "create", "path": "leak", "file_text": "overwritten"},
                 {"command": "view", "path": "src/up/secret.txt"},
                 {"command": "create", "path": "src/up/new.txt", "file_text": "x"},
                 {"command": "view", "path": "etc/passwd"}):
        with pytest.raises(PathRefused, match="symbolic link to .*outside /workspace"):
            edit(root, call)
    assert secret.read_text() == "host secret\n" and not (tmp_path / "new.txt").exists()


def test_a_symlink_inside_the_workspace_is_followed_as_the_sandbox_sees_it(root: Workspace) -> None:
    os.symlink("src/calc.py", root.root / "short.py")
    os.symlink("/workspace/src", root.root / "code")  # absolute, as written inside the sandbox
    assert "return a - b" in edit(root, {"command": "view", "path": "short.py"})
    edit(root, {"command": "str_replace", "path": "code/calc.py", "old_str": "a - b", "new_str": "a + b"})
    assert "a + b" in (root.root / "src" / "calc.py").read_text()
    assert (root.root / "short.py").is_symlink()  # the link itself is left as it was
