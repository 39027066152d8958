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
 9. refine_input   stored_items, type, custom_tags -> fine_windows  [refine]
10. extract        fine_windows -> outcomes  [fine, refine]
11. filter         fine_windows, outcomes -> outcomes  [fine, refine]
12. rewrite        fine_windows, outcomes -> outcomes  [fine, refine]
13. fine_items     fine_windows, outcomes -> items, emitted  [fine, refine]
14. image_items    windows, items, emitted, image_outcomes -> items, emitted  [fine]
15. raw_file_items windows, items, emitted -> items, emitted  [fine]
16. tool_schema    windows, items, emitted -> items, emitted  [fine]
17. embed          emitted -> items  [fast, fine, refine]
"""

from __future__ import annotations

from pydantic import Field, field_validator

from memreader.config import BaseReaderConfig
from memreader.documents.sources_config import FetchConfig, ImageConfig, TranscriptionConfig
from memreader.pipeline import Pipeline
from memreader.pipeline.images import DescribeImages, ImageItems
from memreader.pipeline.parts import NormalizeParts, NoteParts, ReadParts
from memreader.pipeline.raw_files import RawFileItems
from memreader.pipeline.steps import default_steps
from memreader.readers.base import BaseMemReader, register_reader

__all__ = ["MultiModalStructMemReader", "MultiModalStructMemReaderConfig"]


class MultiModalStructMemReaderConfig(BaseReaderConfig):
    """The multimodal reader's settings: those every reader shares, plus

    - ``fetch``: downloads (timeouts, redirects, retries, the download budget, the private-address
      allow-list, ``direct_markdown_hostnames``, the S3 endpoint and ``s3.allow_buckets``, the
      buckets ``s3://`` in content may name: none by default); see
      :class:`~memreader.documents.sources_config.FetchConfig`.
    - ``images``: formats, byte and pixel limits, the longest side sent to a vision model, and
      whether fine mode describes images; see
      :class:`~memreader.documents.sources_config.ImageConfig`.
    - ``transcription``: an OpenAI-compatible ``/audio/transcriptions`` endpoint; without one,
      audio is kept as a placeholder and reported as unsupported.
    - ``strict_parts`` (``False``): raise the typed error of the first part that cannot be read
      instead of keeping a placeholder and reporting it.
    - ``resource_cache_size`` (256): converted documents, prepared images, transcripts and image
      descriptions kept by content hash across calls.
    - ``base_dir``: the folder relative local paths are resolved against, in chat parts and in
      doc input (default: the working directory); they must still lie under
      ``allowed_roots``. With local paths allowed, a doc input string that names an existing
      file under ``base_dir`` (``"ok.txt"``) is that file, read; any other string is text.

    Local paths (in file parts and doc input) are read only with ``allow_local_paths``, under
    ``allowed_roots``, and hidden ones only with ``allow_hidden_files``, as in every reader.
    """

    fetch: FetchConfig = Field(default_factory=FetchConfig)
    images: ImageConfig = Field(default_factory=ImageConfig)
    transcription: TranscriptionConfig | None = None
    strict_parts: bool = False
    resource_cache_size: int = Field(default=256, ge=1, le=100_000)
    base_dir: str | None = None

    @field_validator("base_dir")
    @classmethod
    def _check_base_dir(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "\0" in value):
            raise ValueError("base_dir must be a non-empty path")
        return value


@register_reader("multimodal_struct")
class MultiModalStructMemReader(BaseMemReader):
    """Reads chats with files, images, audio and tool traffic, and documents from paths, URLs
    and ``s3://``: the simple reader's steps, with parts read from outside the text first (each
    in its place in its window), and in fine mode images described by ``image_parser_llm`` and
    each document chunk also kept as a chained ``RawFileMemory`` item."""

    config_class = MultiModalStructMemReaderConfig

    @classmethod
    def default_pipeline(cls, config: BaseReaderConfig) -> Pipeline:
        """The simple reader's steps with the multimodal ones around them."""
        pipeline = Pipeline(default_steps(config.fine))
        pipeline.replace("normalize", NormalizeParts())
        pipeline.insert_after("normalize", ReadParts())
        pipeline.insert_after("read_parts", DescribeImages())
        pipeline.insert_after("window", NoteParts())
        pipeline.insert_after("fine_items", ImageItems())
        pipeline.insert_after("image_items", RawFileItems())
        return pipeline
