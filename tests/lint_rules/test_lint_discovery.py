"""Which files are linted: .gitignore, exclude, default skips, symlinks, missing paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lint_rules.engine.discovery import DiscoveryError, Scope, discover


def _names(paths: list[Path], root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for path in paths]


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def test_walk_finds_python_files_only(tmp_path: Path) -> None:
    _touch(tmp_path, "a.py", "b.pyi", "notes.txt", "pkg/c.py")

    assert _names(discover([tmp_path], tmp_path, []), tmp_path) == ["a.py", "b.pyi", "pkg/c.py"]


def test_gitignore_entries_are_skipped(tmp_path: Path) -> None:
    _touch(tmp_path, "keep.py", "build/out.py", "scratch_1.py")
    (tmp_path / ".gitignore").write_text("build/\nscratch_*.py\n")

    assert _names(discover([tmp_path], tmp_path, []), tmp_path) == ["keep.py"]


def test_nested_gitignore_can_re_include(tmp_path: Path) -> None:
    _touch(tmp_path, "gen/a.py", "gen/keep.py")
    (tmp_path / ".gitignore").write_text("gen/*.py\n")
    (tmp_path / "gen" / ".gitignore").write_text("!keep.py\n")

    assert _names(discover([tmp_path], tmp_path, []), tmp_path) == ["gen/keep.py"]


def test_parent_gitignore_applies_when_walking_a_subdirectory(tmp_path: Path) -> None:
    _touch(tmp_path, "src/a.py", "src/generated/b.py")
    (tmp_path / ".gitignore").write_text("generated/\n")

    assert _names(discover([tmp_path / "src"], tmp_path, []), tmp_path) == ["src/a.py"]


def test_exclude_patterns_are_relative_to_the_root(tmp_path: Path) -> None:
    _touch(tmp_path, "docs/ja/a.py", "docs/en/b.py")

    found = discover([tmp_path], tmp_path, ["docs/ja/**"])

    assert _names(found, tmp_path) == ["docs/en/b.py"]


def test_exclude_applies_to_an_explicit_file(tmp_path: Path) -> None:
    _touch(tmp_path, "docs/ja/a.py")

    assert discover([tmp_path / "docs/ja/a.py"], tmp_path, ["docs/ja/**"]) == []


def test_explicit_file_without_a_suffix_is_linted_one_of_another_suffix_skipped(
    tmp_path: Path,
) -> None:
    _touch(tmp_path, "script", "tool.pyw", "README.md", "notes.TXT")
    skipped: list[Path] = []
    named = [tmp_path / name for name in ("script", "tool.pyw", "README.md", "notes.TXT")]

    found = discover(named, tmp_path, [], skipped=skipped)

    assert _names(found, tmp_path) == ["script", "tool.pyw"]
    assert skipped == [tmp_path / "README.md", tmp_path / "notes.TXT"]


def test_virtualenv_and_vcs_directories_are_not_walked(tmp_path: Path) -> None:
    _touch(tmp_path, ".venv/lib/x.py", ".git/hooks/y.py", "__pycache__/z.py", "a.py")

    assert _names(discover([tmp_path], tmp_path, []), tmp_path) == ["a.py"]


def test_symlink_loop_ends_and_each_directory_is_walked_once(tmp_path: Path) -> None:
    _touch(tmp_path, "pkg/a.py")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path / "self")

    assert _names(discover([tmp_path], tmp_path, []), tmp_path) == ["pkg/a.py"]


def test_symlinked_directory_outside_the_tree_is_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _touch(outside, "b.py")
    root = tmp_path / "root"
    root.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)

    assert _names(discover([root], root, []), root) == ["linked/b.py"]


def test_missing_path_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryError, match=r"nowhere\.py: no such file or directory"):
        discover([tmp_path / "nowhere.py"], tmp_path, [])


def test_file_named_twice_is_linted_once(tmp_path: Path) -> None:
    _touch(tmp_path, "a.py")
    relative = Path(os.path.relpath(tmp_path / "a.py"))

    assert len(discover([tmp_path / "a.py", relative, tmp_path], tmp_path, [])) == 1


def _scope_of(projects: dict[Path, list[str]]) -> Scope:
    """The scope of nested projects: a directory's is its nearest project's."""

    def scope(directory: Path) -> tuple[Path, list[str]]:
        root = max((root for root in projects if directory.is_relative_to(root)), key=len_of)
        return root, projects[root]

    def len_of(path: Path) -> int:
        return len(path.parts)

    return scope


def test_each_directory_uses_the_exclude_of_its_own_project(tmp_path: Path) -> None:
    _touch(tmp_path, "gen/a.py", "inner/gen/b.py", "inner/keep/c.py", "inner/out/d.py", "e.py")
    scope = _scope_of({tmp_path: ["gen/", "inner/out/"], tmp_path / "inner": ["keep/"]})

    found = discover([tmp_path], Path("/unused"), ["*"], scope)

    # Outer `gen/` is relative to the outer root, so `inner/gen/` is kept; what is inside
    # `inner/` is governed by the inner project, so the outer's `inner/out/` does not
    # reach it, but the inner's `keep/` does.
    assert _names(found, tmp_path) == ["e.py", "inner/gen/b.py", "inner/out/d.py"]


def test_outer_project_can_exclude_a_nested_project_whole(tmp_path: Path) -> None:
    _touch(tmp_path, "inner/a.py", "b.py")
    scope = _scope_of({tmp_path: ["inner/"], tmp_path / "inner": []})

    assert _names(discover([tmp_path], tmp_path, [], scope), tmp_path) == ["b.py"]


def test_explicit_file_uses_the_exclude_of_its_own_project(tmp_path: Path) -> None:
    _touch(tmp_path, "inner/keep/c.py", "keep/c.py")
    scope = _scope_of({tmp_path: [], tmp_path / "inner": ["keep/"]})

    found = discover([tmp_path / "inner/keep/c.py", tmp_path / "keep/c.py"], tmp_path, [], scope)

    assert _names(found, tmp_path) == ["keep/c.py"]
