"""The multimodal structured reader: chats whose messages carry files, images, audio and tool
traffic, and documents from local paths, URLs and S3, read with the simple reader's promises.

>>> reader = MultiModalStructMemReader(MultiModalStructMemReaderConfig(embedder=None))
>>> print(reader.pipeline)  # doctest: +NORMALIZE_WHITESPACE
 1. normalize      scene_data, type -> scenes  [fast, fine]
 2. read_parts     scenes -> scenes, part_reads  [fast, fine]
 3. describe_images scenes, part_reads -> scenes, image_outcomes  [fine]
 4. parse          scenes -> units  [fast, fine]
 5. window         scenes, units -> windows  [fast, fine]
 6. note_parts     windows, part_reads -> windows  [fast, fine]
 7. fast_items     windows, info, custom_tags -> items, emitted  [fast]
 8. prepare_fine   windows, info, custom_tags -> fine_windows  [fine]
 9. refine_images  stored_items -> stored_items, image_refinements  [refine]
10. refine_input   stored_items, type, custom_tags -> fine_windows  [refine]
11. extract        fine_windows -> outcomes  [fine, refine]
12. filter         fine_windows, outcomes -> outcomes  [fine, refine]
13. rewrite        fine_windows, outcomes -> outcomes  [fine, refine]
14. fine_items     fine_windows, outcomes -> items, emitted  [fine, refine]
15. image_items    windows, items, emitted, image_outcomes -> items, emitted  [fine]
16. raw_file_items windows, items, emitted -> items, emitted  [fine]
17. refined_image_items fine_windows, items, emitted, image_refinements -> items, emitted  [refine]
18. tool_schema    windows, items, emitted -> items, emitted  [fine]
19. importance     items -> items  [fast]
20. dedup          emitted -> emitted  [fast, fine, refine]
21. embed          emitted -> items  [fast, fine, refine]
22. categorize     items -> items  [fast, fine, refine]
"""

from __future__ import annotations

from memreader.config import BaseReaderConfig
from memreader.pipeline import Pipeline
from memreader.readers.base import BaseMemReader, register_reader
from memreader.steps.images import DescribeImages, ImageItems
from memreader.steps.parts import NormalizeParts, NoteParts, PartsSettings, ReadParts
from memreader.steps.preset import default_steps
from memreader.steps.raw_files import RawFileItems
from memreader.steps.refine_images import RefineImages
from memreader.steps.refined_image_items import RefinedImageItems
from memreader.steps.state import INPUTS

__all__ = ["MultiModalStructMemReader", "MultiModalStructMemReaderConfig"]


class MultiModalStructMemReaderConfig(BaseReaderConfig, PartsSettings):
    """The multimodal reader's settings: those every reader shares, plus those of
    :class:`~memreader.steps.parts.PartsSettings` (``fetch``, ``images``, ``transcription``,
    ``strict_parts``, ``resource_cache_size``, ``base_dir``), how parts from outside the text
    are read.

    Local paths (in file parts and doc input) are read only with ``allow_local_paths``, under
    ``allowed_roots``, and hidden ones only with ``allow_hidden_files``, as in every reader.
    """


@register_reader("multimodal_struct")
class MultiModalStructMemReader(BaseMemReader):
    """Reads chats with files, images, audio and tool traffic, and documents from paths, URLs
    and ``s3://``: the simple reader's steps, with parts read from outside the text first (each
    in its place in its window), and in fine mode images described by ``image_parser_llm`` and
    each document chunk also kept as a chained ``RawFileMemory`` item. Refinement
    (``fine_transfer_simple_mem``) sends the images a stored item's sources name to
    ``image_parser_llm`` again (:mod:`memreader.steps.refine_images`)."""

    config_class = MultiModalStructMemReaderConfig

    @classmethod
    def default_pipeline(cls, config: BaseReaderConfig) -> Pipeline:
        """The simple reader's steps with the multimodal ones around them."""
        pipeline = Pipeline(
            default_steps(config.fine, categorize=config.categories.enabled), inputs=INPUTS
        )
        pipeline.replace("normalize", NormalizeParts())
        pipeline.insert_after("normalize", ReadParts())
        pipeline.insert_after("read_parts", DescribeImages())
        pipeline.insert_after("window", NoteParts())
        pipeline.insert_after("fine_items", ImageItems())
        pipeline.insert_after("image_items", RawFileItems())
        pipeline.insert_before("refine_input", RefineImages())
        pipeline.insert_after("raw_file_items", RefinedImageItems())
        return pipeline
