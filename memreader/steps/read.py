"""Reading the call's input into windows: ``normalize``, ``parse``, ``window``, and the strategy
reader's ``strategy_window``.

===============  ===========================================  ===================  ==========
step             requires                                     produces             modes
===============  ===========================================  ===================  ==========
normalize        scene_data, type                             scenes               fast, fine
parse            scenes                                       units                fast, fine
window           scenes, units                                windows              fast, fine
===============  ===========================================  ===================  ==========

``strategy_window`` replaces ``window`` in the strategy reader: chats in groups of whole
messages (:mod:`memreader.windowing.grouping`), by the ``strategy`` settings of
:class:`StrategySettings`.
"""

from __future__ import annotations

import logging

from pydantic import Field

from memreader.config_model import ConfigModel
from memreader.documents import normalize_doc
from memreader.modes import SCENE_MODES
from memreader.pipeline import Step
from memreader.scenes.scene import Scene, normalize_chat
from memreader.steps.registry import STEPS
from memreader.steps.report import WindowReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState, WindowedScene
from memreader.windowing.grouping import GroupingConfig, group_windows
from memreader.windowing.parsers import part_notes, scene_units
from memreader.windowing.provenance import chunk_positions, heading_indexes, scene_digest
from memreader.windowing.windows import Check, Unit, Window, no_check

__all__ = ["Normalize", "Parse", "StrategySettings", "StrategyWindow", "WindowStep"]

logger = logging.getLogger(__name__)


@STEPS.register("normalize")
class Normalize(Step):
    """The caller's input as typed scenes (chat messages, or documents read within limits)."""

    name = "normalize"
    requires = ("scene_data", "type")
    produces = ("scenes",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if state.type == "chat":
            state.scenes = normalize_chat(state.scene_data)
        else:
            state.scenes = normalize_doc(state.scene_data, runtime.config)


@STEPS.register("parse")
class Parse(Step):
    """Each scene's parts as units of text, one parser per part type."""

    name = "parse"
    requires = ("scenes",)
    produces = ("units",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        units = []
        for scene in state.scenes:
            state.check_deadline(f"before parsing scene {scene.index}")
            units.append(scene_units(scene))
        state.units = units


@STEPS.register("window")
class WindowStep(Step):
    """Token-bounded, overlapping windows over each scene's units; one report entry each."""

    name = "window"
    requires = ("scenes", "units")
    produces = ("windows",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        windowed = []
        for scene, units in zip(state.scenes, state.units, strict=True):
            state.check_deadline(f"before cutting scene {scene.index} into windows")
            windows = self.windows_of(scene, units, runtime, check=state.check_deadline)
            reports = [
                WindowReport(scene.index, w.index, notes=part_notes(w, units)) for w in windows
            ]
            state.report.windows.extend(reports)
            windowed.append(
                WindowedScene(
                    scene,
                    units,
                    windows,
                    scene_digest(scene.type, units),
                    reports,
                    chunk_positions(windows, units, scene),
                    heading_indexes(units, scene),
                )
            )
        state.windows = windowed
        logger.debug(
            "%d scenes, %d windows", len(windowed), sum(len(ws.windows) for ws in windowed)
        )

    def windows_of(
        self, scene: Scene, units: list[Unit], runtime: ReaderRuntime, check: Check = no_check
    ) -> list[Window]:
        """The windows of one scene (a reader with another splitter overrides this); ``check``
        is the read's deadline, checked per message and per window inside one scene (one
        6 MB chat is one scene)."""
        return runtime.windower.windows(units, check)


class StrategySettings(ConfigModel):
    """What ``strategy_window`` reads: ``strategy``, how chats are grouped (see
    :class:`~memreader.windowing.grouping.GroupingConfig`). The strategy reader's config inherits
    it."""

    strategy: GroupingConfig = Field(default_factory=GroupingConfig)


@STEPS.register("strategy_window")
class StrategyWindow(WindowStep):
    """Chats in groups of whole messages (see :mod:`memreader.windowing.grouping`), documents by
    tokens as in the simple reader; one report entry per window."""

    def windows_of(
        self, scene: Scene, units: list[Unit], runtime: ReaderRuntime, check: Check = no_check
    ) -> list[Window]:
        if scene.type != "chat":
            return runtime.windower.windows(units, check)
        settings = runtime.settings(StrategySettings, "strategy_window")
        return group_windows(units, settings.strategy, runtime.windower, check)
