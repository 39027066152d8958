"""How one call runs, whatever layer it is in: the deadline that stops its work and the
observers (hooks) that watch it without ever breaking it.

This package imports nothing on its own: import the module you need.
"""
