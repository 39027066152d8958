"""How a fine pass names its LLM profile in a config: ``fine.passes`` entries that are
``{name: <pass>, llm_profile: <profile>}`` mappings beside plain pass names.

:func:`split_pass_profiles` reads such entries into the plain list of names that ``passes``
holds and the ``pass_profiles`` mapping (pass -> profile) beside it, so the rest of memreader
sees one shape, and a dumped config reads back the same.

>>> split_pass_profiles({"passes": [{"name": "extract", "llm_profile": "fast"}, "filter"]})
{'passes': ['extract', 'filter'], 'pass_profiles': {'extract': 'fast'}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memreader.llms.config import check_profile_name

__all__ = ["split_pass_profiles"]


def split_pass_profiles(data: Any) -> Any:
    """``data`` (the raw ``fine`` settings) with its ``passes`` entries made plain names and
    the profiles they pick added to ``pass_profiles``; anything else as it is (the model's
    own checks then speak).

    Raises:
        ValueError: an entry is a mapping other than ``{name, llm_profile}``, a profile name
            is malformed, or a pass picks two profiles.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("passes"), list):
        return data
    names: list[Any] = []
    profiles: dict[str, str] = dict(data.get("pass_profiles") or {})
    for i, entry in enumerate(data["passes"]):
        if not isinstance(entry, Mapping):
            names.append(entry)
            continue
        unknown = sorted(set(entry) - {"name", "llm_profile"})
        if unknown or not isinstance(entry.get("name"), str):
            raise ValueError(
                f"passes[{i}]: a pass is its name or {{name: <pass>, llm_profile: <profile>}}"
                + (f"; unknown keys {unknown}" if unknown else "")
            )
        name = entry["name"]
        names.append(name)
        profile = entry.get("llm_profile")
        if profile is None:
            continue
        check_profile_name(profile)
        if profiles.get(name, profile) != profile:
            raise ValueError(f"passes[{i}]: pass {name!r} picks two LLM profiles")
        profiles[name] = profile
    split = {**data, "passes": names}
    if profiles or "pass_profiles" in data:  # a config that picks none keeps its shape
        split["pass_profiles"] = profiles
    return split
