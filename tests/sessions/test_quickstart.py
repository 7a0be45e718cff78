"""The README's quickstart runs and shows a conversation surviving a process restart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart.py"


def test_quickstart_remembers_the_conversation_across_processes(tmp_path: Path) -> None:
    db_path = tmp_path / "conversation.db"
    result = subprocess.run(
        [sys.executable, str(QUICKSTART), str(db_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "You told me earlier: 'My name is Ada.'" in result.stdout
    assert "remembered across the restart" in result.stdout
    assert db_path.exists()
