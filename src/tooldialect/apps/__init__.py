"""Applications on top of the handler: tools from Python functions, the agent loop, ``tooldialect
chat``, ``tooldialect serve`` and the command line. Nothing below imports from here."""
