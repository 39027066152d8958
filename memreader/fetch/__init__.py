"""Fetching: every byte that comes from outside a call's input (http(s) URLs, S3 objects,
data URLs, local files named in parts or documents), within its settings and limits.

- :mod:`~memreader.fetch.fetcher`: the :class:`~memreader.fetch.fetcher.Fetcher`, one place
  for every reference a part can make (dispatch, the download budget, the counters) and the
  :class:`~memreader.fetch.fetcher.Fetched` it returns;
- :mod:`~memreader.fetch.http` and :mod:`~memreader.fetch.s3`: reading ``http(s)`` URLs and
  ``s3://`` objects;
- :mod:`~memreader.fetch.local_files`: which local files may be read
  (:class:`~memreader.fetch.local_files.DocumentAccess`, with the size limits of a document
  read), the path checks and the bounded read;
- :mod:`~memreader.fetch.data_urls`: the one decoder of ``data:`` URLs and bare base64;
- :mod:`~memreader.fetch.media_types`: names, types, extensions and safe labels of what is
  fetched;
- :mod:`~memreader.fetch.settings`: the settings of downloads and of S3.

What it may import: :mod:`memreader.transport` and the root leaves (errors, files,
config_model, secret_masking, _version); never :mod:`memreader.documents`,
:mod:`memreader.parts` or anything else above it, which all import it.

This package imports nothing on its own: import the module you need.
"""
