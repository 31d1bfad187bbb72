"""The asyncio streams calls under their former module name: :mod:`pgmbus.streams.client_async`.

``from pgmbus.streams import aclient`` and ``pgmbus.streams.aclient.publish`` keep working; the
functions are those of ``client_async`` (the same objects).
"""

from pgmbus.streams.client_async import *  # noqa: F403
from pgmbus.streams.client_async import __all__ as __all__
