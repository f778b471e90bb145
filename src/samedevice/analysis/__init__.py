"""The source analysis that ``check``, ``explain`` and ``run`` share: one engine, three entry points.

- :mod:`.source` -- one parsed file: import aliases, qualified names, what its classes are;
- :mod:`.values` -- where tensors live, followed through one function at a time (the checker's
  value-origin rules run on it);
- :mod:`.reading` -- reading a file a traceback names, safely (never executed, size-capped,
  any encoding Python accepts), and mapping a path from another machine onto a checkout;
- :mod:`.culprit` -- from a failing statement and the error's facts (op, argument, devices) to
  the culprit expression, where its value was made, why the move missed it and the fix.

Nothing here imports torch, ``check``, ``explain`` or ``sim``: they import this package.
"""
