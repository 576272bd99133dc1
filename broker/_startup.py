"""Imported first by `python -m broker`, before anything imports kio.

kio registers a hypothesis strategy for each of its types whenever hypothesis can be
imported. The broker never uses them, but in a development environment (where hypothesis is
installed for the tests) that costs every broker start a fifth of its import time. Marking the
module absent makes kio skip it, as in an installation without the test extras.
"""

import sys

sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
