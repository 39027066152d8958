"""The command-line tests' fixtures: ``where``, a store URL (no file yet) and a reader config
with the ``hash`` embedder, for the store commands."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


@pytest.fixture
def where(tmp_path: Path) -> tuple[str, str]:
    """A store URL (no file yet) and a reader config with the hash embedder."""
    config = tmp_path / "hash.yaml"
    config.write_text(
        yaml.safe_dump({"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}})
    )
    return f"sqlite:///{tmp_path / 'm.db'}", str(config)
