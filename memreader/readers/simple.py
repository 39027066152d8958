"""The simple structured reader: normalise, parse, window, then fast items or fine extraction
(extract, filter, rewrite), embedded.

>>> reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None))
>>> print(reader.pipeline)  # doctest: +NORMALIZE_WHITESPACE
 1. normalize      scene_data, type -> scenes  [fast, fine]
 2. parse          scenes -> units  [fast, fine]
 3. window         scenes, units -> windows  [fast, fine]
 4. fast_items     windows, info, custom_tags -> items, emitted  [fast]
 5. prepare_fine   windows, info, custom_tags -> fine_windows  [fine]
 6. refine_input   stored_items, type, custom_tags -> fine_windows  [refine]
 7. extract        fine_windows -> outcomes  [fine, refine]
 8. filter         fine_windows, outcomes -> outcomes  [fine, refine]
 9. rewrite        fine_windows, outcomes -> outcomes  [fine, refine]
10. fine_items     fine_windows, outcomes -> items, emitted  [fine, refine]
11. tool_schema    windows, items, emitted -> items, emitted  [fine]
12. importance     items -> items  [fast]
13. dedup          emitted -> emitted  [fast, fine, refine]
14. embed          emitted -> items  [fast, fine, refine]
15. categorize     items -> items  [fast, fine, refine]
>>> items = reader.get_memory([[{"role": "user", "content": "I love green tea."}]],
...                           type="chat", info={"user_id": "u1", "session_id": "s1"})
>>> items[0][0].memory
'user: I love green tea.'
"""

from __future__ import annotations

from memreader.config import BaseReaderConfig
from memreader.pipeline import Pipeline
from memreader.readers.base import BaseMemReader, register_reader
from memreader.steps.preset import default_steps
from memreader.steps.state import INPUTS

__all__ = ["SimpleStructMemReader", "SimpleStructMemReaderConfig"]


class SimpleStructMemReaderConfig(BaseReaderConfig):
    """The simple structured reader's settings (those every reader shares)."""


@register_reader("simple_struct")
class SimpleStructMemReader(BaseMemReader):
    """Reads chats and documents into memory items: one item per window in fast mode; in fine
    mode, the memories an LLM extracts from each window, checked against the source by the
    hallucination filter and made precise by the rewrite (each switchable in ``fine``)."""

    config_class = SimpleStructMemReaderConfig

    @classmethod
    def default_pipeline(cls, config: BaseReaderConfig) -> Pipeline:
        """The built-in steps, without ``filter``/``rewrite`` where ``fine`` turns them off."""
        return Pipeline(
            default_steps(config.fine, categorize=config.categories.enabled), inputs=INPUTS
        )
