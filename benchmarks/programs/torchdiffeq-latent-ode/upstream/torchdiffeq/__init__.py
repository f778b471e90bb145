from ._impl import odeint
from ._impl import odeint_adjoint
__version__ = "0.1.1"
