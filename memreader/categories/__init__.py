"""Categories: memU's third layer. Each owner's items are linked to categories (personal info,
preferences, relationships, goals, work, ...), whose summaries evolve as items arrive and cite
the items they rest on; and the whole can be read as Markdown files by an agent.
"""
