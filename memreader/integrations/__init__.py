"""memreader inside the agent frameworks people use: one thin face per framework over
:class:`~memreader.front.memory.Memory` / :class:`~memreader.front.async_memory.AsyncMemory`,
each an extra of its own (``pip install '.[langgraph]'``) and imported only when used, so
``import memreader`` loads no framework.

Every adapter keeps the same promises: what it recalls says where it came from (the session,
message, speaker and span of each source), it is bound to the users its caller names (a
namespace or session that names another user is refused), and a failure is the framework's own
error type where it has one.
"""
