"""The built-in steps of a read, by what they do, and what they share (the engine that runs
them, :mod:`memreader.pipeline`, knows none of this).

==============  ============================================================================
module          steps
==============  ============================================================================
``read``        ``normalize``, ``parse``, ``window``, ``strategy_window``: input to windows
``fast``        ``fast_items``: one item per window
``fine``        ``prepare_fine``, ``extract``, ``filter``, ``rewrite``, ``fine_items``
``refine``      ``refine_input``: stored items as fine windows
``agent``       ``tool``, ``preference``, ``skill`` (extra LLM passes), ``pass_items``
``tool_schema`` ``tool_schema``: one item per distinct tool schema
``parts``       ``normalize_parts``, ``read_parts``, ``note_parts``: files, images, audio
``images``      ``describe_images``, ``image_items``
``raw_files``   ``raw_file_items``: document chunks kept verbatim
``importance``  ``importance``: fast mode's items scored by a stated heuristic
``embed``       ``embed``
``pii``         ``redact``: e-mail addresses, phone and card numbers masked
``filters``     ``min_length``
``preset``      :func:`~memreader.steps.preset.default_steps`: the readers' default list
==============  ============================================================================

What the steps share, beside them:

==============  ============================================================================
``state``       :class:`~memreader.steps.state.ReadState`: one call's typed fields, ``INPUTS``
``runtime``     :class:`~memreader.steps.runtime.ReaderRuntime`: config, windower, embedder, LLM
``chain``       :class:`~memreader.steps.chain.PerWindowStep`: consecutive ones run chained per
                window as LLM plans (the group their ``runs_with`` names)
``registry``    :data:`~memreader.steps.registry.STEPS`: steps by name, for YAML pipelines
``spec``        :func:`~memreader.steps.spec.apply_spec`: a config's ``pipeline`` changes applied
``report``      :class:`~memreader.steps.report.ReadReport`: what a call did
``items``       building items and their ids
==============  ============================================================================

The rules: a step reads and writes the typed fields of
:class:`~memreader.steps.state.ReadState`; it reads only the settings it needs, through
``runtime.settings(SomeSettings, name)`` where they are more than the base reader config's
(:class:`~memreader.steps.parts.PartsSettings`, :class:`~memreader.steps.read.StrategySettings`);
it never imports :mod:`memreader.readers`. Every step is registered by name in
:data:`~memreader.steps.registry.STEPS` (for YAML pipelines), and a fine pass also once in
:mod:`memreader.extraction.passes`.

This package imports nothing on its own: import the module you need.
"""
