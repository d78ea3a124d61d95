"""Per-hop delivery guarantees (QoS 1-3) for zmtp sockets.

Implemented in a later issue on top of the extension points documented in ``docs/extensions.md``.
This package deliberately holds only its marker for now.
"""
